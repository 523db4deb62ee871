"""``hir-p2p-pipeline{algorithm=local-first|ring streams=1 copies=1 chunks=1|auto backend=
transfer=pull|push comm-stream=0|1 accumulate=0|1}``: nvFuser's AllgatherP2p / AG_matmul_P2p and its
reduce-scatter mirror, as copy-engine pipelines.

A collective whose device-split axis is also its stream axis becomes one step per team
member; each step moves ONE peer's slice with ``hir.shift`` (a paired send+recv, a
copy-engine copy with ``backend = "cuda"``). The shifts run in order on the comm stream,
so each copy gets the links to itself and lands as early as it can; the compute of a step
runs on a pool stream (step j on stream ``j mod streams``) and waits only for its own copy.
The slices peers read live in a ``memref.alloc {hir.symmetric}`` buffer, so a shift reads
the peer's buffer in place (no staging copy), and its dealloc guards the buffer's reuse.

Before (after hir-convert-to-communication; A is [4, 2, 8] split along axis 0)::

    %w = "hir.allgather"(%A, %tmp) {axis = 0, backend = "cuda", stream_axis = 0, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64}

After: one local step reading the own shard in place and a loop of peer steps, each a
``hir.shift`` then the matmul of the slice it brought (``_p2p_allgather.py``); a producer +
reduce-scatter becomes per-destination compute, shifts and one ``hir.reduction``
(``_p2p_reduce_scatter.py``). The module gets ``hir.num_streams``: at least the pool
streams the steps use (compute streams, plus the reduce-scatter's reducer / receiver
stream, plus the comm stream), so none of them alias.

Run it after hir-convert-to-communication and before hir-lower:
``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower`` (without it,
hir-lower's stream lowering runs such a collective whole, un-pipelined). Options:

- ``backend`` (default: the collective's): the shifts' backend.
- ``streams``: the pool streams the compute cycles through (1: compute in step order, like
  the hand-written copy-engine pipeline; n: one stream per step).
- ``copies`` > 1: each shift's copy split over that many streams (several copy engines).
- ``chunks`` > 1: each peer's slice moved and computed in that many parts
  (``hir.alias_chunk`` along its first axis that is neither the stream nor the device axis).
  ``chunks=auto`` picks the count per collective by the rule below.
- ``transfer=push``: reduce-scatter steps push (the producer writes its partial straight
  into the owner's symmetric buffer and signals after the copy; ``hir.shift``'s
  ``transfer = "push"``) instead of the owner pulling after a handshake. The all-gather side
  keeps pulling (its shards are published once behind one barrier: no handshakes either).
- ``comm-stream=1``: the shifts go on a pool stream of their own that the module marks
  high priority (``hir.high_priority_streams``), so a copy's launch is not queued behind
  the compute kernels; without it they go on the user stream.
- ``accumulate=1``: a summing reduce-scatter whose producer has an accumulating form
  (``hir.matmul {accumulate}``) becomes a ring in which each rank adds its partial to the
  received sum in the matmul's epilogue (``out += a @ b``), with no slot reduction
  (``_p2p_accumulate.py``; ``algorithm`` and ``streams`` do not apply: part c of every step
  runs on pool stream c). Other reduce-scatters keep the slot form.

``chunks=auto``. Per collective, with n team members, one step moves B bytes (one peer's
slice) and computes F flops (its consumers / producer; matmuls count 2·M·N·K, other ops
one flop an element). With the rates ``copy-gbps`` (a peer copy, GB/s) and
``compute-tflops`` (TFLOP/s) a step copies for t_c = B / copy-gbps and computes for t_m =
F / compute-tflops. A pipeline of c chunks exposes about min(t_c, t_m) / c (filling and
draining) and costs about c · (n - 1) · ``chunk-us`` of per-part overhead (launches, waits),
so the best count is near c* = sqrt(min(t_c, t_m) / ((n - 1) · chunk-us)): ``auto`` takes
the c in {1, 2, 4, 8} of least min(t_c, t_m) / c + c · (n - 1) · chunk-us among those that
divide the chunked axis (1 when nothing can be chunked). Defaults are measured on 4x H200
(benchmarks/RESULTS.md, issue 5 runs): ``copy-gbps=300`` (a peer pull, ``copy_engines.py``:
289-329 GB/s), ``compute-tflops=800`` (the bf16 AG+matmul "matmul alone" row: 2.7e11 flops
in 0.33 ms) and ``chunk-us=15`` (chunks=2 against 1 in run B's graph rows). E.g. 4 ranks,
M=8192, K=8192, N/4=2048: t_c = 112 us, t_m = 86 us a step: c* = 1.4, cost 1: 131, 2: 133
-> 1; at M=16384 t_m = 172 us: 2 (cost 176 against 217).

The accumulating ring (``accumulate=1``) is a wavefront: step s + 1 of part i needs step s
of part i from the neighbour, so a step takes about max(t_m, t_c, (t_m + t_c) / c) and
``auto`` takes the c of least n · max(t_m, t_c, (t_m + t_c) / c) + c · (n - 1) · chunk-us
(two parts already hide the copy when t_c <= t_m; one part serializes copy and matmul).
Both times use the rank's local work (a split output counts its local shard).
"""

