"""Training and evaluation loops for Boolean CRQs: an RNN on postfix tokens, a causal transformer on node tokens
with or without chain of thought.

Yehudai, Amsel & Bruna, arXiv 2503.01544: RNNs (Sec. 4) read the serialised tree and need Theta(log n) state in a
suitable (heavy-first) order; transformers (Sec. 3) need depth growing with the tree; with chain of thought (Sec. 5)
a fixed-depth transformer writes the internal nodes' answers one per token. The paper has no experiments; the loops
here (fresh formulas every step, Adam, cross-entropy on the root answer or on every trace token) are ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.data.crq import (
    TOK_FALSE,
    TOK_TRUE,
    boolean_labels,
    cot_trace,
    node_token_vocab,
    node_tokens,
    postfix_tokens,
    sample_forest,
)
from theorylab.nn.rnn import StackedGRU
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.theory.crq import boolean_values

Progress = Callable[[Iterable[int], str], Iterable[int]]


@dataclass(frozen=True)
class FormulaBatch:
    """Boolean formulas ready for a model: ``tokens`` (B, T) int64, ``root`` (B,) bool, ``trace`` (B, I) CoT
    tokens (node-token tasks only)."""

    tokens: np.ndarray
    root: np.ndarray
    trace: np.ndarray | None = None


def sample_formulas(
    family: str,
    n: int,
    count: int,
    rng: np.random.Generator,
    *,
    task: str = "postfix",
    order: str = "heavy_first",
    balanced: bool = False,
) -> FormulaBatch:
    """``count`` random Boolean formulas on ``family`` trees with ``n`` leaves, as postfix tokens in ``order``
    (``task='postfix'``, the RNN input) or as node tokens with their CoT trace (``task='nodes'``, the transformer
    input). ``balanced``: exactly half True roots, by rejection sampling (extra formulas are drawn and the surplus
    of the majority answer is dropped), so chance accuracy is 0.5."""
    if task not in ("postfix", "nodes"):
        raise ValueError(f"unknown task '{task}'; allowed: postfix, nodes")
    if balanced and count % 2:
        raise ValueError(f"balanced batches need an even count; got {count}")
    parts: list[FormulaBatch] = []
    need = {True: count // 2, False: count // 2} if balanced else None
    while True:
        draw = count if not balanced else max(2 * max(need.values()) + 16, 32)
        forest = sample_forest(family, n, draw, rng)
        labels = boolean_labels(forest, rng)
        values = boolean_values(forest, labels)
        root = values[:, 0]
        rows = np.arange(draw)
        if balanced:
            keep = np.concatenate([rows[root == v][: need[v]] for v in (True, False)])
            keep.sort()
            for v in (True, False):
                need[v] -= int((root[keep] == v).sum())
            rows = keep
        sub = forest.take(rows)
        sub_labels = type(labels)(labels.op_or[rows], labels.negated[rows], labels.assignment[rows])
        if task == "postfix":
            parts.append(FormulaBatch(postfix_tokens(sub, sub_labels, order, rng), root[rows]))
        else:
            parts.append(
                FormulaBatch(node_tokens(sub, sub_labels, order), root[rows], cot_trace(sub, values[rows], order))
            )
        if not balanced or not any(need.values()):
            break
    if len(parts) == 1:
        return parts[0]
    width = max(p.tokens.shape[1] for p in parts)
    if any(p.tokens.shape[1] != width for p in parts):
        raise ValueError("rejection rounds produced different token widths (mixed node counts); use a binary family")
    return FormulaBatch(
        np.concatenate([p.tokens for p in parts]),
        np.concatenate([p.root for p in parts]),
        None if parts[0].trace is None else np.concatenate([p.trace for p in parts]),
    )


def _as_tensor(x: np.ndarray, device: torch.device | str) -> Tensor:
    return torch.as_tensor(x, dtype=torch.int64, device=device)


def _fresh_batch_adam(
    model: nn.Module,
    draw: Callable[[int], FormulaBatch],
    loss_of: Callable[[FormulaBatch, slice], Tensor],
    *,
    steps: int,
    batch: int,
    lr: float,
    chunk_steps: int,
    label: str,
    check: Callable[[str, Tensor, int], None] | None,
    progress: Progress | None,
) -> list[float]:
    """Adam with a fresh batch every step: ``draw`` is called once per ``chunk_steps`` steps for that many batches
    (generation stays vectorised) and ``loss_of(chunk, rows)`` gives the loss of one batch's rows. Every step's
    loss is returned; ``check`` sees each (a NaN marks the run diverged at that step)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    model.train()
    chunk = None
    for step in range(steps) if progress is None else progress(range(steps), f"train {label}"):
        i = step % chunk_steps
        if i == 0:
            chunk = draw(min(chunk_steps, steps - step) * batch)
        loss = loss_of(chunk, slice(i * batch, (i + 1) * batch))
        if check is not None:
            check(f"{label} loss", loss, step)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


