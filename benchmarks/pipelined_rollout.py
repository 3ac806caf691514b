"""Pipelined against synchronous corrected rollouts, one process, one thread (KS22, 16 trajectories).

    python benchmarks/pipelined_rollout.py [--horizon 300] [--json benchmarks/results/pipelined_rollout.json]

Trains the two quick-preset denoisers from the kit (the thermalizer's ``DenoiserMLP``, 1500 steps, and the SNS
``ConditionalDiffusion`` MLP, 1600 steps; about a minute together), then rolls the drifting emulator
``KSLeaky(η = 0.1)`` out over the same 16 initial states, corrected by ``Thermalize`` and by ``SelfRefine``, once
with ``rollout`` (every step waits for the trajectory with the most reverse steps) and once with
``rollout_pipelined`` (each trajectory steps on when its own denoising is done). Prints both wall times, their ratio,
the denoiser calls per trajectory and step, and the network calls each rollout made, with a quality check beside
them: the share of trajectories on the attractor at the end and the mean spectrum ratio over the last 100 steps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from theorylab.data.pde import KS1D, KSLeaky
from theorylab.nn.conditional_diffusion import ConditionalDiffusion, mlp_backbone
from theorylab.nn.unet import DenoiserMLP, noise_schedule
from theorylab.probes.rollout_metrics import off_attractor_time, spectrum_1d
from theorylab.train.rollout import Thermalize, float32_denoiser, rollout, rollout_pipelined
from theorylab.train.self_refine import SelfRefine, train_sns
from theorylab.train.thermalizer import train_level_denoiser


class _Counted(torch.nn.Module):
    """Counts the network's forward calls."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net, self.calls = net, 0

    def forward(self, *args, **kwargs):
        self.calls += 1
        return self.net(*args, **kwargs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--json", default="benchmarks/results/pipelined_rollout.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    ks = KS1D.preset("ks22")
    g = torch.Generator().manual_seed(0)
    train = rollout(lambda x: ks.step(x, 4), ks.spun_up(48, g), 800).states[:, 1:]
    std = float(train.std())
    test0 = ks.spun_up(16, g)
    reference = spectrum_1d(train)
    betas, abar = noise_schedule(1000, "cosine")
    data = (train / std).float()

    torch.set_num_threads(2)  # training uses both cores; the rollouts one (their ops are tiny)
    therm_net = DenoiserMLP(ks.N, 256, 3, 200)
    opt = torch.optim.Adam(therm_net.parameters(), lr=2e-3, fused=True)
    train_level_denoiser(
        therm_net,
        data.reshape(-1, ks.N),
        abar,
        steps=1500,
        batch=256,
        levels=200,
        optimizer=opt,
        scheduler=torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=1500),
        generator=torch.Generator().manual_seed(1),
    )
    sns_net = ConditionalDiffusion(mlp_backbone(ks.N, 2, 1, 256, 3), 2, 1000)
    opt = torch.optim.Adam(sns_net.parameters(), lr=2e-3, fused=True)
    train_sns(
        sns_net,
        data,
        abar,
        steps=1600,
        batch=128,
        optimizer=opt,
        generator=torch.Generator().manual_seed(2),
        scheduler=torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=1600),
        low_levels=200,
        low_share=0.5,
    )
    torch.set_num_threads(1)
    emulator = KSLeaky(ks, eta=0.1)
    counted = {"thermalize": _Counted(therm_net.eval()), "sns": _Counted(sns_net.eval())}

    def corrector(name: str):
        gen = torch.Generator().manual_seed(3)
        if name == "thermalize":
            return Thermalize(float32_denoiser(counted[name]), betas, abar, 10, 4, 100, generator=gen, scale=std)
        return SelfRefine(counted[name], betas, abar, generator=gen, scale=std).reset(test0)

    summary: dict = dict(
        horizon=args.horizon,
        trajectories=16,
        cpu_count=os.cpu_count(),
        python=platform.python_version(),
        torch=torch.__version__,
    )
    for name in ("thermalize", "sns"):
        for engine in ("synchronous", "pipelined"):
            gen = torch.Generator().manual_seed(4)
            step = lambda x, gen=gen: emulator(x, gen)  # noqa: E731
            counted[name].calls = 0
            start = time.perf_counter()
            with torch.no_grad():
                run = (
                    rollout(step, test0, args.horizon, corrector=corrector(name))
                    if engine == "synchronous"
                    else rollout_pipelined(step, test0, args.horizon, corrector(name))
                )
            seconds = time.perf_counter() - start
            on = float((off_attractor_time(run.states, std) >= args.horizon).double().mean())
            ratio = float((spectrum_1d(run.states[:, -100:]) / reference)[1:7].mean())
            summary[f"{name}_{engine}"] = dict(
                seconds=round(seconds, 2),
                calls_per_step=round(float(run.logs["calls"].double().mean()), 2),
                network_calls=counted[name].calls,
                on_attractor=on,
                spectrum_ratio_m1_6=round(ratio, 3),
            )
        sync, pipe = summary[f"{name}_synchronous"], summary[f"{name}_pipelined"]
        summary[f"{name}_ratio"] = round(sync["seconds"] / pipe["seconds"], 2)
        print(
            f"{name}: synchronous {sync['seconds']:.2f} s ({sync['network_calls']} calls, {sync['calls_per_step']} "
            f"per trajectory-step), pipelined {pipe['seconds']:.2f} s ({pipe['network_calls']} calls, "
            f"{pipe['calls_per_step']}): {summary[f'{name}_ratio']:.2f}x; on the attractor {sync['on_attractor']:.0%}"
            f" / {pipe['on_attractor']:.0%}, spectrum ratio m = 1..6 {sync['spectrum_ratio_m1_6']} / "
            f"{pipe['spectrum_ratio_m1_6']}"
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
