#!/usr/bin/env bash
# Issue 34 on one GPU, in one device call: the GPU tests of compiled programs and
# hir.generate, then benchmarks/generate.py on the ~1B Llama (per-step table, first calls in
# fresh processes, hir.generate against HF generate). Logs and results go to $OUT.
# Prepare .device/ here first (once; about 60 MB with the MLIR bundle, under the 64 MiB carried):
#   bash ../shared/tools/device-bundle.sh      # the MLIR bindings
#   python scripts/device_wheels.py            # transformers and its requirements, pytest (19 MB)
# Then, from the lead's session: run(command="bash scripts/device-generate.sh", carry=[".device"])
# Usage: bash scripts/device-generate.sh [benchmarks/generate.py options]; BUDGET=seconds
# bounds the benchmark's optional rows (default 360: tests + benchmark stay under 10 minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
nvidia-smi -L
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
echo "=== GPU tests: compiled programs, hir.generate, graphs and compiled regions"
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -rs test/python/test_compiled_program.py test/python/test_generate.py \
  test/python/test_compute_regions.py test/python/test_graph_auto.py 2>&1 | tee "$out/gpu_tests.txt" | tail -n 15
echo "=== benchmarks/generate.py"
python3 benchmarks/generate.py --budget "${BUDGET:-360}" --json "$out/generate.json" "$@" 2>&1 \
  | grep -v "Warning\|warn(" | tee "$out/generate.txt"
