#!/usr/bin/env bash
# Issue 22's single-GPU sweep on a lent device machine, in one call: the GPU tests of
# compiled kernel segments, compute regions and CUDA graphs, then the block table (benchmarks/block.py).
# Needs the modules imported on a machine with torch-mlir first:
#   python benchmarks/block.py --emit .device/block   (or another DIR, given as BLOCK_DIR=DIR)
# Usage: bash scripts/device-block.sh [block.py options, e.g. --cases host,gpu]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__)'
echo "=== GPU tests: compiled kernel segments and compute regions, graph='auto', parameter work under graphs"
python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python/test_compile_kernels.py test/python/test_compute_regions.py \
  test/python/test_graph_auto.py test/python/test_parameter_work.py 2>&1 \
  | tee "$out/gpu_tests.txt" | tail -n 15
echo "=== block table"
python3 benchmarks/block.py --from "${BLOCK_DIR:-.device/block}" --device cuda "$@" 2>&1 | grep -v "Warning\|warn(" | tee "$out/block.txt"
