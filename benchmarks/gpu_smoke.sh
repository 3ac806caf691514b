#!/usr/bin/env bash
# Every study's paper preset on one GPU, in short slices (<= 10 minutes in all): per-study status, seconds, peak GPU
# memory and matmul TFLOP/s. Results: benchmarks/results/gpu_smoke.json. See benchmarks/gpu_smoke.py.
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_smoke: no CUDA device visible to torch')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec python benchmarks/gpu_smoke.py --device cuda --timeout 45 --budget 570 --flops "$@"
