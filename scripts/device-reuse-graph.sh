#!/usr/bin/env bash
# Issue 5 items 3-5 on a GPU machine (run with .device carried; see device-check.sh):
# GPU tests of reuse / CUDA graphs, pipeline peak memory, host overhead with graph replay,
# and Chrome traces of a lowered 4-stream program (eager and graph replay). Results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
nvidia-smi -L | head -n 1
export CUDA_VISIBLE_DEVICES=0
echo "=== GPU tests (reuse, graphs, trace)"
python3 -m pytest -q -p no:cacheprovider -rs test/python/test_stream_reuse_graph_trace.py 2>&1 | tail -n 8 | tee "$out/tests.txt"
echo "=== pipeline peak memory, cuda"
python3 benchmarks/pipeline_memory.py --device cuda --dtype bf16 --m 16384 --k 8192 --n 8192 --chunks 16 2>&1 | tee "$out/pipeline_memory_cuda.txt"
python3 benchmarks/pipeline_memory.py --device cuda --dtype bf16 --m 16384 --k 8192 --n 8192 --chunks 64 2>&1 | tail -n 6 | tee -a "$out/pipeline_memory_cuda.txt"
echo "=== host overhead with graph replay"
python3 benchmarks/host_overhead.py --device cuda 2>&1 | tee "$out/host_overhead_graph.txt"
echo "=== traces"
python3 - <<'PY'
import sys
sys.path.insert(0, "test/python")
import hir
from test_stream_reuse_graph_trace import mlp
m = hir.parse(mlp(chunks=16, rows=1024, k=4096, n=4096, dt="bf16"))
hir.lower(m, "hir-lower-reuse")
open("/tmp/mlp_lowered.mlir", "w").write(str(m))
PY
run="python3 -m hir.tools.run_cli /tmp/mlp_lowered.mlir random:16x1024x4096 random:4096x4096 random:4096x4096 --device cuda --num-streams 4 --warmup 2"
$run --no-cuda-graph --trace "$out/trace_eager.json" 2>&1 | grep -v USDT
$run --cuda-graph --trace "$out/trace_graph.json" 2>&1 | grep -v USDT
python3 benchmarks/trace_overlap.py "$out/trace_eager.json" "$out/trace_graph.json" | tee "$out/trace_overlap.txt"
gzip -f "$out"/trace_*.json
