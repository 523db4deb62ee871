"""Handlers of the arith group (upstream): integer/index arithmetic on Python ints (host scalars: loop bounds, indices,
sizes). Ops whose operands are all constants are folded at compile time. ``arith`` / ``math`` ops on tensors (in kernel
segments: what shard-partition leaves of elementwise TOSA, e.g. ``arith.minsi %a, %b : tensor<4xi32>``) run as one
vectorized torch call, the same one a ``linalg.generic`` payload uses (``linalg_payload.py``)."""

import operator
from collections.abc import Callable
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import arith

from hir.dialect.base import get_int
from hir.interpreter.linalg_payload import UnsupportedPayload, payload_fn
from hir.interpreter.ops.linalg_tensor import dense_constant
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, impl_prefix, register_impls
from hir.interpreter.steps import UNSET


def _divsi(a: int, b: int) -> int:
    q = abs(a) // abs(b)  # arith.divsi rounds toward zero, Python's // toward -inf
    return q if (a >= 0) == (b >= 0) else -q


def _remsi(a: int, b: int) -> int:
    return a - b * _divsi(a, b)


def _ceildivsi(a: int, b: int) -> int:
    return -(-a // b)


def _unsigned(fn: Callable[[int, int], Any]) -> Callable[[int, int], Any]:
    # Host scalars are small non-negative values in practice; negative operands of an
    # unsigned op are a program bug we report rather than reinterpret.
    def op(a: int, b: int) -> Any:
        if a < 0 or b < 0:
            raise ValueError(f"unsigned operation on a negative operand ({a}, {b})")
        return fn(a, b)

    return op


BINARY: dict[type, Callable[[int, int], Any]] = {
    arith.AddIOp: operator.add,
    arith.SubIOp: operator.sub,
    arith.MulIOp: operator.mul,
    arith.DivSIOp: _divsi,
    arith.DivUIOp: _unsigned(operator.floordiv),
    arith.RemSIOp: _remsi,
    arith.RemUIOp: _unsigned(operator.mod),
    arith.CeilDivSIOp: _ceildivsi,
    arith.CeilDivUIOp: _unsigned(_ceildivsi),
    arith.FloorDivSIOp: operator.floordiv,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: _unsigned(min),
    arith.MaxUIOp: _unsigned(max),
    arith.AndIOp: operator.and_,
    arith.OrIOp: operator.or_,
    arith.XOrIOp: operator.xor,
}

_BINARY_BY_NAME = {op.OPERATION_NAME: fn for op, fn in BINARY.items()}

# arith::CmpIPredicate numbering.
COMPARE: dict[int, Callable[[int, int], bool]] = {
    0: operator.eq,
    1: operator.ne,
    2: operator.lt,
    3: operator.le,
    4: operator.gt,
    5: operator.ge,
    6: _unsigned(operator.lt),
    7: _unsigned(operator.le),
    8: _unsigned(operator.gt),
    9: _unsigned(operator.ge),
}


def _on_tensors(op: ir.OpView) -> bool:
    return any(isinstance(r.type, ir.RankedTensorType) for r in op.operation.results)


def _tensor_step(c: Compiler, op: ir.OpView) -> Step:
    """An elementwise ``arith`` / ``math`` op on tensors: one torch call on whole tensors."""
    try:
        fn = payload_fn(op, op.operation.name)
    except UnsupportedPayload as err:
        raise c.error(op, f"on tensors {err}") from None
    args, out = c.uses(op), c.define(op.operation.results[0])

    def step(env: list) -> None:
        env[out] = fn(*[env[a] for a in args])

    return step


def _fold_or_step(c: Compiler, op: ir.OpView, fn: Callable[..., Any]) -> Step | None:
    if _on_tensors(op):
        return _tensor_step(c, op)
    args = c.uses(op)
    values = [c.constant(v) for v in op.operation.operands]
    result = op.operation.results[0]
    if all(v is not UNSET for v in values):
        try:
            c.define(result, fn(*values))
        except (ArithmeticError, ValueError) as err:
            raise c.error(op, f"cannot evaluate: {err}") from None
        return None
    out = c.define(result)
    if len(args) == 1:
        (a,) = args

        def step1(env: list) -> None:
            env[out] = fn(env[a])

        return step1
    if len(args) == 2:
        a, b = args

        def step2(env: list) -> None:
            env[out] = fn(env[a], env[b])

        return step2
    a, b, d = args

    def step3(env: list) -> None:
        env[out] = fn(env[a], env[b], env[d])

    return step3


@register_impls
class ArithImpls:
    @impl_prefix("arith.")
    @impl_prefix("math.")
    def on_tensors(self, c: Compiler, op: ir.OpView) -> Step | None:
        if not _on_tensors(op):
            raise c.error(op, "runs on tensors only (in kernel segments); host programs compute integers and indices")
        return _tensor_step(c, op)

    @impl(arith.ConstantOp)
    def constant(self, c: Compiler, op: ir.OpView) -> Step | None:
        attr = op.operation.attributes["value"]
        if isinstance(attr, ir.BoolAttr):  # `arith.constant true` (i1)
            value: Any = attr.value
        elif isinstance(attr, ir.IntegerAttr):
            value = attr.value
            if str(attr.type) == "i1":
                value = bool(value)
        elif isinstance(attr, ir.FloatAttr):
            value = attr.value
        elif isinstance(attr, ir.DenseElementsAttr):  # a tensor constant of a kernel segment
            value = dense_constant(attr, c.runtime.device)
        else:
            raise c.error(
                op,
                f"constant {attr} is not a scalar or dense tensor (only integer, index, float and dense constants run)",
            )
        c.define(op.operation.results[0], value)
        return None

    @impl(*BINARY)
    def binary(self, c: Compiler, op: ir.OpView) -> Step | None:
        return _fold_or_step(c, op, _BINARY_BY_NAME[op.operation.name])

    @impl(arith.IndexCastOp, arith.IndexCastUIOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
    def cast(self, c: Compiler, op: ir.OpView) -> Step | None:
        # Host integers are unbounded Python ints; a cast between integer widths keeps the value.
        return _fold_or_step(c, op, int)

    @impl(arith.SIToFPOp, arith.UIToFPOp)
    def to_float(self, c: Compiler, op: ir.OpView) -> Step | None:
        return _fold_or_step(c, op, float)

    @impl(arith.FPToSIOp, arith.FPToUIOp)
    def to_int(self, c: Compiler, op: ir.OpView) -> Step | None:
        return _fold_or_step(c, op, int)

    @impl(arith.CmpIOp)
    def cmpi(self, c: Compiler, op: ir.OpView) -> Step | None:
        predicate = get_int(op, "predicate")
        if predicate not in COMPARE:
            raise c.error(op, f"unknown predicate {predicate}")
        return _fold_or_step(c, op, COMPARE[predicate])

    @impl(arith.SelectOp)
    def select(self, c: Compiler, op: ir.OpView) -> Step | None:
        if _on_tensors(op) and not isinstance(op.operation.operands[0].type, ir.RankedTensorType):
            cond, a, b = c.uses(op)  # a scalar condition picks one whole tensor
            out = c.define(op.operation.results[0])

            def pick(env: list) -> None:
                env[out] = env[a] if env[cond] else env[b]

            return pick
        return _fold_or_step(c, op, lambda cond, a, b: a if cond else b)
