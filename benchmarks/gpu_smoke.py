"""Every study's paper preset on a GPU, in a short slice: the paper's model sizes, few steps, one seed, one grid point.

    bash benchmarks/gpu_smoke.sh                      # every study, <= 10 min on one H200
    python benchmarks/gpu_smoke.py --only attention-rank thermalizer --flops
    python benchmarks/gpu_smoke.py --check            # CPU: every slice builds a valid config (a test runs this)

What it is for: on a GPU machine that is lent for a few minutes, find out which paper-preset code paths run at the
paper's sizes, how long a slice takes, how much GPU memory it peaks at, and (``--flops``, training-dominated
studies) the achieved matmul rate. It is not a reproduction: the slices cut steps, seeds and grids, so the verdicts
it prints are about a few hundred steps and mostly say "failed" or "not decided"; the columns that matter are
status, seconds, peak memory and FLOP/s, and for the claims that only a GPU preset decides (``decided_by`` a preset
with ``gpu_minutes``; ``theorylab claims`` lists them) whether the slice's run reached a decision
(``gpu_claims``: claim -> outcome).

Each study runs in its own process (a crash or an out-of-memory error stays one row) under a per-study timeout
(``--timeout``, default 45 s), and the table is written to ``benchmarks/results/gpu_smoke.json``. A study whose
paper preset needs a local resource (a corpus, an image folder, weights) the machine lacks reports it as
``missing`` with the one-line hint, and the script goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Overrides applied on top of each study's paper preset. Model sizes stay the paper's; steps, seeds, Monte Carlo
# repetitions and grids shrink to what a ~20 s slice can do on one GPU. Keep one entry per registered study
# (tests/test_gpu_smoke.py checks that, and that every slice validates).
SLICES: dict[str, dict[str, Any]] = {
    "attention-diffusion-map": {"draws": 2},
    "attention-indexed-models": {"compare_seeds": 1, "untied_dims": (200,), "moment_n": 20_000},
    "attention-rank": {
        "steps": 300,
        "seeds": 1,
        "n_layers": (1,),
        "n_heads": (1, 4),
        "width_multipliers": (1,),
        "length_n_points": (16,),
        "length_ranks": (1,),
    },
    "attention-sensitivity": {
        "gain_lengths": (16, 256),
        "deepnorm_seeds": 1,
        "lm_steps": 20,
        "postln_steps": 20,
        "postln_warmup_steps": 10,
        "lm_corpus": "stdlib",
    },
    "axial-networks": {
        "epochs": 1,
        "all_dims_seeds": 1,
        "mini_seeds": 1,
        "mini_pretrain_steps": 50,
        "mini_finetune_steps": 20,
        "pde_seeds": 1,
        "pde_pretrain_steps": 100,
        "pde_finetune_steps": 20,
        "gp_eval_dims": (2,),
    },
    "bilinear-attention-operator": {"pair_steps": 200, "pair_seeds": 1, "pair_log_every": 100, "corpus": "stdlib"},
    "compositional-reasoning": {
        "gru_leaves": (16,),
        "gru_hidden": (4, 128),
        "gru_orders": ("heavy_first",),
        "gru_steps": 300,
        "gru_seeds": 1,
        "tf_tree_depths": (3,),
        "tf_steps": 300,
        "tf_seeds": 1,
    },
    "distributional-similarity": {"runs": 2, "steps": 300, "shape_iters": 5, "fragment_runs": 2},
    "fast-slow-attention": {"lm_pool_sizes": (4,), "lm_seeds": 2, "phi_steps": 300, "lm_steps": 20},
    "ff-vs-attention": {
        "steps": 200,
        "seeds": 1,
        "value_ranks": (2, 128),
        "p_sweep": (0.5,),
        "lm_steps": 100,
        "lm_ranks": (1, 64),
        "lm_probes": 256,
        "lm_corpus": "stdlib",
    },
    "focus-dilution": {"steps": 300, "seeds": 1, "evaluate_every": 100},
    "generative-leap": {
        "leap_n": 100_000,
        "leap_links": ("parity3",),
        "parity_dims": (32, 64),
        "parity_c": (1.0, 4.0),
        "seeds": 1,
        "monomial_seeds": 4,
    },
    "geometric-memorization": {
        "train_n_entities": (1024,),
        "train_relations": (1,),
        "width_multipliers": (1, 4),
        "seeds": 1,
        "steps": 300,
        "evaluate_every": 100,
        "transfer_steps": 100,
        "assoc_n_entities": (1024,),
        "assoc_widths": (16, 64),
        "twohop_dims": (13,),
    },
    "graph-tokenization": {
        "n_nodes": (16,),
        "tasks": ("degree",),
        "n_layers": (1, 2),
        "seeds": 1,
        "steps": 300,
        "srg_n_layers": (1,),
        "srg_steps": 100,
        "train_graphs": 500,
        "test_graphs": 100,
    },
    "implicit-patches": {
        "d_models": (16,),
        "seeds": 1,
        "hf_archs": ("gemma3",),
        "hf_n_layers": 4,
        "hf_vocab_size": 32768,
        "hf_prompt_lengths": (128,),
        "hf_generate": 8,
        "hf_dtypes": ("float32", "bfloat16"),
        "hf_train_steps": 20,
        "hf_corpus": "stdlib",
        "icl_steps": 100,
    },
    "local-perturbation-geometry": {"seeds": 1, "base_max_steps": 300, "lora_steps": 20},
    "mean-field-width": {"dims": (16,), "ks": (3,), "widths": (64, 1024), "seeds": 1, "max_steps": 500},
    "monomial-networks": {
        "signature_dims": (6,),
        "signature_ranks": (1,),
        "signature_teachers": 2,
        "metric_teachers": 2,
        "metric_runs": 4,
        "gd_runs": 4,
        "gd_steps": 500,
    },
    "mpnn-algorithms": {
        "sparsities": (0.0,),
        "losses": ("mse",),
        "seeds": 1,
        "control_seeds": 1,
        "steps": 200,
        "test_nodes": (16, 1024),
        "test_families": ("er",),
        "knap_seeds": 1,
        "mst": False,
    },
    "multi-index-estimators": {
        "battery_seeds": 2,
        "collapse_dims": (50, 100),
        "collapse_alphas": (1.0, 10.0),
        "collapse_seeds": 2,
        "gap_dims": (50,),
        "gap_alphas": (1.0,),
    },
    "multi-index-gradient-flow": {
        "fd_dims": (64,),
        "fd_batches": (20_000,),
        "fd_links": ("staircase",),
        "fd_seeds": 1,
        "fd_time": 1.0,
        "mc_n": 100_000,
    },
    "multiscale-closure": {"direct_steps": 100, "multiscale_steps": 50, "qg_seeds": 1, "paper_steps": 100},
    "multiscale-single-index": {
        "sgd_cases": ((2, (16,)),),
        "sgd_seeds": 1,
        "sgd_sample_ratio": 20.0,
        "unfold_dims": (8,),
        "chaos2_dims": (12,),
        "edge_n": 100_000,
    },
    "propagation-of-chaos": {
        "dims": (16,),
        "widths": (64, 1024),
        "seeds": 1,
        "steps": 200,
        "m_ref": 8192,
        "lrs": (0.2,),
        "sample_ns": (4096,),
        "slow_seeds": 1,
        "slow_steps": 50,
        "sample_seeds": 1,
    },
    "query-key-asymmetry": {"lm_steps": 30, "eval_batches": 2, "corpus": "stdlib"},
    "representation-collapse": {"recall_steps": 300},
    "rg-order-parameter": {"steps": 300},
    "rmt-diffusion": {
        "ns": (256, 1024),
        "sigma2": (0.01,),
        "draws": 100,
        "var_draws": 200,
        "deep_steps": 200,
        "deep_seeds": 64,
    },
    "self-consistent-interpolants": {
        "gauss_steps": 200,
        "moons_steps": 200,
        "moons_channels": ("noise",),
        "mask2d_steps": 200,
        "digits_steps": 200,
        "eval_n": 2000,
        "oracle_n": 5000,
    },
    "self-refining-surrogate": {
        "steps": 300,
        "horizon": 100,
        "baseline_horizon": 50,
        "spectrum_window": 50,
        "kolmogorov_spinup": 500,
        "kolmogorov_train_trajectories": 4,
        "kolmogorov_train_horizon": 100,
        "kolmogorov_test_trajectories": 4,
        "kolmogorov_horizon": 200,
        "kolmogorov_emulator_steps": 200,
        "kolmogorov_steps": 200,
        "qg_spinup": 500,
        "qg_train_trajectories": 4,
        "qg_train_horizon": 100,
        "qg_test_trajectories": 4,
        "qg_horizon": 200,
        "qg_emulator_steps": 200,
        "qg_steps": 200,
    },
    "ssm-consensus": {"runs": 2, "gate_runs": 2, "hf_runs": 1, "mamba_n_layers": 4, "train_steps": 20},
    "thermalizer": {
        "denoiser_steps": 300,
        "horizon": 200,
        "gauss_chains": 2000,
        "kolmogorov_spinup": 500,
        "kolmogorov_train_horizon": 100,
        "kolmogorov_horizon": 200,
        "kolmogorov_test_trajectories": 4,
        "kolmogorov_emulator_steps": 200,
        "kolmogorov_denoiser_steps": 200,
    },
    "truth-subspaces": {
        "n_entities": (64,),
        "n_layers": (1,),
        "rhos": (0.9,),
        "final_norms": ("layer",),
        "seeds": 1,
        "steps": 300,
        "evaluate_at": (50, 100, 200, 300),
        "lm_steps": 100,
    },
}


def _study_slugs() -> list[str]:
    from theorylab.core.study import all_studies

    return [s for s, st in all_studies().items() if st.module.startswith("theorylab.studies")]


def check() -> list[str]:
    """Every registered study has a slice and every slice is a valid paper config: the errors, one per line."""
    from theorylab.core.study import get_study

    errors = []
    slugs = _study_slugs()
    for slug in slugs:
        if slug not in SLICES:
            errors.append(f"{slug}: no slice in benchmarks/gpu_smoke.py SLICES")
            continue
        try:
            get_study(slug).make_config("paper", **SLICES[slug])
        except Exception as err:  # noqa: BLE001  (reported, one line per study)
            errors.append(f"{slug}: {str(err).splitlines()[0]}")
    errors += [f"{slug}: slice for a study that is not registered" for slug in SLICES if slug not in slugs]
    return errors


def run_one(slug: str, device: str, store: str, flops: bool) -> dict[str, Any]:
    """One slice in this process: wall time, peak GPU memory, verdict counts and (``flops``) the matmul FLOP rate."""
    import torch

    from theorylab.core.errors import MissingResource
    from theorylab.core.runner import execute
    from theorylab.core.store import Store
    from theorylab.core.study import get_study

    cuda = device.startswith("cuda") and torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    row: dict[str, Any] = {"study": slug, "device": device}
    counter = None
    if flops:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
    started = time.perf_counter()
    try:
        if counter is not None:
            with counter:
                res = execute(slug, "paper", 0, SLICES[slug], store=Store(store), force=True, device=device)
        else:
            res = execute(slug, "paper", 0, SLICES[slug], store=Store(store), force=True, device=device)
        row.update(status=res.status, **res.counts())
        # The claims only a GPU preset decides: what the slice's run made of each (its judge ran on paper-sized
        # models; a cut slice may still say "not decided", and the outcome says which).
        gpu_only = {c.id for c in get_study(slug).claims if get_study(slug).presets[c.decided_by].on_gpu}
        row["gpu_claims"] = {v.id: v.outcome for v in res.verdicts if v.id in gpu_only}
    except MissingResource as err:
        row.update(status="missing", message=str(err).splitlines()[0])
    except Exception as err:  # noqa: BLE001  (one row per study; the table goes on)
        row.update(status="error", message=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    if cuda:
        torch.cuda.synchronize()
    row["seconds"] = round(time.perf_counter() - started, 2)
    if cuda:
        row["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
    if counter is not None:
        total = counter.get_total_flops()
        row["tflop"] = round(total / 1e12, 3)
        row["tflop_per_s"] = round(total / 1e12 / max(row["seconds"], 1e-9), 2)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="study slugs (default: every registered study)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--timeout", type=float, default=45.0, help="seconds per study")
    parser.add_argument("--budget", type=float, default=570.0, help="seconds in all; later studies are skipped")
    parser.add_argument("--flops", action="store_true", help="count matmul FLOPs (torch FlopCounterMode; slower)")
    parser.add_argument("--json", default="benchmarks/results/gpu_smoke.json")
    parser.add_argument("--check", action="store_true", help="only validate the slices (no run; CPU is fine)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check:
        errors = check()
        print("\n".join(errors) if errors else f"{len(SLICES)} slices, every one a valid paper config")
        return 1 if errors else 0
    if args.one:
        print(json.dumps(run_one(args.one, args.device, args.store, args.flops)), flush=True)
        return 0
    errors = check()
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    slugs = args.only or _study_slugs()
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as store:
        for slug in slugs:
            left = args.budget - (time.perf_counter() - t0)
            if left < 5:
                rows.append({"study": slug, "status": "skipped", "message": f"over the {args.budget:.0f} s budget"})
                print(f"{slug:30s} skipped (over the {args.budget:.0f} s budget)", flush=True)
                continue
            cmd = [sys.executable, __file__, "--one", slug, "--device", args.device, "--store", store]
            cmd += ["--flops"] if args.flops else []
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=min(args.timeout, left))
                lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
                row = (
                    json.loads(lines[-1])
                    if lines
                    else {"study": slug, "status": "crashed", "message": (out.stderr.strip().splitlines() or ["?"])[-1]}
                )
            except subprocess.TimeoutExpired:
                row = {"study": slug, "status": "timeout", "seconds": round(min(args.timeout, left), 1)}
            rows.append(row)
            extra = "".join(f"  {k} {row[k]}" for k in ("peak_gib", "tflop_per_s") if k in row)
            if row.get("gpu_claims"):
                decided = sum(o != "undecided" for o in row["gpu_claims"].values())
                extra += f"  GPU-only claims decided {decided}/{len(row['gpu_claims'])}"
            print(
                f"{slug:30s} {row['status']:9s} {row.get('seconds', float('nan')):7.1f} s{extra}"
                f"{'  ' + row['message'] if 'message' in row else ''}",
                flush=True,
            )
    total = time.perf_counter() - t0
    print(f"total {total:.0f} s over {len(rows)} studies")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps(
            {"device": args.device, "total_s": round(total, 1), "host": os.uname()[1], "studies": rows}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
