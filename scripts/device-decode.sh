#!/usr/bin/env bash
# The decode kernels on one GPU, in one device call: benchmarks/generate.py with the given
# options (its decode rows report the achieved weight+KV bandwidth; its options table, timed in
# turns at its end, is the one to read), their GPU tests beside generate.py's first minutes (row
# builds: compiles and captures), then the kernels alone against cuBLAS / SDPA on the ~1B
# Llama's shapes and chained as a step (benchmarks/decode_kernels.py). Logs and results go to $OUT.
# Prepare .device/ as scripts/device-generate.sh says; then, from the lead's session:
#   run(command="bash scripts/device-decode.sh [generate.py options]", carry=[".device"], timeout_s=420)
# Within HIR_DECODE_BUDGET s (400): the tests get HIR_CAP_TESTS s (150, beside generate.py; pytest's
# -m HIR_DECODE_MARK, default gpu), the kernels the last HIR_CAP_KERNELS s (75; 0: not run),
# generate.py the rest (its optional rows stop 25 s before its end).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c 'import torch, transformers, triton; print("torch", torch.__version__, "transformers", transformers.__version__, "triton", triton.__version__)'
budget=${HIR_DECODE_BUDGET:-400}
left=$(( budget - ${HIR_CAP_KERNELS:-75} - SECONDS ))
echo "=== benchmarks/generate.py ($left s, in the background: $out/generate.txt)"
(timeout "$left" python3 benchmarks/generate.py --budget "$(( left - 25 ))" --json "$out/generate.json" "$@" 2>&1 \
  | grep --line-buffered -v "Warning\|warn(" > "$out/generate.txt") &
generate=$!
echo "=== GPU tests: decode kernels (the Triton interpreter's test is the CPU CI's: its numpy fails on this machine)"
timeout "${HIR_CAP_TESTS:-150}" python3 -m pytest -q -p no:cacheprovider -m "${HIR_DECODE_MARK:-gpu}" -rs test/python/test_decode_kernels.py test/python/test_swiglu.py test/python/test_fused_gemv.py test/python/test_fx_fusions.py test/python/test_dependent_launch.py -k "not interpreted" 2>&1 | tee "$out/gpu_tests.txt" | tail -n 25
wait "$generate"
cat "$out/generate.txt"
if [ "${HIR_CAP_KERNELS:-75}" -gt 0 ]; then
  echo "=== benchmarks/decode_kernels.py ($(( budget - SECONDS )) s left)"
  timeout "$(( budget - SECONDS ))" python3 benchmarks/decode_kernels.py 2>&1 | tee "$out/kernels.txt" | tail -n 24
fi
