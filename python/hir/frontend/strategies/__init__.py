"""Placement strategies, one module per op family (see :mod:`.registry`): ``matrix`` (linear,
matmul, mm, addmm), ``pointwise`` (binary ops, every ``torch.Tag.pointwise`` op, casts),
``views`` (view, reshape, transpose, slice, cat, expand, ...), ``reductions`` (mean, softmax,
norms), ``attention`` (SDPA), ``embedding`` (embedding, index_select, index, index_copy,
index_put), ``grouped`` (an MoE layer's experts as one grouped matrix product and its backward),
``backward`` (the ops autograd adds: sums over a split batch as partial sums, softmax / SDPA /
slice backward, gather / scatter) and ``redistribute`` (the layouts of a tensor-parallel plan's
styles). Importing this package registers them all."""

from hir.frontend.strategies import (  # noqa: F401  (registers)
    attention,
    backward,
    embedding,
    grouped,
    matrix,
    pointwise,
    redistribute,
    reductions,
    views,
)
from hir.frontend.strategies.registry import (
    PARTIAL,
    STRATEGIES,
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    Partial,
    Split,
    Strategy,
    compute_spec,
    op_key,
    register_compute_form,
    register_op_strategy,
    register_tag_strategy,
    strategy_for,
)

__all__ = [
    "PARTIAL",
    "STRATEGIES",
    "ComputeSpec",
    "NoRule",
    "OpCall",
    "OpPlacement",
    "Partial",
    "Split",
    "Strategy",
    "compute_spec",
    "op_key",
    "register_compute_form",
    "register_op_strategy",
    "register_tag_strategy",
    "strategy_for",
]
