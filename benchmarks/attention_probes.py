"""Attention-geometry probes on a GPT-2-small-shaped model (12 layers, 768 wide, 12 heads) on CPU.

    python benchmarks/attention_probes.py [--json benchmarks/results/attention_probes.json]

Times, on a random-init Hugging Face GPT-2 of that shape (nothing downloaded): extracting all 144
query-key operators M; ``head_geometry`` (symmetry, directionality, inertia, rotation, ranks of every
head from the d_h x d factors, batched over heads) against the per-matrix functions on the full
768 x 768 operators (timed on 12 heads and scaled to 144); θ (greedy, vectorised) on every attention row
of a 256-token batch against the exact per-row solver on rows of <= 20 keys; and the operator-vs-logit
check (``operator_logit_errors``) over all heads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from _timing import best_time
from theorylab.nn.hf import random_init
from theorylab.probes.bilinear_operators import head_operators
from theorylab.probes.qk_scores import operator_logit_errors
from theorylab.probes.spectra import effective_rank, stable_rank
from theorylab.theory.bilinear import directionality_score, head_geometry, inertia, rotation_content, symmetry_score
from theorylab.theory.softmax import theta_exact, theta_greedy


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/attention_probes.json")
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    model = random_init(
        "gpt2", dtype=torch.float32, n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=1000
    )
    t_extract = best_time(lambda: head_operators(model), 2)
    ops = head_operators(model)
    t_geometry = best_time(lambda: head_geometry(ops), 2)
    sample = [op.M.double() for op in ops[:12]]

    def per_matrix():
        for M in sample:
            (
                symmetry_score(M),
                directionality_score(M),
                inertia(M),
                rotation_content(M),
                stable_rank(M),
                effective_rank(M),
            )

    start = time.perf_counter()
    per_matrix()
    t_full = (time.perf_counter() - start) * len(ops) / len(sample)
    ids = torch.randint(0, 1000, (1, args.tokens), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        attentions = model(ids, output_attentions=True).attentions
    P = torch.stack([a[0] for a in attentions]).double()  # (12, 12, T, T)
    t_greedy = best_time(lambda: theta_greedy(P), 2)
    short = P[..., 3:20, :20]  # causal rows with 4..20 keys
    start = time.perf_counter()
    for row in short.reshape(-1, 20):
        theta_exact(row[row > 0].numpy())
    t_exact = time.perf_counter() - start
    n_exact = short.reshape(-1, 20).shape[0]
    t_check = best_time(lambda: operator_logit_errors(model, ids[:, :64]), 1)
    summary = {
        "heads": len(ops),
        "d_model": 768,
        "extract_s": round(t_extract, 3),
        "head_geometry_s": round(t_geometry, 3),
        "per_matrix_full_s_estimated": round(t_full, 2),
        "ratio_full_to_factored": round(t_full / t_geometry, 1),
        "theta_greedy_rows": int(P[..., 0].numel()),
        "theta_greedy_s": round(t_greedy, 3),
        "theta_exact_rows": n_exact,
        "theta_exact_s": round(t_exact, 3),
        "operator_logit_check_s": round(t_check, 2),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }
    print(
        f"GPT-2-small shape, {len(ops)} heads: extract M {t_extract:.2f} s; every head's geometry from the factors "
        f"{t_geometry:.2f} s vs "
        f"{t_full:.1f} s on the full 768 x 768 matrices ({t_full / t_geometry:.0f}x)"
    )
    print(
        f"θ greedy on {summary['theta_greedy_rows']} rows of {args.tokens} keys: {t_greedy:.2f} s; θ exact on "
        f"{n_exact} rows of <= 20 keys: {t_exact:.2f} s; "
        f"M vs the modules' logits, all heads, 64 tokens: {t_check:.2f} s"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
