"""Where a transformer keeps the two answers of the noisy in-context recall task.

Chen, Bruna, Bietti, "Distributional Associations vs In-Context Reasoning: A Study of Feed-forward
and Attention Layers" (arXiv 2406.03068). At a trigger with an earlier occurrence the answer can be
the sequence's own output ``o`` (in context: an induction head) or a generic noise token (a global
association). :func:`measure_trigger_recall` reads the paper's two-layer model (Sec. 3): its
predictions, the same with the second feed-forward layer (FF2) or an attention layer removed, FF2's
direct logit margin for the noise token, and the layer-2 attention mass on the token after the
previous trigger. :func:`value_truncation` truncates the layer-2 value matrix of a model without FF
layers. :func:`measure_word_recall` and :func:`measure_hf_recall` are the real-text counterparts
(Sec. 5): in-context recall at written-in trigger prompts, perplexity of natural text.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.data.markov import TriggerBatch, previous_trigger_next, split_halves
from theorylab.data.trigger_text import repeated_names
from theorylab.nn.token_losses import next_token_loss
from theorylab.probes.ablation import ablate, attention_to, direct_logit, logit_margin, low_rank

FF2 = "blocks.1.mlp"
ATTN1 = "blocks.0.attn"
ATTN2 = "blocks.1.attn"
VALUE2 = "blocks.1.attn.W_V"


@torch.no_grad()
def measure_trigger_recall(model: nn.Module, test: TriggerBatch, noise: int) -> dict[str, float]:
    """The test measurements of a two-layer :class:`~theorylab.nn.ToyTransformer` at trigger positions
    with an earlier trigger (``test`` drawn at p = 0): accuracy and P(o), P(noise) of the full model
    (``*_full``), with FF2 dropped (``*_noFF2``, when the model has FF layers) and with each attention
    layer dropped (``*_noAttn1``, ``*_noAttn2``); ``induction_mass``, the layer-2 attention on the
    token after the previous trigger; ``ff2_margin(_positive)``, FF2's direct-logit margin of the noise
    token (mean, and the fraction of positions where it is > 0)."""
    device = next(model.parameters()).device
    tokens = test.tokens.to(device)
    where = test.seen.to(device)
    answer = test.outputs.to(device)[:, None].expand_as(tokens)[where]
    has_ff = model.blocks[1].mlp is not None
    names = ["blocks.1.attn.hook_pattern"] + (["blocks.1.hook_mlp_out"] if has_ff else [])
    logits, cache = model.run_with_cache(tokens, names)
    probs = logits[where].softmax(-1)
    out = dict(
        acc_full=float((probs.argmax(-1) == answer).double().mean()),
        P_noise_full=float(probs[:, noise].double().mean()),
        P_answer_full=float(probs.gather(-1, answer[:, None]).double().mean()),
    )
    key = previous_trigger_next(test).to(device)
    mass = attention_to(cache["blocks.1.attn.hook_pattern"][:, 0], key)[where]
    out["induction_mass"] = float(mass.double().nanmean())
    if has_ff:
        ff2 = direct_logit(cache["blocks.1.hook_mlp_out"][where], model.readout.weight)
        margin = logit_margin(ff2, noise).double()
        out["ff2_margin"] = float(margin.mean())
        out["ff2_margin_positive"] = float((margin > 0).double().mean())
        with ablate(model, FF2):
            p2 = model(tokens)[where].softmax(-1)
        out.update(
            acc_noFF2=float((p2.argmax(-1) == answer).double().mean()),
            P_noise_noFF2=float(p2[:, noise].double().mean()),
            P_answer_noFF2=float(p2.gather(-1, answer[:, None]).double().mean()),
        )
    for layer, name in ((1, ATTN1), (2, ATTN2)):
        with ablate(model, name):
            p3 = model(tokens)[where].softmax(-1)
        out[f"P_noise_noAttn{layer}"] = float(p3[:, noise].double().mean())
        out[f"P_answer_noAttn{layer}"] = float(p3.gather(-1, answer[:, None]).double().mean())
    return out


@torch.no_grad()
def value_truncation(model: nn.Module, test: TriggerBatch, noise: int, ranks: tuple[int, ...]) -> list[dict]:
    """A model without FF layers: its layer-2 attention value path. The value matrix W_V of layer 2
    truncated to its top-``rank`` singular directions (the authors' ``wv_low_rank`` on the second
    layer; LASER's operation), measured at test triggers on each half of ``test``
    (:func:`~theorylab.data.markov.split_halves`). Rank -1 is the untouched model; rank 0 zeroes
    W_V, i.e. drops the whole layer-2 attention output. One row per (split, rank)."""
    device = next(model.parameters()).device
    rows = []
    for split, half in split_halves(test).items():
        tokens, where = half.tokens.to(device), half.seen.to(device)
        answer = half.outputs.to(device)[:, None].expand_as(tokens)[where]
        for rank in (-1, 0, *ranks):
            if rank < 0:
                probs = model(tokens)[where].softmax(-1)
            else:
                with low_rank(model, {VALUE2: rank}):
                    probs = model(tokens)[where].softmax(-1)
            rows.append(
                dict(
                    split=split,
                    rank=rank,
                    positions=int(where.sum()),
                    P_noise=float(probs[:, noise].double().mean()),
                    P_answer=float(probs.gather(-1, answer[:, None]).double().mean()),
                    acc=float((probs.argmax(-1) == answer).double().mean()),
                )
            )
    return rows


@torch.no_grad()
def measure_word_recall(
    model: nn.Module,
    probes: TriggerBatch,
    natural: Tensor,
    generic: int,
    is_name: Tensor,
    successor: Tensor,
    chunk: int = 256,
) -> dict[str, float]:
    """In-context recall at held-out trigger positions (``probes``, p = 0): accuracy, P(answer) and
    P(``generic``); on untouched held-out text ``natural`` (n, T), the perplexity and the natural
    repeated-name completions (:func:`~theorylab.data.trigger_text.repeated_names`): probability of
    the name vs of ``successor[current word]``, the corpus's most frequent successor."""
    device = next(model.parameters()).device
    keys = ("correct", "p_answer", "p_generic", "count", "nat_correct", "nat_p_name", "nat_p_generic", "nat_count")
    sums = dict.fromkeys(keys, 0.0)
    for i in range(0, len(probes.tokens), chunk):
        tokens = probes.tokens[i : i + chunk].to(device)
        where = probes.seen[i : i + chunk].to(device)
        answer = probes.outputs[i : i + chunk].to(device)[:, None].expand_as(tokens)[where]
        probs = model(tokens)[where].softmax(-1).double()
        sums["correct"] += float((probs.argmax(-1) == answer).sum())
        sums["p_answer"] += float(probs.gather(-1, answer[:, None]).sum())
        sums["p_generic"] += float(probs[:, generic].sum())
        sums["count"] += int(where.sum())
    nll = []
    for i in range(0, len(natural), chunk):
        w = natural[i : i + chunk]
        logits = model(w.to(device))
        nll.append(float(next_token_loss(logits, w.to(device))))
        where = repeated_names(w, is_name)
        nxt = torch.zeros_like(w)
        nxt[:, :-1] = w[:, 1:]
        probs = logits[where.to(device)].softmax(-1).double()
        name, other = nxt[where].to(device), successor[w[where]].to(device)
        sums["nat_correct"] += float((probs.argmax(-1) == name).sum())
        sums["nat_p_name"] += float(probs.gather(-1, name[:, None]).sum())
        sums["nat_p_generic"] += float(probs.gather(-1, other[:, None]).sum())
        sums["nat_count"] += int(where.sum())
    n, m = max(sums["count"], 1), max(sums["nat_count"], 1)
    return dict(
        icl_acc=sums["correct"] / n,
        P_answer=sums["p_answer"] / n,
        P_generic=sums["p_generic"] / n,
        positions=int(sums["count"]),
        perplexity=float(np.exp(np.mean(nll))),
        natural_name_acc=sums["nat_correct"] / m,
        natural_P_name=sums["nat_p_name"] / m,
        natural_P_generic=sums["nat_p_generic"] / m,
        natural_positions=int(sums["nat_count"]),
    )


@torch.no_grad()
def measure_hf_recall(
    model: nn.Module,
    tokenizer,
    prompts: list[str],
    answers: list[str],
    generic: str,
    natural: list[str],
    batch: int = 16,
) -> dict[str, float]:
    """:func:`measure_word_recall` for a Hugging Face causal LM on text: next-token probabilities of
    the first sub-token of `` answer`` and of `` generic`` after each prompt, and the perplexity of
    ``natural`` (the natural-name columns are NaN)."""
    device = next(model.parameters()).device

    def forward(texts: list[str], side: str):
        tokenizer.padding_side = side
        enc = tokenizer(texts, return_tensors="pt", padding=True).to(device)
        position = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)  # left padding keeps positions
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], position_ids=position).logits
        return enc, logits

    answer_ids = torch.tensor([tokenizer(" " + a)["input_ids"][0] for a in answers])
    generic_id = tokenizer(" " + generic)["input_ids"][0]
    correct = p_answer = p_generic = 0.0
    for i in range(0, len(prompts), batch):
        _, logits = forward(prompts[i : i + batch], "left")
        probs = logits[:, -1].softmax(-1).double().cpu()
        a = answer_ids[i : i + batch]
        correct += float((probs.argmax(-1) == a).sum())
        p_answer += float(probs.gather(-1, a[:, None]).sum())
        p_generic += float(probs[:, generic_id].sum())
    nll = tokens = 0.0
    for i in range(0, len(natural), batch):
        enc, logits = forward(natural[i : i + batch], "right")
        mask = enc["attention_mask"][:, 1:].bool()
        loss = F.cross_entropy(logits[:, :-1].transpose(1, 2).float(), enc["input_ids"][:, 1:], reduction="none")
        nll += float(loss[mask].sum())
        tokens += int(mask.sum())
    n = max(len(prompts), 1)
    nan = float("nan")
    return dict(
        icl_acc=correct / n,
        P_answer=p_answer / n,
        P_generic=p_generic / n,
        positions=len(prompts),
        perplexity=float(np.exp(nll / max(tokens, 1))),
        natural_name_acc=nan,
        natural_P_name=nan,
        natural_P_generic=nan,
        natural_positions=0,
    )
