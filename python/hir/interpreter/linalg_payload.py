"""The scalar payload of a ``linalg`` structured op, compiled once into vectorized torch
calls. Every payload value becomes a tensor over the op's loop domain (or a view
broadcastable to it), so one torch call evaluates an ``arith`` / ``math`` op for all
iterations at once.

A :class:`Payload` is a list of instructions ``(fn, argument indices, result index)`` over
a value list: the block arguments first, then values captured from above the op, then the
payload's own results. Compiling it raises :class:`UnsupportedPayload` at an op that has no
torch equivalent; the caller reports it at that op's location.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch_mlir import ir

from hir.interpreter.buffers import torch_dtype
from hir.interpreter.steps import UNSET


class UnsupportedPayload(Exception):
    """A payload op (``op``) the interpreter cannot vectorize."""

    def __init__(self, op: ir.OpView, message: str) -> None:
        super().__init__(message)
        self.op = op


def _trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc") if not a.dtype.is_floating_point else torch.div(a, b)


def _nan(a, b):
    return torch.isnan(a) | torch.isnan(b)


# arith::CmpFPredicate numbering: ordered predicates are false on NaN, unordered ones true.
_CMPF: dict[int, Callable] = {
    0: lambda a, b: torch.zeros_like(torch.eq(a, b)),
    1: torch.eq,
    2: torch.gt,
    3: torch.ge,
    4: torch.lt,
    5: torch.le,
    6: lambda a, b: torch.ne(a, b) & ~_nan(a, b),
    7: lambda a, b: ~_nan(a, b),
    8: lambda a, b: torch.eq(a, b) | _nan(a, b),
    9: lambda a, b: torch.gt(a, b) | _nan(a, b),
    10: lambda a, b: torch.ge(a, b) | _nan(a, b),
    11: lambda a, b: torch.lt(a, b) | _nan(a, b),
    12: lambda a, b: torch.le(a, b) | _nan(a, b),
    13: torch.ne,
    14: _nan,
    15: lambda a, b: torch.ones_like(torch.eq(a, b)),
}
# arith::CmpIPredicate numbering (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge); payload
# integers are torch's signed dtypes, so the unsigned forms compare the same values.
_CMPI: dict[int, Callable] = dict(
    enumerate([torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge, torch.lt, torch.le, torch.gt, torch.ge])
)

ELEMENTWISE: dict[str, Callable] = {
    "arith.addf": torch.add,
    "arith.addi": torch.add,
    "arith.subf": torch.sub,
    "arith.subi": torch.sub,
    "arith.mulf": torch.mul,
    "arith.muli": torch.mul,
    "arith.divf": torch.div,
    "arith.divsi": _trunc_div,
    "arith.divui": _trunc_div,
    "arith.remf": torch.fmod,
    "arith.remsi": torch.fmod,
    "arith.negf": torch.neg,
    "arith.maximumf": torch.maximum,
    "arith.minimumf": torch.minimum,
    "arith.maxnumf": torch.fmax,
    "arith.minnumf": torch.fmin,
    "arith.maxsi": torch.maximum,
    "arith.minsi": torch.minimum,
    "arith.maxui": torch.maximum,
    "arith.minui": torch.minimum,
    "arith.andi": torch.bitwise_and,
    "arith.ori": torch.bitwise_or,
    "arith.xori": torch.bitwise_xor,
    "arith.select": torch.where,
    "math.exp": torch.exp,
    "math.exp2": torch.exp2,
    "math.expm1": torch.expm1,
    "math.log": torch.log,
    "math.log2": torch.log2,
    "math.log10": torch.log10,
    "math.log1p": torch.log1p,
    "math.tanh": torch.tanh,
    "math.erf": torch.erf,
    "math.erfc": torch.erfc,
    "math.sqrt": torch.sqrt,
    "math.rsqrt": torch.rsqrt,
    "math.absf": torch.abs,
    "math.absi": torch.abs,
    "math.sin": torch.sin,
    "math.cos": torch.cos,
    "math.tan": torch.tan,
    "math.atan": torch.atan,
    "math.atan2": torch.atan2,
    "math.powf": torch.pow,
    "math.fpowi": torch.pow,
    "math.ipowi": torch.pow,
    "math.ceil": torch.ceil,
    "math.floor": torch.floor,
    "math.round": lambda a: torch.where(a >= 0, torch.floor(a + 0.5), torch.ceil(a - 0.5)),  # half away from zero
    "math.roundeven": torch.round,
    "math.trunc": torch.trunc,
    "math.copysign": torch.copysign,
    "math.fma": lambda a, b, c: torch.addcmul(c, a, b),
}
CASTS = (
    "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
    "arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
)  # fmt: skip
# Reduction combiners: the payload op folding a contribution into the output's running value.
COMBINERS: dict[str, str] = {
    "arith.addf": "sum",
    "arith.addi": "sum",
    "arith.mulf": "prod",
    "arith.muli": "prod",
    "arith.maximumf": "max",
    "arith.maxsi": "max",
    "arith.maxui": "max",
    "arith.maxnumf": "fmax",
    "arith.minimumf": "min",
    "arith.minsi": "min",
    "arith.minui": "min",
    "arith.minnumf": "fmin",
}


def _cast(dtype: torch.dtype) -> Callable:
    return lambda a: a.to(dtype)


def _scalar_tensor(value: Any, element_type: ir.Type, device: torch.device) -> torch.Tensor:
    return torch.tensor(value, dtype=torch_dtype(element_type), device=device)


@dataclass
class Payload:
    """A compiled payload: ``run(args, domain)`` returns the yielded values."""

    template: list  # block-argument slots (None), captured constants, result slots
    captured: list[tuple[int, int, ir.Type]]  # (value index, env slot, element type) read per run
    index_dims: list[tuple[int, int]]  # (value index, loop dim) of linalg.index results
    code: list[tuple[Callable, tuple[int, ...], int]]
    yields: list[int]  # value index of each yielded value
    device: torch.device

    def run(self, args: list, env: list, domain: tuple) -> list:
        vals = self.template.copy()
        vals[: len(args)] = args
        for index, slot, element_type in self.captured:
            value = env[slot]
            vals[index] = value if isinstance(value, torch.Tensor) else _scalar_tensor(value, element_type, self.device)
        for index, dim in self.index_dims:
            shape = [1] * len(domain)
            shape[dim] = domain[dim]
            vals[index] = torch.arange(domain[dim], device=self.device).view(shape)
        for fn, operands, out in self.code:
            vals[out] = fn(*[vals[i] for i in operands])
        return [vals[i] for i in self.yields]


def compile_payload(
    block: ir.Block, compiler: Any, skip: frozenset = frozenset(), yields: list | None = None
) -> Payload:
    """Compile ``block`` (a linalg region). Values defined outside are read from the
    compiler's slots (constants folded into the template). The ops at positions ``skip``
    (reduction combiners, evaluated by the caller) are left out."""
    device = compiler.runtime.device
    index: dict[ir.Value, int] = {}
    template: list = []
    captured: list = []
    index_dims: list = []
    code: list = []

    def new(value: ir.Value, content: Any = None) -> int:
        index[value] = len(template)
        template.append(content)
        return index[value]

    for arg in block.arguments:
        new(arg)

    def ref(value: ir.Value) -> int:
        if value in index:
            return index[value]
        known = compiler.constant(value)
        if known is UNSET:  # computed at run time above the op: read its slot each run
            position = new(value)
            captured.append((position, compiler.use(value), value.type))
            return position
        return new(value, known if isinstance(known, torch.Tensor) else _scalar_tensor(known, value.type, device))

    ops = list(block.operations)
    for position, op in enumerate(ops[:-1]):
        if position in skip:
            continue
        name = op.operation.name
        results = op.operation.results
        if len(results) != 1:
            raise UnsupportedPayload(op, "must have one result to run in a payload")
        args = tuple(ref(v) for v in op.operation.operands)
        if name == "arith.constant":
            attr = op.operation.attributes["value"]
            value = attr.value if isinstance(attr, (ir.FloatAttr, ir.IntegerAttr)) else None
            if value is None:
                raise UnsupportedPayload(op, f"value {attr} is not a scalar")
            new(results[0], _scalar_tensor(value, results[0].type, device))
            continue
        if name == "linalg.index":
            index_dims.append((new(results[0]), ir.IntegerAttr(op.operation.attributes["dim"]).value))
            continue
        fn = payload_fn(op, name)
        code.append((fn, args, new(results[0])))
    yielded = [ref(v) for v in (yields if yields is not None else ops[-1].operation.operands)]
    return Payload(template, captured, index_dims, code, yielded, device)


def payload_fn(op: ir.OpView, name: str) -> Callable:
    """The torch function computing ``op`` (named ``name``) elementwise on tensors."""
    if name in ELEMENTWISE:
        return ELEMENTWISE[name]
    if name in CASTS:
        try:
            result = op.operation.results[0].type  # a payload scalar, or a whole tensor in a kernel
            return _cast(
                torch_dtype(ir.ShapedType(result).element_type if isinstance(result, ir.ShapedType) else result)
            )
        except ValueError as err:
            raise UnsupportedPayload(op, str(err)) from None
    if name in ("arith.cmpf", "arith.cmpi"):
        table = _CMPF if name == "arith.cmpf" else _CMPI
        predicate = ir.IntegerAttr(op.operation.attributes["predicate"]).value
        if predicate not in table:
            raise UnsupportedPayload(op, f"unknown predicate {predicate}")
        return table[predicate]
    raise UnsupportedPayload(op, "has no torch equivalent in the interpreter")
