#!/usr/bin/env bash
# GPU checks on a lent device machine (torch with CUDA, no torch-mlir, no network).
# Run with .device carried (scripts/device-env.sh says how to prepare it). Results go to
# $OUT (or /tmp/hir-device-out).
# Usage: bash scripts/device-check.sh [SECTION ...]   (default: all, in this order)
#   tests1   GPU tests with one GPU visible
#   tests    GPU tests with every GPU (NCCL and copy-engine P2P on 2 and 4 GPUs, seed-003 pipelines)
#   demo     the main job on CUDA
#   host     benchmarks/host_overhead.py on one GPU
#   sp       benchmarks/sp_mlp.py on 2 GPUs (needs .device/sp_mlp: python benchmarks/sp_mlp.py --emit .device/sp_mlp)
#   overlap  scripts/device-overlap.sh (P2P tests, copy-engine bandwidth, overlap benchmark)
#   multi    scripts/device-multi.sh (issues 25, 39: option matrix, LLaMA layer, TP/SP MLP layer,
#            overlap rows, sanitizer, on whatever GPU count is present, within a 9-minute budget;
#            needs .device from scripts/prepare-device39.sh; not in the default list)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
sections=${*:-tests1 tests demo host sp overlap}
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
nvidia-smi -L
python3 -c 'import torch, torch_mlir.ir; print("torch", torch.__version__, "gpus", torch.cuda.device_count())'

for section in $sections; do
  case $section in
    tests1)
      echo "=== GPU tests, 1 GPU visible"
      CUDA_VISIBLE_DEVICES=0 python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python 2>&1 | tee "$out/gpu_tests_1gpu.txt" | tail -n 15 ;;
    tests)
      echo "=== GPU tests, all $gpus GPUs (NCCL and P2P on 2 and 4 ranks, lowered seed-003 pipelines)"
      python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python 2>&1 | tee "$out/gpu_tests_all.txt" | tail -n 15 ;;
    demo)
      echo "=== main job on CUDA"
      python3 -m hir.tools.demo --device cuda 2>&1 | tail -n 3 | tee "$out/demo_cuda.txt" ;;
    host)
      echo "=== host overhead on GPU"
      python3 benchmarks/host_overhead.py --device cuda 2>&1 | tee "$out/host_overhead_cuda.txt" ;;
    sp)
      if [ "$gpus" -lt 2 ] || [ ! -f .device/sp_mlp/config.json ]; then
        echo "=== SP MLP: skipped (needs 2 GPUs and .device/sp_mlp)"; continue
      fi
      echo "=== SP MLP from PyTorch, 2 GPUs: collectives whole vs hir-p2p-pipeline"
      python3 -m torch.distributed.run --standalone --nproc_per_node=2 benchmarks/sp_mlp.py --from .device/sp_mlp 2>&1 \
        | grep -v "Warning\|^\s*$\|W1\|\*\*\*\|OMP_NUM" | tee "$out/sp_mlp_2gpu.txt" ;;
    overlap)
      echo "=== P2P tests, copy-engine bandwidth and the overlap benchmark (issue 5), 4 and 2 GPUs"
      bash scripts/device-overlap.sh ;;
    multi)
      bash scripts/device-multi.sh ;;
    *)
      echo "device-check: unknown section '$section' (tests1 tests demo host sp overlap multi)" >&2; exit 2 ;;
  esac
done