def train_rnn(
    model: nn.Module,
    draw: Callable[[int], FormulaBatch],
    *,
    steps: int,
    batch: int = 64,
    lr: float = 3e-3,
    chunk_steps: int = 250,
    device: torch.device | str = "cpu",
    check: Callable[[str, Tensor, int], None] | None = None,
    progress: Progress | None = None,
) -> list[float]:
    """Adam on the root answer (2-way cross-entropy on the final state), a fresh batch of formulas every step.

    ``draw(k)`` returns k new formulas; it is called once per ``chunk_steps`` steps (k = chunk_steps * batch), so
    generation stays vectorised. Returns every step's loss."""

    def loss_of(fb: FormulaBatch, rows: slice) -> Tensor:
        return F.cross_entropy(model(_as_tensor(fb.tokens[rows], device)), _as_tensor(fb.root[rows], device))

    return _fresh_batch_adam(
        model,
        draw,
        loss_of,
        steps=steps,
        batch=batch,
        lr=lr,
        chunk_steps=chunk_steps,
        label="RNN",
        check=check,
        progress=progress,
    )


def train_rnn_stack(
    models: list[nn.Module],
    draws: list[Callable[[int], FormulaBatch]],
    *,
    steps: int,
    batch: int = 64,
    lr: float = 3e-3,
    chunk_steps: int = 250,
    device: torch.device | str = "cpu",
    check: Callable[[str, Tensor, int], None] | None = None,
) -> list[list[float]]:
    """``train_rnn`` for several one-layer GRU ``RNN`` models at once, each on its own formulas (``draws[i]``, all
    of one token length), as one block-diagonal ``StackedGRU``. The loss is the sum of the models' losses and Adam
    is elementwise, so each model follows the path ``train_rnn`` would give it (up to floating-point summation
    order); the models are trained in place. Returns each model's per-step losses."""
    if len(models) != len(draws):
        raise ValueError(f"{len(models)} models but {len(draws)} draws")
    stack = StackedGRU(list(models)).to(device)
    opt = torch.optim.Adam(stack.parameters(), lr=lr)
    losses: list[list[float]] = [[] for _ in models]
    stack.train()
    chunks: list[FormulaBatch] = []
    for step in range(steps):
        i = step % chunk_steps
        if i == 0:
            chunks = [draw(min(chunk_steps, steps - step) * batch) for draw in draws]
        rows = slice(i * batch, (i + 1) * batch)
        tok = torch.stack([_as_tensor(c.tokens[rows], device) for c in chunks])  # (M, B, T)
        y = torch.stack([_as_tensor(c.root[rows], device) for c in chunks])  # (M, B)
        logits = stack(tok)  # (M, B, 2)
        each = F.cross_entropy(logits.reshape(-1, 2), y.reshape(-1), reduction="none").view(y.shape).mean(1)  # (M,)
        if check is not None:
            for k in range(len(models)):
                check(f"RNN {k} loss", each[k], step)
        opt.zero_grad()
        each.sum().backward()
        opt.step()
        for k, v in enumerate(each.tolist()):
            losses[k].append(v)
    stack.eval()
    for m in models:
        m.eval()
    return losses


@torch.no_grad()
def rnn_accuracy(model: nn.Module, fb: FormulaBatch, *, chunk: int = 4096, device: torch.device | str = "cpu") -> float:
    """Root-answer accuracy of ``model`` on ``fb`` (arg-max of the two logits)."""
    model.eval()
    tok, y = _as_tensor(fb.tokens, device), _as_tensor(fb.root, device)
    hits = sum(int((model(tok[i : i + chunk]).argmax(-1) == y[i : i + chunk]).sum()) for i in range(0, len(y), chunk))
    return hits / len(y)


