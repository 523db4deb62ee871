"""Optimizer ops: a whole param group's update as one op, run by torch's own optimizer
implementation (its multi-tensor kernels), the buffers it updates written in place.

    %p = memref.cast %w : memref<16x8xf32> to memref<*xf32>      // one per parameter (and grad, moment)
    "hir.adam_update"(%p0, %p1, %g0, %g1, %m0, %m1, %v0, %v1, %s0, %s1, %lr)
        {operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1>, kind = "adamw", kernel = "fused",
         beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64}
        : (memref<*xf32>, ..., memref<f32>, memref<f32>, memref<f64>) -> ()

The tensors are lists (params, grads, exp_avgs, exp_avg_sqs, steps: one element per
parameter); IRDL binds one type for all the elements of a variadic operand, so the parameters
(of many shapes) are passed as unranked memrefs of one element type, each a ``memref.cast``
of its buffer (a view: the passes follow it to the buffer). The step counts are 0-d float
buffers of the program's device (on CUDA, torch's ``capturable`` form computes the bias
corrections from them there).
``lr`` is a 0-d float buffer, an input read on the device (an LR scheduler changes its value,
not the program); the betas, ``eps`` and ``weight_decay`` are f64 attributes, as torch's
kernels take them (numbers, a CUDA graph records them): a program is built for their values.
So the op reads nothing on the host and a CUDA graph captures it.
``kind``: ``adam`` (L2 weight decay added to the gradient) or ``adamw`` (decoupled weight
decay); ``kernel``: which of torch's implementations runs it (``fused``:
``torch._fused_adam(w)_``; ``foreach``: ``torch._foreach_*``; ``single``: one parameter at a
time), as ``torch.optim.Adam(W)`` chose it for the group, so the update is eager's.
"""

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import ext, memref

from hir.dialect.base import HirOp, fmt_shape
from hir.dialect.checks import fail, float_attr, str_attr

ADAM_KINDS = ("adam", "adamw")
ADAM_KERNELS = ("fused", "foreach", "single")
_LISTS = ("params", "grads", "exp_avgs", "exp_avg_sqs", "steps")
ADAM_CONSTANTS = ("beta1", "beta2", "eps", "weight_decay")  # f64 attributes (lr is an operand)
_CAST = memref.CastOp.OPERATION_NAME


class AdamUpdateOp(HirOp, name="adam_update"):
    """``torch.optim.adam.adam(params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=lr, ...)``
    with ``lr`` the tensor in its buffer and the other hyper-parameters the attributes: each
    step count incremented, each parameter and its moments updated in place (the lists'
    elements are what it writes; the grads and lr it reads)."""

    params: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    grads: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    exp_avgs: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    exp_avg_sqs: Sequence[ext.Operand[ir.UnrankedMemRefType]]
    steps: Sequence[ext.Operand[ir.MemRefType]]
    lr: ext.Operand[ir.MemRefType]
    kind: ir.StringAttr
    kernel: ir.StringAttr
    beta1: ir.FloatAttr
    beta2: ir.FloatAttr
    eps: ir.FloatAttr
    weight_decay: ir.FloatAttr

    @classmethod
    def destinations(cls, op: ir.Operation) -> tuple:
        """The params, exp_avgs, exp_avg_sqs and steps (operand indices: the lists are
        equally long, checked by the verifier)."""
        count = (len(op.operands) - 1) // len(_LISTS)
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
        lr = ir.MemRefType(self.lr.type)
        if lr.rank != 0 or not isinstance(lr.element_type, ir.FloatType):
            fail(f"lr must be a 0-d float buffer, got {lr}")
        values = {name: float_attr(self, name) for name in ADAM_CONSTANTS}
        for name in ("beta1", "beta2"):
            if not 0.0 <= values[name] < 1.0:
                fail(f"{name} is {values[name]}; expected 0 <= {name} < 1")
        for name in ("eps", "weight_decay"):
            if not values[name] >= 0.0:
                fail(f"{name} is {values[name]}; expected >= 0")

    @classmethod
    def emit(
        cls, lists: dict, lr: ir.Value, constants: dict, kind: str, kernel: str, *, name: str | None = None
    ) -> ir.Operation:
        """At the current insertion point: ``lists`` maps params, grads, exp_avgs, exp_avg_sqs
        (unranked views) and steps to values, ``constants`` beta1, beta2, eps, weight_decay
        to numbers."""
        operands = [v for name in _LISTS for v in lists[name]] + [lr]
        sizes = [len(lists[name]) for name in _LISTS] + [1]
        f64 = ir.F64Type.get()
        attributes = {
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(sizes),
            "kind": ir.StringAttr.get(kind),
            "kernel": ir.StringAttr.get(kernel),
        } | {key: ir.FloatAttr.get(f64, float(constants[key])) for key in ADAM_CONSTANTS}
        return cls._create(operands, attributes=attributes, name=name)


def _cast_shape(value: ir.Value) -> list[int] | None:
    """The shape of the buffer an unranked operand is a ``memref.cast`` of (None: unknown)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != _CAST:
        return None
    return list(ir.MemRefType(owner.operation.operands[0].type).shape)
