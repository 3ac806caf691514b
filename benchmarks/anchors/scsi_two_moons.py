"""self-consistent-interpolants' training against the paper authors' SCSI code, side by side on two moons.

    git clone https://github.com/modichirag/SCSI /path/to/SCSI   # you fetch it; never vendored (CC BY-NC-SA 4.0)
    python benchmarks/anchors/scsi_two_moons.py --official /path/to/SCSI [--seeds 3 --steps 300 --threads 1]
        [--precision auto]

The run of their README's 2-D quickstart (``scsi_synthetic.py``, Modi, Han, Vanden-Eijnden, Bruna, arXiv
2512.10857): two moons (their ``get_dataset("two_moons", n_samples=6000)``: scikit-learn's ``make_moons``, noise
0.1, seed 42, scaled by 4) under additive Gaussian noise of 0.5, batch 2000, an MLP of 3 x 256 SiLU layers with a
32-wide time embedding, 40 Euler steps for the transport, Adam 3e-3, gradient norm clipped at 1, alpha 0.9, one
resample, no interpolant noise, no learning-rate schedule. Their side: their ``FeedForwardwithEMB``,
``SCSInterpolant.loss_fn`` and ``CorruptedDataset`` (a ``DataLoader`` with batch 2000 and no workers, read through
their ``infinite_dataloader``) in the loop body of their ``trainer_si.Trainer.train`` (loss, backward, clip,
Adam step), one seed after the other. Ours: ``theorylab.train.interpolants.train_self_consistent`` with a
``TimeMLP(2, 256, 3, 32)`` on the same 6000 clean points, observed once through ``GaussianNoise(0.5)``.
Printed: steps/s of both and their ratio, and for every seed the sliced W2 (``probes.distances.sliced_w2``, 200
directions) between fresh corrupted samples transported by each model (raw weights, their ``transport`` for
theirs, ours for ours) and fresh clean samples, beside the SW2 of the corrupted samples themselves and the
clean-vs-clean floor, so a speed-up that learned less would show.

Not their ``Trainer`` itself: it imports ``ema_pytorch`` at the top and writes checkpoints, loss files and figures
(every ``save_and_sample_every`` steps and at the end); its loop adds an EMA update every 10 steps, a tqdm bar and a
loss-spike check, none of which is in the timed step here (nor on our side: no EMA). Their ``src`` modules are
imported from the checkout (``sys.path``); their ``custom_datasets.py`` and ``forward_maps.py`` import
``torchvision`` at the top for image data this does not use, so without ``torchvision`` installed a stand-in module
takes its place. Differences that stay (they are the two codes' own): their ``CorruptedDataset`` draws fresh noise
for every item every epoch (``tied_rng=False``), ours keeps one observed copy; their loss is the mean over
coordinates, ours the sum (twice theirs in 2-D, which matters only through the clipping); their time embedding is
``PositionalEmbedding`` with ``max_positions=1`` (every frequency 1), ours log-spaced sinusoids; their loader does
not shuffle (``sampler=None``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import torch

from theorylab.core.cpu import cpu_label
from theorylab.core.precision import resolve
from theorylab.core.rng import seeded
from theorylab.data.corruptions import GaussianNoise
from theorylab.nn.velocity import TimeMLP
from theorylab.probes.distances import sliced_w2
from theorylab.train.interpolants import train_self_consistent, transport

BATCH, WIDTH, DEPTH, T_EMB, ODE_STEPS, LR, ALPHA, SIGMA, N_DATA, CLIP = 2000, 256, 3, 32, 40, 3e-3, 0.9, 0.5, 6000, 1.0


class _Absent(types.ModuleType):
    """A stand-in for a package their 2-D path imports but never uses: every attribute is a no-op callable."""

    def __getattr__(self, name: str):
        if name.startswith("__"):  # module machinery (__file__, __path__, ...) must stay absent
            raise AttributeError(name)
        return lambda *args, **kwargs: None


def _import_official(path: Path) -> types.SimpleNamespace:
    src = path / "src"
    needed = ("interpolant_utils.py", "mlps.py", "custom_datasets.py", "forward_maps.py", "utils.py")
    if not (path / "scsi_synthetic.py").is_file() or not all((src / f).is_file() for f in needed):
        raise SystemExit(
            f"--official {path}: no scsi_synthetic.py and src/{{{','.join(needed)}}} there; clone "
            "https://github.com/modichirag/SCSI and pass its folder"
        )
    try:
        import torchvision  # noqa: F401
    except ImportError:  # their image transforms are built at import time; the 2-D path never calls them
        for name in ("torchvision", "torchvision.transforms", "torchvision.datasets"):
            sys.modules[name] = _Absent(name)
        sys.modules["torchvision"].transforms = sys.modules["torchvision.transforms"]
        sys.modules["torchvision"].datasets = sys.modules["torchvision.datasets"]
    sys.path.insert(0, str(src))
    import forward_maps  # type: ignore[import-not-found]
    from custom_datasets import CorruptedDataset, get_dataset  # type: ignore[import-not-found]
    from interpolant_utils import SCSInterpolant  # type: ignore[import-not-found]
    from mlps import FeedForwardwithEMB  # type: ignore[import-not-found]
    from utils import infinite_dataloader  # type: ignore[import-not-found]

    return types.SimpleNamespace(
        corruption_dict=forward_maps.corruption_dict,
        CorruptedDataset=CorruptedDataset,
        get_dataset=get_dataset,
        SCSInterpolant=SCSInterpolant,
        FeedForwardwithEMB=FeedForwardwithEMB,
        infinite_dataloader=infinite_dataloader,
    )


def official(lib, clean_dataset, seed: int, steps: int):
    """Their model, interpolant and data loader in their trainer's loop body: (seconds, model, interpolant)."""
    torch.manual_seed(seed)
    fwd = lib.corruption_dict["gaussian_noise"](SIGMA)
    interpolant = lib.SCSInterpolant(
        fwd, use_latents=False, n_steps=ODE_STEPS, alpha=ALPHA, resamples=1, diffusion_coeff=0.0, gamma_scale=0.0
    )
    model = lib.FeedForwardwithEMB(2, T_EMB, [WIDTH] * DEPTH, latent_dim=None)
    dataset = lib.CorruptedDataset(clean_dataset, fwd, tied_rng=False)
    dl = lib.infinite_dataloader(torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=None, num_workers=0))
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.999), weight_decay=0.0)
    started = time.perf_counter()
    for _ in range(steps):
        model.train()
        _, obs, _ = next(dl)
        loss, _ = interpolant.loss_fn(model, obs, None, b_fixed=None, s=None, s_fixed=None)
        loss = loss.mean()
        loss.detach().item()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        opt.zero_grad()
    return time.perf_counter() - started, model, interpolant


