"""Cost of implicit weight patches, as ratios to the plain forward passes they replace.

    python benchmarks/weight_patches.py [--json benchmarks/results/weight_patches.json]

1. Our block stacks (depth 8, d = 64, context 32, float64): the multi-layer algorithm
   (``chain_patches``: with-context pass + query-only pass with a patch per layer) vs one
   with-context forward, per family.
2. Hugging Face Gemma 3 (the card's small random-init config, float64, norms in float64): one
   ``hf_chain_patches`` call vs one forward on the prompt, and greedy generation with patches
   recomputed per token vs plain greedy decoding on the growing prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import torch

from _timing import best_time
from theorylab.nn.blocks import FAMILIES, make_stack
from theorylab.probes.weight_patches import chain_patches, hf_chain_patches, patched_greedy


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="benchmarks/results/weight_patches.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1 is fastest for these tiny ops on 2 cores)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    X = torch.randn(33, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    blocks = {}
    for family in FAMILIES:
        stack = make_stack(family, 8, 64, seed=0)

        def forward(stack=stack) -> None:
            with torch.no_grad():
                stack(X)

        t_fwd = best_time(forward, args.repeats)
        t_patch = best_time(lambda stack=stack: chain_patches(stack, X, "full"), args.repeats)
        blocks[family] = {
            "forward_ms": round(1e3 * t_fwd, 2),
            "chain_ms": round(1e3 * t_patch, 2),
            "ratio": round(t_patch / t_fwd, 2),
        }
        print(
            f"{family:9s} depth 8, d 64, context 32: forward {1e3 * t_fwd:6.2f} ms, patches {1e3 * t_patch:6.2f} ms "
            f"-> {t_patch / t_fwd:.1f}x"
        )
    summary = {"blocks": blocks}
    try:
        from theorylab.nn.hf import full_precision_norms, random_init
    except ImportError:  # pragma: no cover
        print("transformers missing: HF part skipped")
    else:
        model = random_init(
            "gemma3",
            hidden_size=64,
            intermediate_size=256,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
            vocab_size=512,
            sliding_window=8,
        )
        ids = torch.randint(0, 512, (1, 16), generator=torch.Generator().manual_seed(0))
        steps = 20
        with full_precision_norms(model):

            def plain_forward() -> None:
                with torch.no_grad():
                    model(input_ids=ids)

            def plain_greedy() -> None:
                seq = ids
                for _ in range(steps):
                    with torch.no_grad():
                        nxt = model(input_ids=seq).logits[0, -1].argmax()
                    seq = torch.cat([seq, nxt.view(1, 1)], dim=1)

            t_fwd = best_time(plain_forward, args.repeats)
            t_chain = best_time(lambda: hf_chain_patches(model, ids), args.repeats)
            t_greedy = best_time(plain_greedy, 1)
            t_patched = best_time(lambda: patched_greedy(model, ids, steps), 1)
        summary["hf_gemma3"] = {
            "forward_ms": round(1e3 * t_fwd, 2),
            "chain_ms": round(1e3 * t_chain, 2),
            "chain_ratio": round(t_chain / t_fwd, 2),
            "greedy_steps": steps,
            "greedy_s": round(t_greedy, 3),
            "patched_greedy_s": round(t_patched, 3),
            "greedy_ratio": round(t_patched / t_greedy, 2),
        }
        print(
            f"HF Gemma 3 (4 layers, width 64, prompt 16): forward {1e3 * t_fwd:.1f} ms, patches {1e3 * t_chain:.1f} "
            f"ms -> {t_chain / t_fwd:.1f}x; "
            f"{steps} greedy tokens: plain {t_greedy:.2f} s, patched (both streams) {t_patched:.2f} s -> "
            f"{t_patched / t_greedy:.1f}x"
        )
    summary.update(cpu_count=os.cpu_count(), torch_threads=torch.get_num_threads(), python=platform.python_version())
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
