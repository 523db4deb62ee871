"""``arith`` integer/index arithmetic on Python ints (host scalars: loop bounds, indices,
sizes). Ops whose operands are all constants are folded at compile time."""

import operator
from typing import Any, Callable, Optional

from torch_mlir import ir

from hir.interpreter.plan import UNSET, Compiler, Step, handles


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


BINARY: dict[str, Callable[[int, int], Any]] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.divsi": _divsi,
    "arith.divui": _unsigned(operator.floordiv),
    "arith.remsi": _remsi,
    "arith.remui": _unsigned(operator.mod),
    "arith.ceildivsi": _ceildivsi,
    "arith.ceildivui": _unsigned(_ceildivsi),
    "arith.floordivsi": operator.floordiv,
    "arith.minsi": min,
    "arith.maxsi": max,
    "arith.minui": _unsigned(min),
    "arith.maxui": _unsigned(max),
    "arith.andi": operator.and_,
    "arith.ori": operator.or_,
    "arith.xori": operator.xor,
}

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


@handles("arith.constant")
def constant(c: Compiler, op: ir.OpView) -> Optional[Step]:
    attr = op.operation.attributes["value"]
    if isinstance(attr, ir.BoolAttr):  # `arith.constant true` (i1)
        value: Any = attr.value
    elif isinstance(attr, ir.IntegerAttr):
        value = attr.value
        if str(attr.type) == "i1":
            value = bool(value)
    elif isinstance(attr, ir.FloatAttr):
        value = attr.value
    else:
        raise c.error(op, f"constant {attr} is not a scalar (only integer, index and float constants run on the host)")
    c.define(op.operation.results[0], value)
    return None


def _fold_or_step(c: Compiler, op: ir.OpView, fn: Callable[..., Any]) -> Optional[Step]:
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


@handles(*BINARY)
def binary(c: Compiler, op: ir.OpView) -> Optional[Step]:
    return _fold_or_step(c, op, BINARY[op.operation.name])


@handles("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")
def cast(c: Compiler, op: ir.OpView) -> Optional[Step]:
    # Host integers are unbounded Python ints; a cast between integer widths keeps the value.
    return _fold_or_step(c, op, int)


@handles("arith.sitofp", "arith.uitofp")
def to_float(c: Compiler, op: ir.OpView) -> Optional[Step]:
    return _fold_or_step(c, op, float)


@handles("arith.fptosi", "arith.fptoui")
def to_int(c: Compiler, op: ir.OpView) -> Optional[Step]:
    return _fold_or_step(c, op, int)


@handles("arith.cmpi")
def cmpi(c: Compiler, op: ir.OpView) -> Optional[Step]:
    predicate = c.int_attr(op, "predicate")
    if predicate not in COMPARE:
        raise c.error(op, f"unknown predicate {predicate}")
    return _fold_or_step(c, op, COMPARE[predicate])


@handles("arith.select")
def select(c: Compiler, op: ir.OpView) -> Optional[Step]:
    return _fold_or_step(c, op, lambda cond, a, b: a if cond else b)