import dataclasses
import math
from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import DEFAULT_NUM_STREAMS, AllgatherOp, ComputeOp, MatmulOp, ReduceScatterOp, add_high_priority_stream, module_num_streams, set_module_num_streams
from hir.dialect.base import get_i64_array, get_int
from hir.dialect.comm import BACKENDS
from hir.dialect.sharding import local_shape, sharding_of
from hir.passes._p2p_accumulate import build_accumulate, can_accumulate
from hir.passes._p2p_allgather import build_allgather
from hir.passes._p2p_reduce_scatter import build_reduce_scatter
from hir.passes._p2p_steps import ALGORITHMS, comm_stream_index, compute_streams
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.helpers import func_ops, is_a, is_p2p_form, output_index, stream_axis

TRANSFERS = ("pull", "push")
MAX_AUTO_CHUNKS = 8


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser AG_matmul_P2p); options algorithm, streams, copies, chunks (a number or auto), backend, transfer, comm-stream, accumulate, copy-gbps, compute-tflops, chunk-us."
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1
    chunks: str = "1"  # a number, or "auto" (the rule in the module docstring)
    transfer: str = "pull"
    comm_stream: bool = False
    copy_gbps: float = 300.0
    compute_tflops: float = 800.0
    chunk_us: float = 15.0
    accumulate: bool = False

    def run(self, module: ir.Module) -> None:
        self._check_options()
        needed = 0  # pool streams the built pipelines use
        high_priority = set()  # their comm streams' pool indices
        for func in func_ops(module):
            body = func.regions[0].blocks[0]
            todo = [op.operation for op in body.operations if is_p2p_form(op.operation)]
            for op in todo:
                block_ops = list(body.operations)
                ag = op.name == AllgatherOp.OPERATION_NAME
                opts = dataclasses.replace(self, accumulate=self.accumulate and not ag and can_accumulate(op, block_ops))
                opts = dataclasses.replace(opts, chunks=opts._chunks_for(op, block_ops))
                needed = max(needed, opts._pool_streams(op))
                if self.comm_stream:
                    high_priority.add(comm_stream_index(opts, len(get_i64_array(op, "team"))))
                if ag:
                    build_allgather(opts, op, block_ops)
                elif opts.accumulate:
                    build_accumulate(opts, op, block_ops)
                else:
                    build_reduce_scatter(opts, op, block_ops)
        if needed:
            _fix_num_streams(module, needed)
            for index in sorted(high_priority):
                add_high_priority_stream(module, index)

    def _check_options(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", *BACKENDS):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of {', '.join(BACKENDS)}")
        if self.transfer not in TRANSFERS:
            raise PassFailure(f"hir-p2p-pipeline: transfer '{self.transfer}' is not one of {', '.join(TRANSFERS)}")
        for option in ("streams", "copies"):
            if getattr(self, option) < 1:
                raise PassFailure(f"hir-p2p-pipeline: {option} must be at least 1, got {getattr(self, option)}")
        if str(self.chunks) != "auto":
            try:
                chunks = int(self.chunks)
            except ValueError:
                raise PassFailure(f"hir-p2p-pipeline: chunks must be a number or 'auto', got '{self.chunks}'") from None
            if chunks < 1:
                raise PassFailure(f"hir-p2p-pipeline: chunks must be at least 1, got {chunks}")
        for option in ("copy_gbps", "compute_tflops", "chunk_us"):
            if not getattr(self, option) > 0:
                raise PassFailure(f"hir-p2p-pipeline: {option.replace('_', '-')} must be positive, got {getattr(self, option)}")

    def _chunks_for(self, op: ir.Operation, block_ops: list) -> int:
        """``chunks`` as a number for ``op``'s pipeline (``auto``: :func:`auto_chunks`)."""
        if str(self.chunks) != "auto":
            return int(self.chunks)
        return auto_chunks(op, block_ops, self.copy_gbps, self.compute_tflops, self.chunk_us, self.accumulate)

    def _pool_streams(self, op: ir.Operation) -> int:
        """The compute streams of ``op``'s pipeline, plus the reduce-scatter's reducer /
        receiver (pool index ``streams``) and the comm stream (the index after it)."""
        n = len(get_i64_array(op, "team"))
        if self.comm_stream:
            return comm_stream_index(self, n) + 1
        streams = compute_streams(self, n)
        receiver = op.name == ReduceScatterOp.OPERATION_NAME and not self.accumulate and (self.chunks > 1 or self.transfer == "push")
        return streams + (1 if receiver else 0)