# --- transformer ------------------------------------------------------------------------------------------------
def crq_transformer(
    n: int, n_layers: int, *, d_model: int = 64, n_heads: int = 4, cot: bool = False, seed: int = 0
) -> ToyTransformer:
    """A pre-LN causal ToyTransformer over node tokens of trees with n leaves (2n - 1 nodes): learned positions,
    MLP width 4d, final LayerNorm, logits over the node-token vocabulary (the answer is read as TRUE vs FALSE)."""
    width = 2 * n - 1
    voc = node_token_vocab(width)
    length = 3 * width + 1 + ((n - 1) if cot else 0)
    return ToyTransformer(
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        mlp_width=4 * d_model,
        causal=True,
        vocab_size=voc["size"],
        positional="learned",
        max_len=length,
        final_norm=True,
        norm_position="pre",
        seed=seed,
    )


def _answer_logits(logits: Tensor) -> Tensor:
    """(..., 2) logits of FALSE (class 0) and TRUE (class 1) from full-vocabulary logits."""
    return logits[..., [TOK_FALSE, TOK_TRUE]]


def _true_class(tokens: Tensor) -> Tensor:
    return (tokens == TOK_TRUE).long()


def train_transformer(
    model: ToyTransformer,
    draw: Callable[[int], FormulaBatch],
    *,
    steps: int,
    batch: int = 64,
    lr: float = 1e-3,
    cot: bool = False,
    chunk_steps: int = 250,
    device: torch.device | str = "cpu",
    check: Callable[[str, Tensor, int], None] | None = None,
    progress: Progress | None = None,
) -> list[float]:
    """Adam, a fresh batch every step. Without CoT: cross-entropy (TRUE vs FALSE) of the root answer read at the
    QUERY token. With CoT (teacher forcing): the input is prompt + trace[:-1]; the QUERY token predicts the first
    trace token and each trace token the next, cross-entropy on every trace token (the root's answer is the last)."""

    def loss_of(fb: FormulaBatch, rows: slice) -> Tensor:
        tok, y = _as_tensor(fb.tokens[rows], device), _as_tensor(fb.root[rows], device)
        if not cot:
            return F.cross_entropy(_answer_logits(model(tok)[:, -1]), y)
        tr = _as_tensor(fb.trace[rows], device)  # (B, I)
        seq = torch.cat([tok, tr[:, :-1]], dim=1)  # (B, P + I - 1)
        out = _answer_logits(model(seq)[:, tok.shape[1] - 1 :])  # (B, I, 2)
        return F.cross_entropy(out.reshape(-1, 2), _true_class(tr).reshape(-1))

    return _fresh_batch_adam(
        model,
        draw,
        loss_of,
        steps=steps,
        batch=batch,
        lr=lr,
        chunk_steps=chunk_steps,
        label="transformer",
        check=check,
        progress=progress,
    )


@torch.no_grad()
def transformer_accuracy(
    model: ToyTransformer, fb: FormulaBatch, *, cot: bool = False, chunk: int = 512, device: torch.device | str = "cpu"
) -> float:
    """Root-answer accuracy. With CoT the trace is decoded greedily (each token the arg-max of TRUE vs FALSE, fed
    back), and the root answer is the last decoded token."""
    model.eval()
    tok, y = _as_tensor(fb.tokens, device), _as_tensor(fb.root, device)
    hits = 0
    for i in range(0, len(y), chunk):
        seq = tok[i : i + chunk]
        if not cot:
            pred = _answer_logits(model(seq)[:, -1]).argmax(-1)
        else:
            for _ in range(fb.trace.shape[1]):
                nxt = _answer_logits(model(seq)[:, -1]).argmax(-1)  # (B,) 0 = FALSE, 1 = TRUE
                seq = torch.cat([seq, torch.where(nxt == 1, TOK_TRUE, TOK_FALSE)[:, None]], dim=1)
            pred = (seq[:, -1] == TOK_TRUE).long()
        hits += int((pred == y[i : i + chunk]).sum())
    return hits / len(y)
