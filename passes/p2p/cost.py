"""The cost rules of hir-p2p-pipeline (``pipeline.py``), which its analysis
(``analysis.py``) applies: per collective in P2P form, the time one step copies (t_c: one
peer's slice at ``copy-gbps``) and computes (t_m: its consumers' / producer's local work
over n, at ``compute-tflops``), and from them ``overlap=auto`` (:func:`pipeline_pays`) and
``chunks=auto`` (:func:`auto_chunks`); for the tensor-parallel contraction + all-reduce
pair, :func:`rs_allgather_pays`.

``overlap=auto``. With n team members and one step copying for t_c and computing for t_m
(as for ``chunks=auto`` below), the whole collective then its compute takes n·t_m +
(n-1)·t_c; the pipeline, its local step first (all-gather) or last (reduce-scatter), takes
about max(n·t_m, t_m + (n-1)·t_c) plus ``step-us`` a step (the per-step launches, waits
and handshakes: 20 us by default, the eager P2P rows' excess over their graph replays in
the issue-5 runs being larger). So it pipelines when (n-1)·min(t_c, t_m) > n·step-us:
when each step hides more than it costs. Dynamic sizes, a collective with no compute
op streaming with it, or one whose team spans nodes (``hir.ranks_per_node``), stay
whole. E.g. the benchmark AG+matmul (bf16, K = N = 8192, 4 ranks) at M=8192: 3·86 = 258 us > 80 us: pipeline; the SP MLP
of benchmarks/sp_mlp.py at 256 tokens, d_model 64: well under a microsecond a step: whole.

``chunks=auto``. Per collective, with n team members, one step moves B bytes (one peer's
slice) and computes F flops (its consumers / producer; matmuls count 2·M·N·K, other ops
one flop an element). With the rates ``copy-gbps`` (a peer copy, GB/s) and
``compute-tflops`` (TFLOP/s) a step copies for t_c = B / copy-gbps and computes for t_m =
F / compute-tflops. A pipeline of c chunks exposes about min(t_c, t_m) / c (filling and
draining) and costs about c · (n - 1) · ``chunk-us`` of per-part overhead (launches, waits),
so the best count is near c* = sqrt(min(t_c, t_m) / ((n - 1) · chunk-us)): ``auto`` takes
the c in {1, 2, 4, 8} of least min(t_c, t_m) / c + c · (n - 1) · chunk-us among those that
divide the chunked axis (1 when nothing can be chunked). Defaults are measured on 4x H200
(benchmarks/RESULTS.md): ``copy-gbps=300`` (a peer pull, ``copy_engines.py``:
289-329 GB/s), ``compute-tflops=800`` (the bf16 AG+matmul "matmul alone" row: 2.7e11 flops
in 0.33 ms) and ``chunk-us=15`` (chunks=2 against 1 in the CUDA-graph rows). E.g. 4 ranks,
M=8192, K=8192, N/4=2048: t_c = 112 us, t_m = 86 us a step: c* = 1.4, cost 1: 131, 2: 133
-> 1; at M=16384 t_m = 172 us: 2 (cost 176 against 217).

The accumulating ring (``accumulate=1``) is a wavefront: step s + 1 of part i needs step s
of part i from the neighbour, so a step takes about max(t_m, t_c, (t_m + t_c) / c) and
``auto`` takes the c of least n · max(t_m, t_c, (t_m + t_c) / c) + c · (n - 1) · chunk-us
(two parts already hide the copy when t_c <= t_m; one part serializes copy and matmul).
Both times use the rank's local work (a split output counts its local shard).

The contraction + all-reduce pair (``allreduce=``; ``allreduce.py``, ``rs_allgather.py``).
With n team members, the contraction's time t_m (its flops at ``compute-tflops``) and t_c
the time to copy one row block of the output (1/n of it) at ``copy-gbps``, the forms cost:

- whole: t_m + 2 (n - 1) t_c (the all-reduce at bus bandwidth, 2 (n - 1) / n of the buffer);
- reduce-scatter + all-gather (``rs-ag``): the reduce-scatter pipelined with the contraction
  as above, max(t_m, t_m / n + (n - 1) t_c) + n · step-us, then the whole all-gather,
  (n - 1) t_c (the slot reduction, memory-bound, left out). It beats whole exactly when
  (n - 1) · min(t_c, t_m / n) > n · step-us: :func:`pipeline_pays`'s condition for the
  reduce-scatter it pipelines (:func:`rs_allgather_pays`);
- row blocks (``chunked``, c blocks): t_m + 2 (n - 1) t_c + (c - 1) · chunk-us. Its
  all-reduces are NCCL kernels: they take SMs from the matmul blocks they overlap, so the
  overlap hides nothing. Measured (benchmarks/RESULTS.md, TP MLP,
  CUDA graphs): 4 blocks 1.15x hand-written TP against 1.06x whole on 4x H200, 1.09x
  against 1.04x on 2x H100. So it never costs less than whole: ``overlap=auto`` and
  ``chunks=auto`` leave it whole, and only a fixed ``chunks`` > 1 (with ``overlap=on``)
  chunks the pair.

A collective chunked on streams (nvFuser's seed-003 form: a stream axis that is not its
device axis, so hir-lower issues one collective per chunk after that chunk's compute) and
run by NCCL, ``backend = "nccl"``: NCCL's kernels need the SMs the chunks' matmuls hold,
so the chunks do not overlap, and each smaller collective and matmul costs more than its
share. Measured (benchmarks/RESULTS.md, 4x H200, CUDA graphs, x
max(comm, matmul)): AG+matmul in 4 stream chunks 2.13-2.30x against 1.83-1.89x for the
same calls whole and in sequence; matmul+RS 1.92-2.00x against 1.88-1.90x; written by hand
with every process-group setting tried (whole_nccl.py), never below sequential.
:func:`runs_whole_on_nccl`: under ``overlap=auto`` such a collective drops its stream axis
and runs once, whole, and so does its producer / consumer compute unless another chunked
collective needs its chunks (:func:`chunked_only_with`): the sequential calls. Its NCCL
call reads / writes the buffer in place, one call per row of the axes before its device
axis, the rows issued as one NCCL group (``interpreter/backends/process_group.py``).
Measured (RESULTS.md, 4x H200): matmul+RS 1.90-1.94x against
sequential's 1.87-1.93x, AG+matmul 2.03-2.09x against 1.85-1.89x; the 4-stream seed form
1.94-2.05x and 2.12-2.33x.

``overlap=auto`` therefore takes rs-ag where the rows split evenly over the team and
:func:`rs_allgather_pays`, else whole. E.g. the TP MLP's second matmul of
benchmarks/tp_overlap.py (tokens 8192, d 4096, hidden 16384, bf16): 2 ranks, t_m = 687 us,
t_c = 112 us: whole 911 us, rs-ag 839 us; 4 ranks, t_m = 344 us, t_c = 56 us: whole 680 us,
rs-ag 592 us: rs-ag on both.
"""

