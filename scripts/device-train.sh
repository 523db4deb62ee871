#!/usr/bin/env bash
# The training checks on a lent GPU machine (one GPU is enough), with .device carried
# (scripts/device-env.sh says how to prepare it). Logs go to $OUT.
# Usage: bash scripts/device-train.sh [SECTION ...]   (default: tests tiny full)
#   tests  the GPU tests of the compiled-program paths (one GPU visible)
#   tiny   benchmarks/train.py --tiny on CUDA (every row; a quick correctness pass)
#   full   benchmarks/train.py: the ~1B Llama, batch 4 x 2048, bf16 autocast, fused AdamW
#          ($HIR_TRAIN_ROWS: a subset of its rows)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi -L
status=0
for section in ${*:-tests tiny full}; do
  case $section in
    tests)
      echo "=== GPU tests, one GPU"
      CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs test/python/test_compiled_program.py \
        test/python/test_interpreter_gpu.py test/python/test_graph_auto.py test/python/test_compute_regions.py test/python/test_generate.py \
        test/python/test_training_gpu.py \
        2>&1 | tee "$out/train_gpu_tests.txt" | tail -n 15 || status=1 ;;
    tiny)
      echo "=== benchmarks/train.py --tiny on CUDA"
      timeout 300 python3 benchmarks/train.py --tiny --device cuda --rows "${HIR_TRAIN_ROWS:-eager,hir eager,hir default}" 2>&1 | tee "$out/train_tiny.txt" || status=1 ;;
    full)
      echo "=== benchmarks/train.py (~1B Llama)"
      timeout 560 python3 benchmarks/train.py --json "$out/train.json" ${HIR_TRAIN_ROWS:+--rows "$HIR_TRAIN_ROWS"} 2>&1 | tee "$out/train_full.txt" || status=1 ;;
    *) echo "device-train: unknown section '$section' (tests tiny full)" >&2; exit 2 ;;
  esac
done
exit $status
