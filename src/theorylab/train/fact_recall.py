"""Fact recall with a one-layer ToyTransformer: the exact construction as a model, evaluation, training, transfer.

Ravfogel, Yehudai, Bruna & Bietti, *Geometric Factual Recall in Transformers* (arXiv 2605.12426):

- :func:`construction_model` loads :func:`theorylab.theory.geometric_memory.construction_weights` into a
  :class:`ToyTransformer` (hard attention, ReLU MLP, no norm), so the construction is checked by the same forward
  pass the trained models use;
- :func:`fact_margins` / :func:`cot_margins`: target-minus-runner-up logits for every query, in chunks (N up to
  10^5 entities), one hop or two hops by feeding the predicted intermediate entity back as the subject (CoT);
- :func:`fact_model` + :func:`train_facts`: the card's trained model (1 layer, 1 head, learned embeddings and
  positions, ReLU MLP, untied readout, embeddings N(0, 1/d)) and full-batch AdamW on all facts;
- :func:`transfer`: freeze everything but the subject embedding rows, draw new bijections, re-initialise and train
  only those rows (``probes.linear_fit.retrain_subset``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from theorylab.data.facts import FactTable
from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.linear_fit import retrain_subset
from theorylab.theory.geometric_memory import construction_config, construction_weights


def construction_model(
    facts: FactTable, k: int, gate: float = 2.0, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu"
) -> ToyTransformer:
    """A ToyTransformer holding the exact construction for ``facts`` with ``k``-bit codes."""
    model = ToyTransformer(**construction_config(facts.n_entities, facts.n_relations, k, gate), seed=0)
    model = model.to(dtype=dtype, device=device)
    state = construction_weights(facts.table, k, gate, dtype)
    model.load_state_dict({n: t.to(device) for n, t in state.items()}, strict=True)
    return model.requires_grad_(False)


@torch.no_grad()
def fact_margins(model: ToyTransformer, seq: Tensor, targets: Tensor, chunk: int = 4096) -> tuple[Tensor, Tensor]:
    """Margins (target logit minus the best other logit, read at the last position) and predictions, (B,) each.

    Only the last position is read out (a patch at ``hook_final``): the (B, N) logits are the whole cost at
    N = 10^4 entities, and the earlier positions' logits are never used."""
    out_m, out_p = [], []
    with model.hooks({"hook_final": lambda h: h[:, -1:].contiguous()}):
        for i in range(0, len(seq), chunk):
            logits = model(seq[i : i + chunk])[:, -1]
            tgt = targets[i : i + chunk]
            pred = logits.argmax(dim=1)
            target = logits.gather(1, tgt[:, None])[:, 0]
            logits.scatter_(1, tgt[:, None], float("-inf"))  # in place: one (B, N) pass fewer than margins()
            out_m.append(target - logits.amax(dim=1))
            out_p.append(pred)
    return torch.cat(out_m), torch.cat(out_p)


@torch.no_grad()
def cot_margins(
    model: torch.nn.Module, facts: FactTable, chunk: int = 4096, device: torch.device | str = "cpu"
) -> Tensor:
    """Two-hop queries by chain of thought with a one-hop model: predict ``m = argmax f([s, r1])``, then score
    ``f([m, r2])`` against the true ``pi_r2(pi_r1(s))``. The margin of a query is the smaller of its two hops'
    (> 0 iff both hops are right). (N·R²,)"""
    seq, answer, inter = facts.chains(2)
    seq, answer, inter = seq.to(device), answer.to(device), inter.to(device)
    m1, pred = fact_margins(model, seq[:, :2], inter[:, 0], chunk)
    m2, _ = fact_margins(model, torch.stack([pred, seq[:, 2]], dim=1), answer, chunk)
    return torch.minimum(m1, m2)


def fact_model(
    n_entities: int,
    n_relations: int,
    d_model: int,
    mlp_width: int,
    *,
    n_layers: int = 1,
    length: int = 2,
    seed: int,
    norm: str = "none",
) -> ToyTransformer:
    """The card's trained model: ``n_layers`` blocks of one softmax head, learned positions, a ReLU MLP, an untied
    readout over the N entities; token embedding and readout N(0, 1/d)."""
    return ToyTransformer(
        d_model=d_model,
        n_layers=n_layers,
        n_heads=1,
        mlp_width=mlp_width,
        activation="relu",
        norm=norm,
        positional="learned",
        max_len=length,
        vocab_size=n_entities + n_relations,
        d_output=n_entities,
        embedding_std=d_model**-0.5,
        seed=seed,
    )


def last_position_ce(logits: Tensor, targets: Tensor) -> Tensor:
    return F.cross_entropy(logits[:, -1], targets)


def train_facts(
    model: ToyTransformer,
    seq: Tensor,
    targets: Tensor,
    *,
    steps: int,
    lr: float,
    weight_decay: float = 0.0,
    trainable: Sequence[str] = ("",),
    rows: dict[str, Tensor] | None = None,
    evaluate: Callable[[int], None] | None = None,
    evaluate_every: int | None = None,
    chunk: int | None = None,
) -> list[float]:
    """Full-batch AdamW on the cross-entropy of every query (read at the last position), in place; ``chunk``
    accumulates the full-batch gradient over row chunks (paper sizes: N·R up to 5·10^5 facts x N logits)."""
    # Only the last position is read out (patched at hook_final): the loss never sees the other positions' logits.
    with model.hooks({"hook_final": lambda h: h[:, -1:]}):
        return retrain_subset(
            model,
            trainable,
            seq,
            targets,
            last_position_ce,
            steps=steps,
            lr=lr,
            weight_decay=weight_decay,
            rows=rows,
            evaluate=evaluate,
            evaluate_every=evaluate_every,
            chunk=chunk,
        )


def transfer(
    model: ToyTransformer,
    new_facts: FactTable,
    *,
    steps: int,
    lr: float,
    generator: torch.Generator,
    evaluate_every: int | None = None,
    device: torch.device | str = "cpu",
    chunk: int | None = None,
) -> list[tuple[int, float]]:
    """Re-initialise the subject rows of the embedding (N(0, 1/d)), freeze attention, MLP, positions, relation rows
    and readout, and train the subject rows alone on ``new_facts``. Returns (updates, accuracy) pairs. In place."""
    n, d = new_facts.n_entities, model.cfg.d_model
    with torch.no_grad():
        fresh = torch.randn(n, d, generator=generator, dtype=torch.float64) * d**-0.5
        model.embed.weight[:n] = fresh.to(model.embed.weight)
    seq, tgt = (t.to(device) for t in new_facts.queries())
    subject_rows = torch.arange(model.embed.weight.shape[0]) < n
    curve: list[tuple[int, float]] = []

    def evaluate(updates: int) -> None:
        m, _ = fact_margins(model, seq, tgt, chunk or 4096)
        curve.append((updates, float((m > 0).double().mean())))

    train_facts(
        model,
        seq,
        tgt,
        steps=steps,
        lr=lr,
        trainable=["embed.weight"],
        rows={"embed.weight": subject_rows},
        evaluate=evaluate,
        evaluate_every=evaluate_every,
        chunk=chunk,
    )
    return curve
