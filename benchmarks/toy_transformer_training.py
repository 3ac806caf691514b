"""Training speed of the toy-transformer kit, as ratios measured in one run.

    python benchmarks/toy_transformer_training.py [--json benchmarks/results/toy_transformer_training.json]

1. Batched seeds: S = 32 attention-rank models (quick sizes: d = 16, N = 8, batch 128, H = 4 heads
   of rank 4) trained as one stacked computation (``train_stacked``) against a Python loop over
   the same 32 models, each with its own AdamW, for the same steps on the same data.
   Target: at least 5x faster on 2 CPU cores.
2. Per-model speed: ``ToyTransformer`` against ``torch.nn.TransformerEncoder`` of the same size
   (post-norm LayerNorm, ReLU FF, d = 64, 4 heads, FF 256, 2 layers, batch 32, length 32), training
   steps per second. Target: the toy model no more than 20% slower.

Timings take the best of ``--repeats`` runs after a warm-up, so a loaded machine disturbs them less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Callable

import torch

from theorylab.data.nearest_points import d_mse, nearest_point_sets
from theorylab.nn.toy_transformer import ToyTransformer, attention_only
from theorylab.train.batched import AdamWSchedule, StackedModels, train_stacked


def best_time(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def batched_vs_loop(members: int, steps: int, repeats: int, heads: int, batch: int = 128) -> dict:
    d, n = 16, 8
    gen = torch.Generator().manual_seed(0)
    data = []
    for _ in range(steps):
        sets = nearest_point_sets(d, n, members * batch, gen)
        data.append((sets.sequence.view(members, batch, n, d), sets.targets.view(members, batch, n, d)))
    optim = AdamWSchedule(lr=1e-2, betas=(0.9, 0.95), warmup_frac=0.05)

    def batched() -> None:
        stacked = StackedModels([attention_only(d, heads, d // heads, qk_scale=1.0, seed=s) for s in range(members)])
        train_stacked(stacked, lambda step: data[step], d_mse, steps=steps, optim=optim)

    def loop() -> None:
        for s in range(members):
            model = attention_only(d, heads, d // heads, qk_scale=1.0, seed=s)
            opt, sched = optim.build(model.parameters(), steps)
            for x, y in data:
                loss = d_mse(model(x[s]), y[s])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()

    t_batched, t_loop = best_time(batched, repeats), best_time(loop, repeats)
    return {
        "members": members,
        "steps": steps,
        "d": d,
        "n_points": n,
        "batch": batch,
        "heads": heads,
        "rank": d // heads,
        "batched_s": round(t_batched, 3),
        "loop_s": round(t_loop, 3),
        "speedup": round(t_loop / t_batched, 2),
    }


def toy_vs_torch_encoder(steps: int, repeats: int) -> dict:
    d, heads, ff, layers, batch, length = 64, 4, 256, 2, 32, 32
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, length, d, generator=gen)
    y = torch.randn(batch, length, d, generator=gen)
    torch.manual_seed(0)
    reference = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True),
        layers,
        enable_nested_tensor=False,
    )
    toy = ToyTransformer(
        d_model=d,
        n_heads=heads,
        n_layers=layers,
        mlp_width=ff,
        activation="relu",
        norm="layer",
        norm_position="post",
        seed=0,
    )
    assert sum(p.numel() for p in toy.parameters()) == sum(p.numel() for p in reference.parameters())

    def trainer(model: torch.nn.Module) -> Callable[[], None]:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def go() -> None:
            for _ in range(steps):
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

        return go

    t_torch, t_toy = best_time(trainer(reference), repeats), best_time(trainer(toy), repeats)
    return {
        "d_model": d,
        "heads": heads,
        "ff": ff,
        "layers": layers,
        "batch": batch,
        "length": length,
        "steps": steps,
        "torch_steps_per_s": round(steps / t_torch, 1),
        "toy_steps_per_s": round(steps / t_toy, 1),
        "toy_time_over_torch": round(t_toy / t_torch, 3),
        "target": "<= 1.2",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/toy_transformer_training.json")
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    batched = []
    for heads, batch in ((1, 128), (4, 128), (16, 128), (4, 16)):
        row = batched_vs_loop(args.members, args.steps, args.repeats, heads, batch)
        batched.append(row)
        print(
            f"{row['members']} seeds, H = {heads} (r = {row['rank']}), batch {batch}: stacked "
            f"{row['batched_s']:.2f} s "
            f"vs loop {row['loop_s']:.2f} s -> {row['speedup']:.1f}x (target >= 5x at the quick sizes, batch 128)"
        )
    encoder = toy_vs_torch_encoder(args.steps, args.repeats)
    print(
        f"toy transformer {encoder['toy_steps_per_s']:.0f} steps/s vs torch.nn.TransformerEncoder "
        f"{encoder['torch_steps_per_s']:.0f} "
        f"-> time ratio {encoder['toy_time_over_torch']:.2f} (target <= 1.2)"
    )
    summary = {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "batched_vs_loop": batched,
        "toy_vs_torch_encoder": encoder,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
