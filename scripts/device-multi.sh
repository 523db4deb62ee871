#!/usr/bin/env bash
# Issue-25 sweep on whatever GPU count the machine has (torchrun --nproc_per_node = that
# count; with 4 or 8 GPUs also 2): the GPU tests, the end-to-end MLP layer
# (benchmarks/tp_overlap.py: imported SP / TP MLP, collectives whole and pipelined, against
# hand-written torch, DTensor and async-TP) and the AG+matmul / matmul+RS rows
# (benchmarks/overlap.py, M in {8192, 16384}, K = N = 8192, bf16) with the newer
# hir-p2p-pipeline forms. Tables go to $OUT (RESULTS-ready markdown); rows that need more
# GPUs than present print "skipped: needs N GPUs".
#
# Prepare on the CPU machine (no torch-mlir on the GPU machine), then carry .device:
#   python benchmarks/tp_overlap.py --emit .device/tp_overlap --worlds 1,2,4,8
# Usage: bash scripts/device-multi.sh [SECTION ...]   (default: tests e2e overlap)
#   tests    GPU tests (pytest -m gpu on $HIR_MULTI_TESTS, default test/python)
#   e2e      benchmarks/tp_overlap.py --from $HIR_E2E_DIR (default .device/tp_overlap)
#   overlap  copy-engine bandwidth + benchmarks/overlap.py (needs 2 GPUs)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
sections=${*:-tests e2e overlap}
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
counts=$gpus
[ "$gpus" -gt 2 ] && counts="$gpus 2"
emitted=${HIR_E2E_DIR:-.device/tp_overlap}
tests=${HIR_MULTI_TESTS:-test/python}
P='hir-convert-to-communication{backend=cuda}'
quiet() { grep -v "Warning\|^\s*$\|W1\|\*\*\*\|OMP_NUM"; }
nvidia-smi -L
echo "torch $(python3 -c 'import torch; print(torch.__version__)'), $gpus GPU(s); sections: $sections"

for section in $sections; do
  case $section in
    tests)
      echo "=== GPU tests, $gpus GPU(s) ($tests; multi-GPU cases skip above the count)"
      # shellcheck disable=SC2086
      python3 -m pytest -q -p no:cacheprovider -m gpu -rs $tests 2>&1 | tee "$out/multi_tests_${gpus}gpu.txt" | tail -n 15 ;;
    e2e)
      for n in $counts; do
        echo "=== end-to-end MLP layer, $n GPU(s)$([ "$n" -lt 2 ] && echo ' (smoke: no communication at world size 1)')"
        python3 -m torch.distributed.run --standalone --nproc_per_node="$n" benchmarks/tp_overlap.py --from "$emitted" 2>&1 \
          | quiet | tee "$out/tp_overlap_${n}gpu.md"
      done ;;
    overlap)
      if [ "$gpus" -lt 2 ]; then
        echo "=== AG+matmul / matmul+RS overlap rows: skipped: needs 2 GPUs (have $gpus)" | tee "$out/overlap_skipped.txt"
        continue
      fi
      for n in $counts; do
        echo "=== copy-engine bandwidth, $n GPUs"
        python3 -m torch.distributed.run --standalone --nproc_per_node="$n" benchmarks/copy_engines.py 2>&1 \
          | grep "^|\|^Peer" | tee "$out/copy_engines_${n}gpu.md"
        echo "=== AG+matmul / matmul+RS, $n GPUs"
        python3 -m torch.distributed.run --standalone --nproc_per_node="$n" benchmarks/overlap.py --sizes 8192,16384 --graph \
          --pipelines "$P,hir-lower" \
          --p2p "$P,hir-p2p-pipeline,hir-lower" \
                "$P,hir-p2p-pipeline{algorithm=ring},hir-lower" \
                "$P,hir-p2p-pipeline{chunks=auto comm-stream=1},hir-lower" \
                "$P,hir-p2p-pipeline{transfer=push comm-stream=1},hir-lower" \
                "$P,hir-p2p-pipeline{accumulate=1 chunks=auto},hir-lower" \
                "$P,hir-p2p-pipeline{accumulate=1 chunks=2 transfer=push comm-stream=1},hir-lower" \
                "$P,hir-p2p-pipeline{accumulate=1 chunks=4 comm-stream=1},hir-lower" 2>&1 \
          | quiet | tee "$out/overlap_${n}gpu.md"
      done ;;
    *)
      echo "device-multi: unknown section '$section' (tests e2e overlap)" >&2; exit 2 ;;
  esac
done