import math

from torch_mlir import ir

from hir.dialect import AllgatherOp, CollectiveOp, ComputeOp, LinearOp, MatmulOp
from hir.dialect.base import required_i64_array, required_int, required_str
from hir.dialect.irutils import is_a, is_p2p_form, output_index, stream_axis, users_in_block
from hir.dialect.sharding import local_shape, sharding_of

MAX_AUTO_CHUNKS = 8
CONTRACTIONS = (MatmulOp.OPERATION_NAME, LinearOp.OPERATION_NAME)  # 2·M·N·K flops


def step_times(op: ir.Operation, copy_gbps: float, compute_tflops: float) -> tuple | None:
    """(n, t_c, t_m, extent of the axis chunks split) of the collective ``op``'s steps in
    microseconds; None when a size is dynamic or no compute op streams with it."""
    n = len(required_i64_array(op, "team"))
    ag = op.name == AllgatherOp.OPERATION_NAME
    moved = op.operands[0]
    k = required_int(op, "axis") if ag else required_int(op, "scatter_axis")
    users = _step_compute(op, op.operands[1] if ag else moved, k, ag)
    mtype = ir.MemRefType(moved.type)
    if any(ir.ShapedType.is_dynamic_size(e) for e in mtype.shape) or not users:
        return None
    slice_elems = math.prod(mtype.shape) // (n * (1 if ag else n))
    t_copy = slice_elems * _element_bytes(mtype.element_type) / (copy_gbps * 1e3)  # us
    t_compute = sum(_flops(user) for user in users) / n / (compute_tflops * 1e6)  # us
    skipped = [k] if ag else [k, required_int(op, "axis")]
    extent = next((e for a, e in enumerate(mtype.shape) if a not in skipped), 1)
    return n, t_copy, t_compute, extent


def pipeline_pays(op: ir.Operation, copy_gbps: float, compute_tflops: float, step_us: float) -> bool:
    """``overlap=auto``: whether the pipeline of ``op`` beats the whole collective. Whole:
    n·t_m + (n-1)·t_c (collective, then compute); pipelined (local step first / last):
    max(n·t_m, t_m + (n-1)·t_c) + n·step_us; so it pays when (n-1)·min(t_c, t_m) > n·step_us."""
    times = step_times(op, copy_gbps, compute_tflops)
    if times is None:
        return False
    n, t_copy, t_compute, _ = times
    return n > 1 and (n - 1) * min(t_copy, t_compute) > n * step_us


