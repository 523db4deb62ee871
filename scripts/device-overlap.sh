#!/usr/bin/env bash
# Issue-5 sweep on a lent multi-GPU machine: the copy-engine P2P tests, the peer-copy
# bandwidth table (benchmarks/copy_engines.py) and benchmarks/overlap.py (with the
# hand-written copy-engine anchor row and the P2P pipelines, eager and CUDA graph) on 4 and
# 2 GPUs. Carry .device (see scripts/device-env.sh).
# Usage: bash scripts/device-overlap.sh [sizes, default 8192,16384] [GPU counts, default "4 2"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
sizes=${1:-8192,16384}
counts=${2:-4 2}
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
echo "=== P2P tests on GPUs"
python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python/ops/test_p2p.py 2>&1 | tee "$out/p2p_tests.txt" | tail -n 5
for n in $counts; do
  [ "$gpus" -ge "$n" ] || continue
  echo "=== copy-engine bandwidth, $n GPUs"
  python3 -m torch.distributed.run --standalone --nproc_per_node="$n" benchmarks/copy_engines.py 2>&1 \
    | grep "^|\|^Peer" | tee "$out/copy_engines_${n}gpu.txt"
  echo "=== overlap benchmark, $n GPUs"
  python3 -m torch.distributed.run --standalone --nproc_per_node="$n" benchmarks/overlap.py --sizes "$sizes" --graph \
    --pipelines 'hir-convert-to-communication{backend=cuda},hir-lower' \
    --p2p 'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower' \
          'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring},hir-lower' \
          'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=2},hir-lower' \
          'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=4},hir-lower' \
          'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring chunks=2},hir-lower' \
          'hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring chunks=4},hir-lower' 2>&1 \
    | grep -v "Warning\|^\s*$\|W1\|\*\*\*\|OMP_NUM" | tee "$out/overlap_${n}gpu.txt"
done
