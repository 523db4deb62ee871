#!/usr/bin/env bash
# The decode kernels on one GPU, in one device call: their GPU tests, the kernels alone
# against cuBLAS / SDPA on the ~1B Llama's shapes (benchmarks/decode_kernels.py), then
# benchmarks/generate.py with the given options (its decode rows report the achieved
# weight+KV bandwidth). Logs and results go to $OUT.
# Prepare .device/ as scripts/device-generate.sh says; then, from the lead's session:
#   run(command="bash scripts/device-decode.sh [generate.py options]", carry=[".device"], timeout_s=420)
# The tests get HIR_CAP_TESTS s (90), the kernels HIR_CAP_KERNELS s (90), generate.py what is
# left of HIR_DECODE_BUDGET s (400).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c 'import torch, transformers, triton; print("torch", torch.__version__, "transformers", transformers.__version__, "triton", triton.__version__)'
echo "=== GPU tests: decode kernels"
timeout "${HIR_CAP_TESTS:-90}" python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python/test_decode_kernels.py 2>&1 | tee "$out/gpu_tests.txt" | tail -n 15
echo "=== benchmarks/decode_kernels.py"
timeout "${HIR_CAP_KERNELS:-90}" python3 benchmarks/decode_kernels.py 2>&1 | tee "$out/kernels.txt" | tail -n 20
left=$(( ${HIR_DECODE_BUDGET:-400} - SECONDS ))
echo "=== benchmarks/generate.py ($left s left)"
timeout "$left" python3 benchmarks/generate.py --budget "$(( left - 25 ))" --json "$out/generate.json" "$@" 2>&1 \
  | grep --line-buffered -v "Warning\|warn(" | tee "$out/generate.txt"
