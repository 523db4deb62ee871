"""Optimizer ops: a whole param group's update as one op, run by torch's own optimizer
implementation (its multi-tensor kernels), the buffers it updates written in place.

    %p = memref.cast %w : memref<16x8xf32> to memref<*xf32>      // one per parameter (and grad, moment)
    "hir.adam_update"(%p0, %p1, %g0, %g1, %m0, %m1, %v0, %v1, %s0, %s1, %lr, %beta1, %beta2, %eps, %decay)
        {operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1, 1, 1, 1, 1>, kind = "adamw", kernel = "fused"}
        : (memref<*xf32>, ..., memref<f32>, memref<f32>, memref<f64>, ...) -> ()

The tensors are lists (params, grads, exp_avgs, exp_avg_sqs, steps: one element per
parameter); IRDL binds one type for all the elements of a variadic operand, so the parameters
(of many shapes) are passed as unranked memrefs of one element type, each a ``memref.cast``
of its buffer (a view: the passes follow it to the buffer). The hyper-parameters are 0-d
float buffers (program inputs: an LR scheduler changes their values, not the program).
``kind``: ``adam`` (L2 weight decay added to the gradient) or ``adamw`` (decoupled weight
decay); ``kernel``: which of torch's implementations runs it (``fused``:
``torch._fused_adam(w)_``; ``foreach``: ``torch._foreach_*``; ``single``: one parameter at a
time), as ``torch.optim.Adam(W)`` chose it for the group, so the update is eager's bit for bit.
"""

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import ext, memref

from hir.dialect.base import HirOp, fmt_shape
from hir.dialect.checks import fail, str_attr

ADAM_KINDS = ("adam", "adamw")
ADAM_KERNELS = ("fused", "foreach", "single")
_LISTS = ("params", "grads", "exp_avgs", "exp_avg_sqs", "steps")
ADAM_HYPER = ("lr", "beta1", "beta2", "eps", "weight_decay")
_CAST = memref.CastOp.OPERATION_NAME


class AdamUpdateOp(HirOp, name="adam_update"):
    """``torch.optim.adam.adam(params, grads, exp_avgs, exp_avg_sqs, [], steps, ...)`` with
    the hyper-parameters read from their buffers: each step count incremented, each
    parameter and its moments updated in place (the lists' elements are what it writes;
    the grads and hyper-parameters it reads). Reads the hyper-parameters on the host
    (torch's kernels take them as numbers): a device sync, no CUDA graph captures it."""

    params: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    grads: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    exp_avgs: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    exp_avg_sqs: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    steps: Sequence[ext.Operand[ir.MemRefType]]
    lr: ext.Operand[ir.MemRefType]
    beta1: ext.Operand[ir.MemRefType]
    beta2: ext.Operand[ir.MemRefType]
    eps: ext.Operand[ir.MemRefType]
    weight_decay: ext.Operand[ir.MemRefType]
    kind: ir.StringAttr
    kernel: ir.StringAttr
    HOST_READS = True

    @classmethod
    def destinations(cls, op: ir.Operation) -> tuple:
        """The params, exp_avgs, exp_avg_sqs and steps (operand indices: the lists are
        equally long, checked by the verifier)."""
        count = (len(op.operands) - len(ADAM_HYPER)) // len(_LISTS)
        written = (0, 2, 3, 4)  # params, exp_avgs, exp_avg_sqs, steps
        return tuple(i for group in written for i in range(group * count, (group + 1) * count))

    def check(self) -> None:
        str_attr(self, "kind", ADAM_KINDS)
        str_attr(self, "kernel", ADAM_KERNELS)
        lists = {name: list(getattr(self, name)) for name in _LISTS}
        count = len(lists["params"])
        if count == 0:
            fail("params must not be empty")
        for name, values in lists.items():
            if len(values) != count:
                fail(f"{name} has {len(values)} element(s), params {count}: one per parameter")
        element = ir.UnrankedMemRefType(lists["params"][0].type).element_type
        for name in _LISTS[1:4]:
            other = ir.UnrankedMemRefType(lists[name][0].type).element_type
            if other != element:
                fail(f"{name} hold {other}, params {element}: one element type")
        for index in range(count):
            shapes = {name: _cast_shape(lists[name][index]) for name in _LISTS[:4]}
            known = {name: shape for name, shape in shapes.items() if shape is not None}
            if len({tuple(s) for s in known.values()}) > 1:
                fail(f"parameter {index}: shapes differ: " + ", ".join(f"{n} {fmt_shape(s)}" for n, s in known.items()))
        step_type = ir.MemRefType(lists["steps"][0].type)
        if step_type.rank != 0 or not isinstance(step_type.element_type, ir.FloatType):
            fail(f"steps must be 0-d float buffers, got {step_type}")
        for name in ADAM_HYPER:
            hyper = ir.MemRefType(getattr(self, name).type)
            if hyper.rank != 0 or not isinstance(hyper.element_type, ir.FloatType):
                fail(f"{name} must be a 0-d float buffer, got {hyper}")

    @classmethod
    def emit(cls, lists: dict, hyper: dict, kind: str, kernel: str, *, name: str | None = None) -> ir.Operation:
        """At the current insertion point: ``lists`` maps params, grads, exp_avgs, exp_avg_sqs
        (unranked views) and steps to values, ``hyper`` lr, beta1, beta2, eps, weight_decay."""
        operands = [v for name in _LISTS for v in lists[name]] + [hyper[name] for name in ADAM_HYPER]
        sizes = [len(lists[name]) for name in _LISTS] + [1] * len(ADAM_HYPER)
        attributes = {
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(sizes),
            "kind": ir.StringAttr.get(kind),
            "kernel": ir.StringAttr.get(kernel),
        }
        return cls._create(operands, attributes=attributes, name=name)


def _cast_shape(value: ir.Value) -> list[int] | None:
    """The shape of the buffer an unranked operand is a ``memref.cast`` of (None: unknown)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != _CAST:
        return None
    return list(ir.MemRefType(owner.operation.operands[0].type).shape)