def auto_chunks(op: ir.Operation, block_ops: list, copy_gbps: float, compute_tflops: float, chunk_us: float, ring: bool = False) -> int:
    """``chunks=auto`` for the collective ``op`` (the rule in the module docstring): the
    power of two c <= 8 minimizing min(t_c, t_m) / c + c * (n - 1) * chunk_us (the
    accumulating ``ring``: n * max(t_m, t_c, (t_m + t_c) / c) + c * (n - 1) * chunk_us)
    that divides the axis chunks split; 1 when nothing can be chunked."""
    n = len(get_i64_array(op, "team"))
    ag = op.name == AllgatherOp.OPERATION_NAME
    moved = op.operands[0]
    k = get_int(op, "axis") if ag else get_int(op, "scatter_axis")
    users = _step_compute(op, op.operands[1] if ag else moved, k, block_ops, ag)
    mtype = ir.MemRefType(moved.type)
    if any(ir.ShapedType.is_dynamic_size(e) for e in mtype.shape) or not users:
        return 1
    slice_elems = math.prod(mtype.shape) // (n * (1 if ag else n))
    t_copy = slice_elems * _element_bytes(mtype.element_type) / (copy_gbps * 1e3)  # us
    t_compute = sum(_flops(user) for user in users) / n / (compute_tflops * 1e6)  # us
    shortest = min(t_copy, t_compute)
    skipped = [k] if ag else [k, get_int(op, "axis")]
    extent = next((e for a, e in enumerate(mtype.shape) if a not in skipped), 1)
    candidates = [c for c in (1, 2, 4, MAX_AUTO_CHUNKS) if extent % c == 0]
    if ring:
        return min(candidates, key=lambda c: n * max(t_copy, t_compute, (t_copy + t_compute) / c) + c * (n - 1) * chunk_us)
    return min(candidates, key=lambda c: shortest / c + c * (n - 1) * chunk_us)


def _step_compute(op: ir.Operation, buffer: ir.Value, k: int, block_ops: list, ag: bool) -> list:
    """The stream-parallel compute ops reading (all-gather) / writing (reduce-scatter)
    ``buffer`` along stream axis ``k``: what one step computes, n times over."""
    found = []
    for other in block_ops:
        other = other.operation
        if other == op or buffer not in list(other.operands) or stream_axis(other) != k or not is_a(other, ComputeOp):
            continue
        writes = other.operands[output_index(other)] == buffer
        if writes != ag:
            found.append(other)
    return found


def _flops(op: ir.Operation) -> float:
    """This rank's work in ``op`` (all its stream steps): 2·M·N·K for a matmul, an element
    each else, on the local shards."""
    elems = math.prod(_local_shape(op.operands[output_index(op)]))
    if op.name == MatmulOp.OPERATION_NAME:
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


def _fix_num_streams(module: ir.Module, needed: int) -> None:
    """``hir.num_streams``: kept when a pass already fixed it (it must be large enough),
    else the default pool grown to what the pipelines need."""
    try:
        fixed = module_num_streams(module)
    except ValueError as err:
        raise PassFailure(f"hir-p2p-pipeline: {err}") from None
    if fixed is None:
        set_module_num_streams(module, max(DEFAULT_NUM_STREAMS, needed))
    elif fixed < needed:
        raise PassFailure(f"hir-p2p-pipeline: the pipelines use {needed} pool streams, but the module fixes hir.num_streams = {fixed}; lower streams= or raise it")
