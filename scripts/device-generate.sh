#!/usr/bin/env bash
# Issue 34 on one GPU, in one device call: the GPU tests of compiled programs and
# hir.generate, then benchmarks/generate.py on the ~1B Llama (per-step table, first calls in
# fresh processes, hir.generate against HF generate). Logs and results go to $OUT.
# Prepare .device/ here first (once; about 60 MB with the MLIR bundle, under the 64 MiB carried):
#   bash ../shared/tools/device-bundle.sh      # the MLIR bindings
#   python scripts/device_wheels.py            # transformers and its requirements, pytest (19 MB)
# Then, from the lead's session: run(command="bash scripts/device-generate.sh", carry=[".device"], timeout_s=600)
# Usage: bash scripts/device-generate.sh [benchmarks/generate.py options]. The whole call stays
# under the device's 10 minutes: the tests get HIR_CAP_TESTS s (180), the benchmark what is left
# of HIR_GENERATE_BUDGET s (570; its
# optional rows stop 40 s before that; a hard timeout after), and its tables and JSON (written
# after every section) are in $OUT even when it is cut short.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
nvidia-smi -L
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
echo "=== GPU tests: compiled programs, hir.generate, graphs and compiled regions"
timeout "${HIR_CAP_TESTS:-180}" python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python/test_compiled_program.py test/python/test_generate.py \
  test/python/test_compute_regions.py test/python/test_graph_auto.py test/python/test_parameter_work.py test/python/test_state_in_place.py 2>&1 | tee "$out/gpu_tests.txt" | tail -n 15
left=$(( ${HIR_GENERATE_BUDGET:-570} - SECONDS ))
echo "=== benchmarks/generate.py ($left s left)"
timeout "$left" python3 benchmarks/generate.py --budget "$(( left - 40 ))" --json "$out/generate.json" "$@" 2>&1 \
  | grep --line-buffered -v "Warning\|warn(" | tee "$out/generate.txt"
