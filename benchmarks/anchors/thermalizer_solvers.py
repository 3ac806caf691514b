"""theorylab.data.pde's KS and Kolmogorov solvers against the thermalizer authors' solvers, side by side.

    git clone https://github.com/Chris-Pedersen/thermalizer /path/to/thermalizer   # you fetch it; never vendored
    pip install "jax[cpu]==0.4.35" jax-cfd xarray        # optional: only the Kolmogorov part needs them
    python benchmarks/anchors/thermalizer_solvers.py --official /path/to/thermalizer [--kf-n 64]

Pedersen, Zanna, Bruna (arXiv 2503.18731) make their data with two solvers, both run here from the user's checkout:

- KS: ``thermalizer/ks/solver.py``'s ``KS`` (NumPy/scipy.fftpack, Kassam-Trefethen ETDRK4 with a 16-point contour,
  complex128 full FFTs, one trajectory per object, on [0, 2 pi L), so L = 22 / (2 pi) gives our KS22 domain).
  The authors removed it at commit edc0c70 ("Remove KS stuff, not used"); when the checkout's work tree lacks it,
  the file is read with ``git show edc0c70~1:thermalizer/ks/solver.py`` from the checkout's own history (a full
  clone is needed). Ours: ``KS1D.preset("ks22")`` (torch, real FFTs, 32-point contour, float64, batched).
  Rates at batch 1 (their class as designed), and at batch B, where their ``step`` is also fed a (B, N) state: the
  class keeps one trajectory, but its arithmetic broadcasts over a leading axis (off-label, labelled as such).
- Kolmogorov: ``thermalizer/kolmogorov/simulate.py``'s ``get_sim_batch`` (jax-cfd's ``ForcedNavierStokes2D``,
  nu, drag 0.1, forcing sin(4y), 2/3 brick-wall filter, ``crank_nicolson_rk4``, float32 as jax runs by default,
  one trajectory per call, a fresh ``lax.scan`` compiled each call). Ours: ``NS2D`` (ETDRK4 in float64, the same
  forcing, drag and 2/3 rule) at the same nu, dt and grid, and ``NS2D(dtype=torch.float32)`` (their width). Their
  per-step rate is the difference of two calls of different lengths (so compilation and set-up cancel). Skipped,
  with a line saying so, when jax-cfd is missing.

One thread on both sides: ``torch.set_num_threads(1)``, ``OMP_NUM_THREADS=1`` and, before jax is imported,
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``. Agreement: from the same state,
KS trajectories agree to round-off for a while and then separate at the Lyapunov rate (printed after k steps), and
the time-averaged KS energy spectra of the two solvers agree; KF states (their initial condition, fed to both) are
compared after a short time (the schemes differ, so agreement is to the time-stepping error, not round-off).
Their ``simulate.py`` imports ``xarray`` at the top for one return value not used here; a stand-in module is used
when it is missing. Their ``solver.py`` sets ``np.seterr(over/invalid='raise')`` globally; that is undone after
loading. Nothing of theirs is copied into this repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
import types
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from theorylab.data.pde import KS1D, NS2D  # noqa: E402

KS_FILE, KS_REMOVED_AT = "thermalizer/ks/solver.py", "edc0c70"
KF_FILE = "thermalizer/kolmogorov/simulate.py"


def _module_from_source(name: str, source: str, origin: str):
    module = types.ModuleType(name)
    module.__file__ = origin
    exec(compile(source, origin, "exec"), module.__dict__)
    return module


def official_ks(path: Path):
    """Their ``KS`` class, from the work tree or (it was removed upstream) from the checkout's git history."""
    if not (path / "thermalizer").is_dir():
        raise SystemExit(
            f"--official {path}: no thermalizer/ package there; clone "
            "https://github.com/Chris-Pedersen/thermalizer (a full clone) and pass its folder"
        )
    saved = np.geterr()
    try:
        if (path / KS_FILE).is_file():
            return _module_from_source("thermalizer_ks_solver", (path / KS_FILE).read_text(), str(path / KS_FILE))
        show = subprocess.run(
            ["git", "-C", str(path), "show", f"{KS_REMOVED_AT}~1:{KS_FILE}"], capture_output=True, text=True
        )
        if show.returncode:
            raise SystemExit(
                f"--official {path}: {KS_FILE} is not in the work tree (removed upstream at "
                f"{KS_REMOVED_AT}) and `git show {KS_REMOVED_AT}~1:{KS_FILE}` failed there "
                f"({show.stderr.strip()}); pass a full (not shallow) git clone"
            )
        return _module_from_source("thermalizer_ks_solver", show.stdout, f"{KS_REMOVED_AT}~1:{KS_FILE}")
    finally:
        np.seterr(**saved)  # their module sets over/invalid='raise' for the whole process


