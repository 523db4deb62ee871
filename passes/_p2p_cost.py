"""The cost rules of hir-p2p-pipeline (documented in ``pipeline_p2p.py``): per collective in
P2P form, the time one step copies (t_c: one peer's slice at ``copy-gbps``) and computes
(t_m: its consumers' / producer's local work over n, at ``compute-tflops``), and from them
``chunks=auto`` (:func:`auto_chunks`) and ``overlap=auto`` (:func:`pipeline_pays`).
"""

import math
from typing import Optional

from torch_mlir import ir

from hir.dialect import AllgatherOp, ComputeOp, LinearOp, MatmulOp
from hir.dialect.base import get_i64_array, get_int
from hir.dialect.sharding import local_shape, sharding_of
from hir.dialect.irutils import is_a, output_index, stream_axis

MAX_AUTO_CHUNKS = 8
CONTRACTIONS = (MatmulOp.OPERATION_NAME, LinearOp.OPERATION_NAME)  # 2·M·N·K flops


def step_times(op: ir.Operation, block_ops: list, copy_gbps: float, compute_tflops: float) -> Optional[tuple]:
    """(n, t_c, t_m, extent of the axis chunks split) of the collective ``op``'s steps in
    microseconds; None when a size is dynamic or no compute op streams with it."""
    n = len(get_i64_array(op, "team"))
    ag = op.name == AllgatherOp.OPERATION_NAME
    moved = op.operands[0]
    k = get_int(op, "axis") if ag else get_int(op, "scatter_axis")
    users = _step_compute(op, op.operands[1] if ag else moved, k, block_ops, ag)
    mtype = ir.MemRefType(moved.type)
    if any(ir.ShapedType.is_dynamic_size(e) for e in mtype.shape) or not users:
        return None
    slice_elems = math.prod(mtype.shape) // (n * (1 if ag else n))
    t_copy = slice_elems * _element_bytes(mtype.element_type) / (copy_gbps * 1e3)  # us
    t_compute = sum(_flops(user) for user in users) / n / (compute_tflops * 1e6)  # us
    skipped = [k] if ag else [k, get_int(op, "axis")]
    extent = next((e for a, e in enumerate(mtype.shape) if a not in skipped), 1)
    return n, t_copy, t_compute, extent


def pipeline_pays(op: ir.Operation, block_ops: list, copy_gbps: float, compute_tflops: float, step_us: float) -> bool:
    """``overlap=auto``: whether the pipeline of ``op`` beats the whole collective. Whole:
    n·t_m + (n-1)·t_c (collective, then compute); pipelined (local step first / last):
    max(n·t_m, t_m + (n-1)·t_c) + n·step_us; so it pays when (n-1)·min(t_c, t_m) > n·step_us."""
    times = step_times(op, block_ops, copy_gbps, compute_tflops)
    if times is None:
        return False
    n, t_copy, t_compute, _ = times
    return n > 1 and (n - 1) * min(t_copy, t_compute) > n * step_us


def auto_chunks(op: ir.Operation, block_ops: list, copy_gbps: float, compute_tflops: float, chunk_us: float, ring: bool = False) -> int:
    """``chunks=auto`` for the collective ``op`` (the rule in the module docstring): the
    power of two c <= 8 minimizing min(t_c, t_m) / c + c * (n - 1) * chunk_us (the
    accumulating ``ring``: n * max(t_m, t_c, (t_m + t_c) / c) + c * (n - 1) * chunk_us)
    that divides the axis chunks split; 1 when nothing can be chunked."""
    times = step_times(op, block_ops, copy_gbps, compute_tflops)
    if times is None:
        return 1
    n, t_copy, t_compute, extent = times
    shortest = min(t_copy, t_compute)
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