def ours(clean: torch.Tensor, seed: int, steps: int, precision: str = "fp32"):
    """``train_self_consistent`` on the same clean points observed once, its per-step transport at ``precision``
    (the study's field): (seconds, model)."""
    channel = GaussianNoise(SIGMA)
    observed = channel(clean, torch.Generator().manual_seed(10_000 + seed))[0]
    with seeded(seed):
        model = TimeMLP(2, WIDTH, DEPTH, T_EMB)
    started = time.perf_counter()
    train_self_consistent(
        model,
        observed,
        channel,
        steps=steps,
        batch=BATCH,
        lr=LR,
        generator=torch.Generator().manual_seed(seed),
        alpha=ALPHA,
        transport_steps=ODE_STEPS,
        method="euler",
        resamples=1,
        grad_clip=CLIP,
        precision=precision,
    )
    return time.perf_counter() - started, model


def moons(n: int, seed: int) -> torch.Tensor:
    """Fresh clean samples in their coordinates (``make_moons`` noise 0.1, scaled by 4 about 0.5)."""
    from sklearn.datasets import make_moons

    x, _ = make_moons(n_samples=n, noise=0.1, random_state=seed)
    return torch.from_numpy(4.0 * (x - 0.5)).float()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="a local checkout of modichirag/SCSI")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval", type=int, default=4000, help="fresh samples for the sliced W2")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "auto"),
        default="auto",
        help="our per-step transport, as the study's precision field (default auto: bf16 where the CPU has AMX or "
        "AVX512-BF16, as a user's run gets); theirs stays fp32, as their code runs",
    )
    parser.add_argument("--json", default="benchmarks/results/anchor_scsi_two_moons.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    precision = resolve(args.precision, "cpu")
    lib = _import_official(args.official)
    with tempfile.TemporaryDirectory() as root:  # their get_dataset caches the array under data_root
        clean_dataset, _, _ = lib.get_dataset("two_moons", root, seed=42, n_samples=N_DATA)
    clean = clean_dataset.array.clone()
    truth, floor_ref = moons(args.eval, 1001), moons(args.eval, 1002)
    noisy = truth.clone() + SIGMA * torch.randn(truth.shape, generator=torch.Generator().manual_seed(1003))
    eval_y = moons(args.eval, 1004) + SIGMA * torch.randn(truth.shape, generator=torch.Generator().manual_seed(1005))
    sw = lambda a, b: sliced_w2(a, b, 200, torch.Generator().manual_seed(7))  # noqa: E731
    floor, observed_sw = sw(truth, floor_ref), sw(noisy, truth)
    t_off, t_our, sw_off, sw_our = [], [], [], []
    for s in range(args.seeds):
        seconds, model, interpolant = official(lib, clean_dataset, s, args.steps)
        model.eval()
        t_off.append(seconds)
        sw_off.append(sw(interpolant.transport(model, eval_y.clone()), truth))
        seconds, model = ours(clean, s, args.steps, precision)
        model.eval()
        t_our.append(seconds)
        sw_our.append(sw(transport(model, eval_y, None, ODE_STEPS, "euler"), truth))
        print(
            f"seed {s}: official {args.steps / t_off[-1]:6.2f} steps/s SW2 {sw_off[-1]:.4f} | "
            f"theorylab {args.steps / t_our[-1]:6.2f} steps/s SW2 {sw_our[-1]:.4f}",
            flush=True,
        )
    rate_off, rate_our = args.seeds * args.steps / sum(t_off), args.seeds * args.steps / sum(t_our)
    row = dict(
        batch=BATCH,
        width=WIDTH,
        depth=DEPTH,
        t_emb=T_EMB,
        ode_steps=ODE_STEPS,
        lr=LR,
        alpha=ALPHA,
        sigma=SIGMA,
        n_data=N_DATA,
        seeds=args.seeds,
        steps=args.steps,
        threads=args.threads,
        precision=precision,
        official_steps_per_s=round(rate_off, 3),
        ours_steps_per_s=round(rate_our, 3),
        speedup=round(rate_our / rate_off, 3),
        official_sw2=[round(v, 4) for v in sw_off],
        ours_sw2=[round(v, 4) for v in sw_our],
        sw2_observed=round(observed_sw, 4),
        sw2_floor=round(floor, 4),
        torch=torch.__version__,
        cpu=cpu_label(),
    )
    print(
        f"official:  {rate_off:.2f} steps/s, SW2 after {args.steps} steps {np.mean(sw_off):.4f} "
        f"(seeds {min(sw_off):.4f}-{max(sw_off):.4f})"
    )
    print(
        f"theorylab ({precision} transport): {rate_our:.2f} steps/s, SW2 after {args.steps} steps "
        f"{np.mean(sw_our):.4f} "
        f"(seeds {min(sw_our):.4f}-{max(sw_our):.4f})"
    )
    print(f"corrupted samples SW2 {observed_sw:.4f}, clean-vs-clean floor {floor:.4f}")
    print(
        f"speed-up {row['speedup']:.2f}x  (the performance issue's target: >= 2x at the same SW2 within seed noise on "
        "AVX-512 or AMX, >= 1.3x on AVX2)"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(row, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
