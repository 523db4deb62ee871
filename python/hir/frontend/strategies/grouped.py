"""Grouped matrix products: an MoE layer's experts as one op over tokens sorted by expert
(``offs``: where each expert's rows end), ``transformers.grouped_mm_fallback(input [S, K],
weight [E, K, N], offs)`` and its backward ``grouped_mm_fallback_backward(input, weight,
offs, grad) -> (grad_input, grad_weight)``. DTensor's ``_grouped_mm`` rule
(``_matrix_ops.py``) on one mesh axis, ``offs`` replicated (every device routes every token):

* the experts' output features split (a colwise ``gate_up_proj``): ``input`` replicated x
  ``weight`` split on N -> the output split on its columns; in the backward the gradient of
  the input contracts the split N (a partial sum) and the weight's gradient is split as the
  weight;
* the contraction split (a rowwise ``down_proj``): ``input`` split on K x ``weight`` split on
  K -> a partial sum; in the backward both gradients keep their operands' splits.
"""

from hir.frontend.strategies.backward import local_sum
from hir.frontend.strategies.registry import PARTIAL, NoRule, OpCall, OpPlacement, register_op_strategy


@register_op_strategy(
    "torch.transformers.grouped_mm_fallback",
    partial_form=local_sum,
    doc="MoE experts: replicated input x weight split on its output features -> output split on its columns; input "
    "and weight split on the contraction -> a partial sum (a replicated input is sliced locally); offs replicated",
)
def grouped_mm_strategy(call: OpCall) -> OpPlacement:
    (_, px), (_, pw), (_, po) = call.operands
    if po is not None:
        raise NoRule("grouped_mm_fallback: offs split")
    if px is None and pw is None:
        return call.replicated()
    if px is None and pw == 2:
        return OpPlacement((None, 2, None), 1)
    if pw == 1 and px in (1, None):
        return OpPlacement((1, 1, None), PARTIAL)
    raise NoRule(f"grouped_mm_fallback: input split {px}, weight split {pw}")


@register_op_strategy(
    "torch.transformers.grouped_mm_fallback_backward",
    partial_form=local_sum,
    doc="the forward's placements: weight split on its output features (gradient split on "
    "its columns) -> the input's gradient a partial sum, the weight's split as the "
    "weight; input and weight split on the contraction -> both gradients split as them",
)
def grouped_mm_backward_strategy(call: OpCall) -> OpPlacement:
    (_, px), (_, pw), (_, po), (_, pg) = call.operands
    if po is not None:
        raise NoRule("grouped_mm_fallback_backward: offs split")
    if px is None and pw is None and pg is None:
        return call.replicated()
    if px is None and pw == 2 and pg == 1:
        return OpPlacement((None, 2, None, 1), (PARTIAL, 2))
    if px == 1 and pw == 1 and pg is None:
        return OpPlacement((1, 1, None, None), (1, 1))
    raise NoRule(f"grouped_mm_fallback_backward: input split {px}, weight split {pw}, gradient split {pg}")