def auto_chunks(op: ir.Operation, copy_gbps: float, compute_tflops: float, chunk_us: float, ring: bool = False) -> int:
    """``chunks=auto`` for the collective ``op`` (the rule in the module docstring): the
    power of two c <= 8 minimizing min(t_c, t_m) / c + c * (n - 1) * chunk_us (the
    accumulating ``ring``: n * max(t_m, t_c, (t_m + t_c) / c) + c * (n - 1) * chunk_us)
    that divides the axis chunks split; 1 when nothing can be chunked."""
    times = step_times(op, copy_gbps, compute_tflops)
    if times is None:
        return 1
    n, t_copy, t_compute, extent = times
    shortest = min(t_copy, t_compute)
    candidates = [c for c in (1, 2, 4, MAX_AUTO_CHUNKS) if extent % c == 0]
    if ring:
        return min(
            candidates, key=lambda c: n * max(t_copy, t_compute, (t_copy + t_compute) / c) + c * (n - 1) * chunk_us
        )
    return min(candidates, key=lambda c: shortest / c + c * (n - 1) * chunk_us)


def rs_allgather_pays(
    op: ir.Operation, producer: ir.Operation, copy_gbps: float, compute_tflops: float, step_us: float
) -> bool:
    """``overlap=auto`` for the contraction ``producer`` + all-reduce ``op`` pair: whether
    the reduce-scatter + all-gather form beats the whole pair (the rule in the module
    docstring: (n - 1) · min(t_c, t_m / n) > n · step_us)."""
    n = len(required_i64_array(op, "team"))
    out_type = ir.MemRefType(op.operands[1].type)
    t_c = math.prod(out_type.shape) / n * _element_bytes(out_type.element_type) / (copy_gbps * 1e3)  # one row block, us
    t_m = _flops(producer) / (compute_tflops * 1e6)
    whole = t_m + 2 * (n - 1) * t_c
    rs_ag = max(t_m, t_m / n + (n - 1) * t_c) + n * step_us + (n - 1) * t_c
    return n > 1 and rs_ag < whole


def _step_compute(op: ir.Operation, buffer: ir.Value, k: int, ag: bool) -> list:
    """The stream-parallel compute ops reading (all-gather) / writing (reduce-scatter)
    ``buffer`` along stream axis ``k``: what one step computes, n times over."""
    found = []
    for other in users_in_block(buffer, op.block):
        if other == op or stream_axis(other) != k or not is_a(other, ComputeOp):
            continue
        writes = other.operands[output_index(other)] == buffer
        if writes != ag:
            found.append(other)
    return found


def _flops(op: ir.Operation) -> float:
    """This rank's work in ``op`` (all its stream steps): 2·M·N·K for a matmul or linear,
    an element each else, on the local shards."""
    elems = math.prod(_local_shape(op.operands[output_index(op)]))
    if op.name in CONTRACTIONS:
        return 2.0 * elems * _local_shape(op.operands[0])[-1]
    return float(elems)


def _local_shape(value: ir.Value) -> list:
    return local_shape(ir.MemRefType(value.type).shape, sharding_of(value))


def _element_bytes(element: ir.Type) -> int:
    width = getattr(element, "width", None)
    if width is None:
        for cls in (ir.IntegerType, ir.FloatType):
            try:
                width = cls(element).width
                break
            except (ValueError, TypeError):
                continue
    return max(1, (width or 32) // 8)


def runs_whole_on_nccl(op: ir.Operation) -> bool:
    """Whether ``op`` is a collective chunked on streams that NCCL runs (``backend =
    "nccl"``, a stream axis that is not its device axis): under ``overlap=auto`` it runs
    whole (module docstring)."""
    return stream_axis(op) is not None and not is_p2p_form(op) and required_str(op, "backend") == "nccl"


def chunked_only_with(op: ir.Operation) -> list:
    """The compute ops chunked on streams only to overlap the collective ``op``: its
    stream-parallel producer (reduce-scatter) or consumers (all-gather), unless another
    chunked collective reads or writes one of their operands. Once ``op`` runs whole their
    chunks overlap nothing, and one call beats the chunks (the benchmarks' "sequential"
    row: a whole matmul, not four on four streams)."""
    k = stream_axis(op)
    assert k is not None, "a collective chunked on streams (runs_whole_on_nccl)"
    ag = op.name == AllgatherOp.OPERATION_NAME
    compute = _step_compute(op, op.operands[1] if ag else op.operands[0], k, ag)
    return [c for c in compute if not _chunked_with_another(c, op)]


def _chunked_with_another(compute: ir.Operation, op: ir.Operation) -> bool:
    return any(
        owner != op and is_a(owner, CollectiveOp) and stream_axis(owner) is not None
        for value in compute.operands
        for owner in (use.owner.operation for use in value.uses)
    )
