#!/usr/bin/env bash
# Issue 39 on a 2- or 4-GPU machine, one call: the hir-p2p-pipeline option matrix (every
# schedule, eager / delayed / graph, against float32), the other GPU tests, the AG+matmul /
# matmul+RS rows at M in {8192, 16384} (whole collectives on both backends, the P2P
# pipelines) and rank 0's GPU timeline of the best P2P rows. Every section is bounded by
# `timeout`; logs go to $OUT (few files: at most 8 come back).
#   bash scripts/device-race.sh [SECTION ...]    (default: matrix tests overlap profile)
# Prepare here: bash ../shared/tools/device-bundle.sh (the MLIR bindings in .device/).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
sections=${*:-matrix tests overlap profile}
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
nvidia-smi -L
echo "torch $(python3 -c 'import torch; print(torch.__version__)'), $gpus GPU(s); sections: $sections"
P='hir-convert-to-communication{backend=cuda}'
quiet() { grep -v "Warning\|^\s*$\|W1\|\*\*\*\|OMP_NUM"; }
section() { echo "=== $1 ($(date +%T))"; }

for s in $sections; do
  start=$SECONDS
  case $s in
    matrix)
      section "option matrix (2 and $gpus GPUs)"
      timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu -rs -s test/python/test_p2p_matrix_gpu.py 2>&1 | tail -n 40 | tee "$out/matrix.txt" ;;
    tests)
      section "other GPU tests"
      timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python --deselect test/python/test_p2p_matrix_gpu.py::test_every_p2p_schedule_is_correct 2>&1 | tail -n 25 | tee "$out/gpu_tests.txt" ;;
    overlap)
      section "AG+matmul / matmul+RS, $gpus GPUs"
      timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node="$gpus" benchmarks/overlap.py --sizes 8192,16384 --graph \
        --pipelines "$P,hir-lower" "hir-convert-to-communication{backend=nccl},hir-lower" \
        --p2p "$P,hir-p2p-pipeline,hir-lower" \
              "$P,hir-p2p-pipeline{chunks=auto comm-stream=1},hir-lower" \
              "$P,hir-p2p-pipeline{accumulate=1 chunks=auto},hir-lower" \
              "$P,hir-p2p-pipeline{accumulate=1 chunks=2 transfer=push comm-stream=1},hir-lower" \
              "$P,hir-p2p-pipeline{accumulate=1 chunks=4 comm-stream=1},hir-lower" 2>&1 | quiet | tee "$out/overlap.md" ;;
    profile)
      section "GPU timelines, M=16384, $gpus GPUs"
      timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node="$gpus" benchmarks/profile_p2p.py --size 16384 --graph \
        --pipeline "$P,hir-p2p-pipeline{chunks=auto comm-stream=1},hir-lower" "$P,hir-p2p-pipeline{accumulate=1 chunks=auto},hir-lower" 2>&1 | quiet > "$out/profile.txt"
      tail -n 5 "$out/profile.txt" ;;
    *) echo "device-race: unknown section '$s'" >&2; exit 2 ;;
  esac
  echo "--- $s: $((SECONDS - start)) s"
done
