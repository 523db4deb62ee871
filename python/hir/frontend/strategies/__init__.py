"""Placement strategies, one module per op family (see :mod:`.registry`): ``matrix``
(linear, matmul, mm, addmm), ``pointwise`` (binary ops, every ``torch.Tag.pointwise`` op,
casts), ``views`` (view, reshape, transpose, slice, cat, expand, ...), ``reductions`` (sum,
mean, softmax, norms), ``attention`` (SDPA) and ``embedding`` (embedding, index_select).
Importing this package registers them all."""

from hir.frontend.strategies import attention, embedding, matrix, pointwise, reductions, views  # noqa: F401  (registers)
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
    register_compute_form,
    register_op_strategy,
    register_tag_strategy,
    strategy_for,
)

__all__ = [
    "PARTIAL", "STRATEGIES", "ComputeSpec", "NoRule", "OpCall", "OpPlacement", "Partial", "Split", "Strategy",
    "compute_spec", "register_compute_form", "register_op_strategy", "register_tag_strategy", "strategy_for",
]