def official_kf(path: Path):
    """Their ``simulate`` module (needs jax and jax-cfd), or the reason it cannot be loaded."""
    file = path / KF_FILE
    if not file.is_file():
        raise SystemExit(f"--official {path}: no {KF_FILE} there; clone https://github.com/Chris-Pedersen/thermalizer")
    try:
        import jax_cfd  # noqa: F401
    except ImportError as err:
        return None, f"jax-cfd is not importable here ({err}); pip install 'jax[cpu]==0.4.35' jax-cfd xarray"
    if importlib.util.find_spec("xarray") is None:
        sys.modules["xarray"] = types.ModuleType("xarray")  # only run_kolmogorov_sim's return value uses it
    spec = importlib.util.spec_from_file_location("thermalizer_kolmogorov_simulate", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, ""


def _rate(fn, steps: int, repeats: int = 3) -> float:
    """Steps per second of ``fn(steps)``, best of ``repeats`` after a warm-up of steps // 10."""
    fn(max(1, steps // 10))
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn(steps)
        best = min(best, time.perf_counter() - started)
    return steps / best


def _their_ks(lib, u0: np.ndarray, L: float, N: int, dt: float):
    """Their ``KS`` object at our domain (their domain is [0, 2 pi L)) holding the state(s) ``u0 [..., N]``."""
    ks = lib.KS(L=L / (2 * math.pi), N=N, dt=dt, nsteps=1)
    ks.v = lib.fft(u0)  # what their IC(u0=...) sets, here possibly with a leading batch axis
    return ks


def _their_steps(ks, n: int) -> None:
    for _ in range(n):
        ks.step()


def _spectrum(u: np.ndarray) -> np.ndarray:
    """Mean |u_hat_m|^2 / N^2 over every leading axis, m = 0..N/2."""
    uh = np.fft.rfft(u, axis=-1) / u.shape[-1]
    return (np.abs(uh) ** 2).reshape(-1, uh.shape[-1]).mean(0)


def bench_ks(lib, batch: int, steps: int, agree_steps: list[int], stats_traj: int, stats_steps: int) -> dict:
    ours = KS1D.preset("ks22")
    L, N, dt = ours.L, ours.N, ours.dt
    g = torch.Generator().manual_seed(0)
    u = ours.spun_up(batch, g, time=250.0)[:, 0]  # [B, N] on the attractor
    u_np = u.numpy()
    rates = {}
    rates["official_b1"] = _rate(lambda n: _their_steps(_their_ks(lib, u_np[0], L, N, dt), n), steps)
    rates["ours_b1"] = _rate(lambda n: ours.step(u[:1], n), steps)
    rates["official_bB_offlabel"] = batch * _rate(
        lambda n: _their_steps(_their_ks(lib, u_np, L, N, dt), n), max(10, steps // 4)
    )
    rates["ours_bB"] = batch * _rate(lambda n: ours.step(u, n), max(10, steps // 4))
    # agreement, trajectory by trajectory from the same states
    agree = {}
    theirs, mine, done = _their_ks(lib, u_np, L, N, dt), u.clone(), 0
    for k in sorted(agree_steps):
        _their_steps(theirs, k - done)
        mine, done = ours.step(mine, k - done), k
        diff = np.abs(np.real(np.fft.ifft(theirs.v, axis=-1)) - mine.numpy()).max()
        agree[k] = float(diff / np.sqrt((u_np**2).mean()))
    # time-averaged energy spectra over independent long runs (chaos decorrelates the two solvers)
    u0 = ours.spun_up(stats_traj, torch.Generator().manual_seed(1), time=250.0)[:, 0]
    e_ours, e_theirs = np.zeros(N // 2 + 1), np.zeros(N // 2 + 1)
    mine, theirs = u0.clone(), _their_ks(lib, u0.numpy(), L, N, dt)
    for _ in range(stats_steps // 4):
        mine = ours.step(mine, 4)
        _their_steps(theirs, 4)
        e_ours += _spectrum(mine.numpy())
        e_theirs += _spectrum(np.real(np.fft.ifft(theirs.v, axis=-1)))
    band = slice(1, 11)  # the energetic modes m = 1..10
    ratio = e_theirs[band] / e_ours[band]
    return dict(
        L=L,
        N=N,
        dt=dt,
        batch=batch,
        rates=rates,
        max_abs_diff_over_rms=agree,
        spectrum_ratio_m1_10=[round(float(r), 3) for r in ratio],
        spectrum_max_abs_log_ratio_m1_10=float(np.abs(np.log(ratio)).max()),
        stats=dict(trajectories=stats_traj, steps=stats_steps),
    )


def _jax_cfd_filter_as_ours(ours: NS2D) -> torch.Tensor:
    """jax-cfd's 2/3 brick-wall filter written as a mask on our (k_y full, k_x >= 0) half-spectrum.

    Their filter acts on rfft(ω[x, y]) and keeps k_x in [-a, a - 1] (a = int(2N/3) // 2: one more negative than
    positive wavenumber) and 0 <= k_y < b (b = int(2 (N/2 + 1) / 3)). On the k_y = 0 line the kept (-a, 0) and the
    zeroed (a, 0) are a conjugate pair, which the inverse real FFT averages (weight 1/2). For k_y < 0 the kept
    set is the conjugate of theirs, so our k_x = a column is kept only there. Ours keeps |k_x|, |k_y| < N/3.
    """
    n = ours.N
    a, b = int(2 * n / 3) // 2, int(2 * (n // 2 + 1) / 3)
    kx, ky = ours.kx.expand(n, -1), ours.ky.expand(-1, n // 2 + 1)
    inside = ky.abs() <= b - 1
    upper = (ky > 0) & (kx <= a - 1)
    lower = (ky < 0) & (kx <= a)
    axis = (ky == 0) & (kx <= a)
    mask = (inside & (upper | lower | axis)).to(torch.float64)
    return torch.where((ky == 0) & (kx == a), 0.5, mask)


def bench_kf(sim, n: int, nu: float, dt: float, steps: int, batch: int, agree_time: float) -> dict:
    import jax
    import jax_cfd.base as cfd
    import jax_cfd.base.grids as grids

    ours = NS2D(N=n, nu=nu, drag=0.1, forcing_mode=4, dt=dt)
    g = torch.Generator().manual_seed(0)

    def theirs_seconds(k: int) -> float:
        started = time.perf_counter()
        sim.get_sim_batch(n, dt, nu, [k], 1)
        return time.perf_counter() - started

    theirs_seconds(4)  # jax start-up
    # each call compiles its scan anew (about 1 s here, varying by +-0.3 s), so the span must be long
    short, long_ = min(theirs_seconds(steps // 10) for _ in range(3)), min(theirs_seconds(steps) for _ in range(3))
    rates = {"official_b1": (steps - steps // 10) / (long_ - short)}
    w1, wB = ours.random_state(1, g), ours.random_state(batch, g)
    rates["ours_b1"] = _rate(lambda k: ours.step(w1, k), steps)
    rates["ours_bB"] = batch * _rate(lambda k: ours.step(wB, k), max(10, steps // 4))
    ours32 = NS2D(N=n, nu=nu, drag=0.1, forcing_mode=4, dt=dt, dtype=torch.float32)  # their arithmetic's width
    rates["ours32_b1"] = _rate(lambda k: ours32.step(w1, k), steps)
    rates["ours32_bB"] = batch * _rate(lambda k: ours32.step(wB, k), max(10, steps // 4))
    # agreement from their initial condition: their IC recipe (seeded), both solvers integrate agree_time
    k = int(round(agree_time / dt))
    np.random.seed(0)
    key = np.random.randint(0, 100000000)  # what get_sim_batch draws after the same seed
    grid = grids.Grid((n, n), domain=((0, 2 * np.pi), (0, 2 * np.pi)))
    v0 = cfd.initial_conditions.filtered_velocity_field(jax.random.PRNGKey(key), grid, 7, 4)
    w0 = np.asarray(cfd.finite_differences.curl_2d(v0).data, dtype=np.float64)  # [x, y]
    np.random.seed(0)
    out = sim.get_sim_batch(n, dt, nu, [k, k], 1)  # index k of a k-step scan: jnp clamps to the last state
    theirs = out[-1]
    mine = ours.step(torch.from_numpy(w0.T.copy())[None, None], k)[0, 0].numpy().T  # ours is [y, x]
    edge = NS2D(N=n, nu=nu, drag=0.1, forcing_mode=4, dt=dt)
    edge._mask = _jax_cfd_filter_as_ours(edge)  # a benchmark-only swap of the private dealiasing mask
    mine_edge = edge.step(torch.from_numpy(w0.T.copy())[None, None], k)[0, 0].numpy().T
    edge32 = NS2D(N=n, nu=nu, drag=0.1, forcing_mode=4, dt=dt, dtype=torch.float32)
    edge32._mask = _jax_cfd_filter_as_ours(edge32)
    mine_edge32 = edge32.step(torch.from_numpy(w0.T.copy())[None, None], k)[0, 0].double().numpy().T
    rms = float(np.sqrt((theirs**2).mean()))
    return dict(
        N=n,
        nu=nu,
        dt=dt,
        batch=batch,
        steps_timed=steps,
        rates=rates,
        agree_time=agree_time,
        agree_steps=k,
        rel_l2_diff=float(np.sqrt(((theirs - mine) ** 2).mean()) / rms),
        rel_l2_diff_their_filter_edge=float(np.sqrt(((theirs - mine_edge) ** 2).mean()) / rms),
        rel_l2_diff_float32_their_filter_edge=float(np.sqrt(((theirs - mine_edge32) ** 2).mean()) / rms),
        rms_w=rms,
        rms_w0=float(np.sqrt((w0**2).mean())),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--official", type=Path, required=True, help="a local (full) clone of Chris-Pedersen/thermalizer"
    )
    parser.add_argument("--batch", type=int, default=64, help="KS trajectories stepped together")
    parser.add_argument("--ks-steps", type=int, default=2000)
    parser.add_argument("--ks-agree", type=int, nargs="+", default=[4, 40, 400, 2000])
    parser.add_argument("--ks-stats", type=int, nargs=2, default=[16, 4000], metavar=("TRAJ", "STEPS"))
    parser.add_argument("--kf-n", type=int, nargs="*", default=[64], help="Kolmogorov grids (none: skip)")
    parser.add_argument("--kf-nu", type=float, default=1e-3)
    parser.add_argument("--kf-dt", type=float, default=5e-3)
    parser.add_argument(
        "--kf-steps", type=int, default=4000, help="solver steps timed at 64² (fewer on larger grids, at least 400)"
    )
    parser.add_argument("--kf-batch", type=int, default=8)
    parser.add_argument("--kf-agree-time", type=float, default=0.5)
    parser.add_argument("--kf-x64", action="store_true", help="run jax-cfd in float64 (theirs runs float32)")
    parser.add_argument("--json", default="benchmarks/results/anchor_thermalizer_solvers.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ks_lib = official_ks(args.official)
    ks = bench_ks(ks_lib, args.batch, args.ks_steps, args.ks_agree, *args.ks_stats)
    r, B = ks["rates"], args.batch
    print("KS22 (L = 22, N = 64, dt = 0.25, ETDRK4 both), trajectory-steps/s, one thread:")
    print(
        f"  batch 1:  official {r['official_b1']:9.0f}   theorylab {r['ours_b1']:9.0f}   "
        f"{r['ours_b1'] / r['official_b1']:.2f}x"
    )
    print(
        f"  batch {B}: official {r['official_bB_offlabel']:9.0f}*  theorylab {r['ours_bB']:9.0f}   "
        f"{r['ours_bB'] / r['official_bB_offlabel']:.2f}x   (*their step fed a ({B}, N) state: off-label)"
    )
    print(
        f"  best against best: {r['ours_bB'] / max(r['official_b1'], r['official_bB_offlabel']):.2f}x, against "
        f"their class as designed (one trajectory): {r['ours_bB'] / r['official_b1']:.1f}x  (target >= 2x)"
    )
    print(
        "  same states, max |u_theirs - u_ours| / rms(u): "
        + ", ".join(f"{v:.1e} after {k} steps" for k, v in ks["max_abs_diff_over_rms"].items())
    )
    print(
        f"  time-averaged spectra ({args.ks_stats[0]} trajectories x {args.ks_stats[1]} steps), theirs/ours at "
        f"m = 1..10: {ks['spectrum_ratio_m1_10']} (max |ln| {ks['spectrum_max_abs_log_ratio_m1_10']:.3f})"
    )
    summary = dict(ks22=ks, kf=[], kf_skipped="")
    if args.kf_n:
        sim, why = official_kf(args.official)
        if sim is not None and args.kf_x64:
            import jax

            jax.config.update("jax_enable_x64", True)
        if sim is None:
            summary["kf_skipped"] = why
            print(f"Kolmogorov: skipped: {why}")
        for n in args.kf_n if sim is not None else []:
            steps = max(400, args.kf_steps * 64**2 // n**2)  # at 64², then scaled with the grid's cost
            kf = bench_kf(sim, n, args.kf_nu, args.kf_dt, steps, args.kf_batch, args.kf_agree_time)
            summary["kf"].append(kf)
            r = kf["rates"]
            print(
                f"Kolmogorov {n}² (nu = {args.kf_nu:g}, drag 0.1, n = 4, dt = {args.kf_dt:g}; theirs CN-RK4 "
                f"{'float64' if args.kf_x64 else 'float32'} via jax-cfd, ours ETDRK4 float64), trajectory-steps/s:"
            )
            print(
                f"  batch 1:  official {r['official_b1']:9.1f}   theorylab {r['ours_b1']:9.1f}   "
                f"{r['ours_b1'] / r['official_b1']:.2f}x"
            )
            print(
                f"  theorylab batch {args.kf_batch}: {r['ours_bB']:9.1f}   {r['ours_bB'] / r['official_b1']:.2f}x "
                f"their best (one trajectory per call)  (target >= 2x)"
            )
            print(
                f"  theorylab in float32 (NS2D(dtype=torch.float32), as theirs): batch 1 {r['ours32_b1']:9.1f}   "
                f"{r['ours32_b1'] / r['official_b1']:.2f}x;  batch {args.kf_batch} {r['ours32_bB']:9.1f}   "
                f"{r['ours32_bB'] / r['official_b1']:.2f}x"
            )
            print(
                f"  from their initial condition (rms ω {kf['rms_w0']:.2f}), after t = {kf['agree_time']} "
                f"({kf['agree_steps']} steps): relative L2 difference {kf['rel_l2_diff']:.1e}; "
                f"with their filter edge in ours {kf['rel_l2_diff_their_filter_edge']:.1e} (float32 ours: "
                f"{kf['rel_l2_diff_float32_their_filter_edge']:.1e})"
            )
    summary.update(kf_x64=args.kf_x64, cpu_count=os.cpu_count(), torch_threads=torch.get_num_threads())
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
