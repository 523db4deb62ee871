#!/usr/bin/env bash
# GPU checks on a lent device machine (torch with CUDA, no torch-mlir, no network).
# Run with .device carried (scripts/device-env.sh says how to prepare it). Results go to
# $OUT (or /tmp/hir-device-out).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
nvidia-smi -L
python3 -c 'import torch, torch_mlir.ir; print("torch", torch.__version__, "gpus", torch.cuda.device_count())'

echo "=== GPU tests, 1 GPU visible"
CUDA_VISIBLE_DEVICES=0 python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python 2>&1 | tee "$out/gpu_tests_1gpu.txt" | tail -n 15
echo "=== GPU tests, all GPUs (NCCL 2 and 4 ranks, lowered seed-003 pipelines)"
python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python 2>&1 | tee "$out/gpu_tests_all.txt" | tail -n 15
echo "=== main job on CUDA"
python3 -m hir.tools.demo --device cuda 2>&1 | tail -n 3 | tee "$out/demo_cuda.txt"
echo "=== host overhead on GPU"
python3 benchmarks/host_overhead.py --device cuda 2>&1 | tee "$out/host_overhead_cuda.txt"
echo "=== P2P tests, copy-engine bandwidth and the overlap benchmark (issue 5), 4 and 2 GPUs"
bash scripts/device-overlap.sh
