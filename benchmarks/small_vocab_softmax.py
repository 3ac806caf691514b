"""Cross-entropy over few classes on a CPU: torch's kernel against the same rows padded to 16 classes.

    python benchmarks/small_vocab_softmax.py [--rows 65536] [--threads 1] [--json benchmarks/results/small_vocab.json]

torch's CPU (log-)softmax over a last dimension shorter than one vector register takes a slow path; focus-dilution
trains on V = 10 tokens, where the loss's forward and backward were about half of its quick preset's time.
:func:`theorylab.nn.token_losses.pad_classes` appends ``-inf`` classes up to 16 (one AVX-512 register of float32)
where that pays. Printed, per class count and dtype: the best time of one cross-entropy forward and backward on
``--rows`` rows, plain and padded, their ratio, and the largest difference of the losses and gradients (padding
adds ``exp(-inf) = 0``: rounding only). Both are timed in one run, best of ``--repeats`` calls each.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from _timing import best_time
from theorylab.core.cpu import cpu_label
from theorylab.nn.token_losses import PADDED_CLASSES


def loss_and_grad(logits: torch.Tensor, targets: torch.Tensor, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = logits.detach().requires_grad_(True)
    wide = F.pad(x, (0, pad - x.shape[-1]), value=float("-inf")) if pad > x.shape[-1] else x
    loss = F.cross_entropy(wide, targets, reduction="none")
    loss.sum().backward()
    return loss.detach(), x.grad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=65536)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", default="benchmarks/results/small_vocab_softmax.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    rows = []
    capability = torch.backends.cpu.get_cpu_capability()
    print(f"{cpu_label()}, torch {torch.__version__} ({capability}), {args.threads} thread(s)")
    for dtype in (torch.float32, torch.float64):
        for classes in (2, 4, 8, 10, 12, 15, 16, 32):
            logits = 3 * torch.randn(args.rows, classes, generator=gen, dtype=dtype)
            targets = torch.randint(0, classes, (args.rows,), generator=gen)
            pad = max(classes, PADDED_CLASSES)
            plain_s = best_time(partial(loss_and_grad, logits, targets, classes), args.repeats)
            padded_s = best_time(partial(loss_and_grad, logits, targets, pad), args.repeats)
            (l0, g0), (l1, g1) = loss_and_grad(logits, targets, classes), loss_and_grad(logits, targets, pad)
            row = dict(
                dtype=str(dtype).removeprefix("torch."),
                classes=classes,
                padded_to=pad,
                plain_ms=round(1e3 * plain_s, 3),
                padded_ms=round(1e3 * padded_s, 3),
                ratio=round(plain_s / padded_s, 2),
                max_loss_diff=float((l0 - l1).abs().max()),
                max_grad_diff=float((g0 - g1).abs().max()),
            )
            rows.append(row)
            print(
                f"{row['dtype']:8s} V = {classes:3d}: plain {row['plain_ms']:7.3f} ms, padded to {pad} "
                f"{row['padded_ms']:7.3f} ms, {row['ratio']:5.2f}x; differences {row['max_loss_diff']:.1e} (loss), "
                f"{row['max_grad_diff']:.1e} (gradient)",
                flush=True,
            )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"cpu": cpu_label(), "rows": args.rows, "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
