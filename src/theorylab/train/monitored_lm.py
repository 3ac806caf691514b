"""Language-model training loops that watch the run: measurements along the way, divergence under warmup.

- :func:`train_hf_causal_lm`: AdamW on random windows of a token stream for a Hugging Face causal LM
  (it shifts the labels itself), calling ``measure(model)`` in eval mode at step 0, every
  ``log_every`` steps and after the last step (the θ-tracking run of Emadi, arXiv 2602.18849).
- :func:`theta_over_training`: that run for a random-init GPT-2, measuring θ(p) of every head.
- :func:`train_until_divergence`: Adam with a linear learning-rate warmup, stopped at a NaN or a
  loss above twice its running minimum; :func:`warmup_comparison` runs it with and without warmup
  on the same batches (why post-LN needs warmup: Xiong et al. 2020; Emadi, arXiv 2602.18849).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from theorylab.data.text import random_windows
from theorylab.probes.attention_stats import head_theta_summary
from theorylab.theory.token_entropy import unigram_entropy


def _iterate(steps: Iterable[int], progress: Callable | None, description: str) -> Iterable[int]:
    return steps if progress is None else progress(steps, description)


def train_hf_causal_lm(
    model: nn.Module,
    stream: Tensor,
    *,
    steps: int,
    batch: int,
    length: int,
    lr: float,
    generator: torch.Generator,
    measure: Callable[[nn.Module], Any],
    log_every: int,
    progress: Callable | None = None,
    check: Callable[[str, Tensor, int], None] | None = None,
    device: torch.device | str = "cpu",
    description: str = "train causal LM",
) -> tuple[dict[int, Any], dict[int, float]]:
    """``(measurements by step, training loss by step)`` after ``steps`` AdamW steps on windows of ``length``
    tokens drawn from ``stream`` with ``generator``. ``measure(model)`` runs under ``model.eval()`` at step 0,
    every ``log_every`` steps and after the last step; the model is back in train mode afterwards."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    measured, losses = {}, {}
    for step in _iterate(range(steps + 1), progress, description):
        if step % log_every == 0 or step == steps:
            model.eval()
            measured[step] = measure(model)
            model.train()
        if step == steps:
            break
        x = random_windows(stream, batch, length, generator).to(device)
        loss = model(x, labels=x).loss  # HF shifts the labels itself
        if check is not None:
            check("causal LM training loss", loss, step)
        losses[step] = loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return measured, losses


def theta_over_training(
    stream: Tensor,
    vocab_size: int,
    *,
    layers: int,
    width: int,
    heads: int,
    context: int,
    batch: int,
    steps: int,
    lr: float,
    log_every: int,
    min_keys: int,
    init_seed: int,
    probe_generator: torch.Generator,
    generator: torch.Generator,
    name: str = "gpt2 (ours, random init, trained)",
    progress: Callable | None = None,
    check: Callable | None = None,
    device: torch.device | str = "cpu",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(theta, loss)``: a GPT-2 (Hugging Face, float32, init std 0.02, no dropout: dropout would randomise
    the attention rows θ is measured on) of ``layers x width``, ``heads`` heads and ``context`` positions,
    seeded by ``init_seed``, trained by :func:`train_hf_causal_lm` on ``stream`` while
    :func:`~theorylab.probes.attention_stats.head_theta_summary` measures θ(p) of every head on 8 windows
    drawn from ``probe_generator`` (Emadi, arXiv 2602.18849: θ ≈ 1 throughout training).

    ``theta``: a row per (logged step, layer, head), labelled ``model = name``, with that step's training
    loss; ``loss``: the loss of every step and the stream's unigram entropy, the best loss a model that
    ignores its context can reach (a GPT-2 token without attention sees only itself)."""
    from theorylab.nn.hf import random_init

    model = random_init(
        "gpt2",
        seed=init_seed,
        dtype=torch.float32,
        init_std=0.02,
        n_layer=layers,
        n_embd=width,
        n_head=heads,
        n_positions=context,
        vocab_size=vocab_size,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = model.to(device).train()
    probe = random_windows(stream, 8, context, probe_generator).to(device)
    measured, losses = train_hf_causal_lm(
        model,
        stream,
        steps=steps,
        batch=batch,
        length=context,
        lr=lr,
        generator=generator,
        measure=lambda m: head_theta_summary(m, probe, min_keys),
        log_every=log_every,
        progress=progress,
        check=check,
        device=device,
        description="train GPT-2 (θ tracking)",
    )
    theta = pd.concat([f.assign(step=step) for step, f in measured.items()], ignore_index=True).assign(model=name)
    theta["train_loss"] = theta["step"].map(losses)
    loss = pd.DataFrame(dict(step=list(losses), loss=list(losses.values())))
    return theta, loss.assign(unigram_entropy=unigram_entropy(stream, vocab_size))


def train_until_divergence(
    model: nn.Module,
    stream: Tensor,
    *,
    steps: int,
    batch: int,
    length: int,
    lr: float,
    warmup: int,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    progress: Callable | None = None,
) -> tuple[list[dict], str]:
    """``([{warmup, step, loss}], status)``: Adam at peak ``lr`` with linear warmup over ``warmup`` steps (0:
    none) on next-token prediction over windows of ``length + 1`` tokens of ``stream``. Status ``"ok"``, or
    ``"diverged (...)"`` at the first NaN loss or, after step 10, a loss above 2x its running minimum
    (the loss of the stopping step is logged)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s, r=warmup: min(1.0, (s + 1) / r) if r else 1.0)
    rows, best, status = [], math.inf, "ok"
    for step in _iterate(range(steps), progress, f"post-LN, warmup {warmup}"):
        x = random_windows(stream, batch, length + 1, generator).to(device)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        value = loss.item()
        if not math.isfinite(value):
            status = f"diverged (NaN at step {step})"
            rows.append(dict(warmup=warmup, step=step, loss=value))
            break
        best = min(best, value)
        rows.append(dict(warmup=warmup, step=step, loss=value))
        if value > 2 * best and step > 10:
            status = f"diverged (loss {value:.2f} > 2 x running minimum {best:.2f} at step {step})"
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return rows, status


def warmup_comparison(
    make_model: Callable[[], nn.Module],
    stream: Tensor,
    *,
    warmups: Sequence[int],
    steps: int,
    batch: int,
    length: int,
    lr: float,
    make_generator: Callable[[], torch.Generator],
    device: torch.device | str = "cpu",
    progress: Callable | None = None,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """:func:`train_until_divergence` of a fresh ``make_model()`` for each warmup length, every run on the
    batches of a fresh ``make_generator()`` (the same batches). Columns ``warmup, step, loss, status``: the
    loss curve, then one row per run with ``step = -1`` and its status."""
    rows = []
    for ramp in warmups:
        curve, status = train_until_divergence(
            make_model().to(device),
            stream,
            steps=steps,
            batch=batch,
            length=length,
            lr=lr,
            warmup=ramp,
            generator=make_generator(),
            device=device,
            progress=progress,
        )
        if log is not None:
            log(f"warmup {ramp}: {status}")
        rows += curve + [dict(warmup=ramp, step=-1, loss=np.nan, status=status)]
    return pd.DataFrame(rows)
