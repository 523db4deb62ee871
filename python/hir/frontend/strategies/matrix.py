"""Matrix ops: ``aten.linear`` / ``matmul`` / ``mm`` / ``bmm`` as hir compute ops (``hir.linear``,
``hir.matmul``) and, inside kernel segments, ``mm`` / ``bmm`` / ``matmul`` / ``addmm`` /
``baddbmm``. DTensor's matrix rules (``_matrix_ops.py``), on one mesh axis:

* linear: replicated input x column-split weight -> output split on its last axis
  (ColwiseParallel; a split input is gathered first); split contraction on both sides
  (RowwiseParallel) -> a partial sum; split rows x replicated weight -> split rows (data /
  sequence parallel);
* matmul: as linear for ``[..., M, K] @ [..., K, N]``, and equal split batch dims stay split.
"""

from torch_mlir.dialects import torch as T

from hir.dialect import LinearOp, MatmulOp
from hir.frontend.strategies.pointwise import check_broadcasts
from hir.frontend.strategies.registry import (
    PARTIAL,
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    Partial,
    Split,
    register_compute_form,
    register_op_strategy,
    same_dtype,
)
from hir.frontend.torch_ir import constant_value_or, rank_of


@register_compute_form(T.AtenLinearOp)
def linear_form(op) -> ComputeSpec | None:
    x, w, b = op.operands
    bias = [] if constant_value_or(b, "tensor") is None else [b]
    if rank_of(w) == 2 and same_dtype(op, [x, w] + bias):
        return ComputeSpec(LinearOp, [x, w], {}, bias, transposed_rhs=True, streams_rows=rank_of(x) >= 2)
    return None


@register_compute_form(T.AtenMatmulOp, T.AtenMmOp, T.AtenBmmOp)
def matmul_form(op) -> ComputeSpec | None:
    a, b = op.operands
    if same_dtype(op, [a, b]):
        return ComputeSpec(MatmulOp, [a, b], {}, [], streams_rows=rank_of(a) >= 2 and rank_of(b) == 2)
    return None


@register_op_strategy(
    LinearOp,
    doc="weight split on its rows (ColwiseParallel: the output split on its last dim, a split input gathered "
    "first); weight split on the contraction (RowwiseParallel: a partial sum; a replicated input is "
    "sliced on each device, no communication); rows split, weight replicated (data / sequence parallel)",
)
def linear_strategy(call: OpCall) -> OpPlacement:
    (x, px), (_, pw), *bias = call.operands
    last = call.rank(x) - 1
    extra = (None,) * len(bias)
    if px is None and pw is None:
        return call.replicated()
    if pw == 0:
        return OpPlacement((None, 0) + (0,) * len(bias), last)
    if pw == 1 and px in (last, None):  # RowwiseParallel; a replicated input sliced locally (rowwise_split_input)
        return OpPlacement((last, pw) + extra, PARTIAL)
    if px is not None and px < last and pw is None:
        return OpPlacement((px, None) + extra, px)
    raise NoRule(f"input split {px}, weight split {pw}")


def matmul_placement(pa: Split, pb: Split, ra: int, rb: int, out_rank: int) -> OpPlacement:
    """DTensor's matmul rule for ``[..., M, K] @ [..., K, N]`` of ranks ``ra``, ``rb``."""
    if ra < 2 or rb < 2:
        raise NoRule("a vector operand")
    if pa is None and pb is None:
        return OpPlacement((None, None), None)
    if pa == ra - 2 and pb is None:
        return OpPlacement((pa, None), out_rank - 2)
    if pb == rb - 1:
        return OpPlacement((None, pb), out_rank - 1)
    if pb == rb - 2 and pa in (ra - 1, None):  # a replicated A is sliced on each device
        return OpPlacement((ra - 1, pb), PARTIAL)
    if pb == rb - 2 and pa == ra - 2:  # B's rows gathered (a colwise weight's gradient from sequence-parallel rows)
        return OpPlacement((pa, None), out_rank - 2)
    if pa is not None and pa < ra - 2 and ra == rb and pa == pb:
        return OpPlacement((pa, pb), pa + out_rank - ra)
    if pa is not None and pa < ra - 2 and pb is None and out_rank - ra + pa < out_rank - rb:
        return OpPlacement((pa, None), pa + out_rank - ra)  # a batch dim only A has (B broadcasts)
    raise NoRule(f"operands split {pa} and {pb}")


@register_op_strategy(
    MatmulOp,
    doc="DTensor's matmul rule: rows of A or columns of B split (rows of A with the "
    "contraction of B: B gathered); the contraction split on both sides, or on "
    "B's with A replicated (sliced locally): a partial sum; equal split batch dims",
)
def matmul_strategy(call: OpCall) -> OpPlacement:
    (a, pa), (b, pb) = call.operands
    return matmul_placement(pa, pb, call.rank(a), call.rank(b), call.result_rank)


def _local_product(call: OpCall, a: tuple, b: tuple) -> Split:
    """The split of a local ``a @ b`` in a segment (no resharding, no partial sum)."""
    placement = matmul_placement(a[1], b[1], call.rank(a[0]), call.rank(b[0]), call.result_rank)
    (output,) = placement.outputs(1)
    if isinstance(output, Partial) or placement.inputs != (a[1], b[1]):
        raise NoRule("contracts a split dim, or needs its operands resharded")
    return output


@register_op_strategy(
    T.AtenMmOp,
    T.AtenBmmOp,
    T.AtenMatmulOp,
    doc="DTensor's matmul rule without a contraction over the split (`hir.matmul` outside segments)",
)
def segment_matmul_strategy(call: OpCall) -> OpPlacement:
    return call.local(_local_product(call, call.operands[0], call.operands[1]))


@register_op_strategy(
    T.AtenAddmmOp, T.AtenBaddbmmOp, doc="as `matmul`, the bias split alike or broadcast (GPT-2's Conv1D)"
)
def addmm_strategy(call: OpCall) -> OpPlacement:
    """addmm / baddbmm (``bias + a @ b``): a local product, and a bias split alike or
    broadcast along the output's split."""
    bias, a, b = call.operands[:3]
    split = _local_product(call, a, b)
    check_broadcasts(call, [bias], split)
    return call.local(split)
