"""The registry of placement strategies, as PyTorch DTensor keeps its op strategies
(``@register_op_strategy(aten.mm.default)`` on the strategy function itself): one strategy
per op, registered where it is written, one module per op family.

A strategy places one op on one mesh axis (a multi-D mesh applies it axis by axis). It reads
an :class:`OpCall` (the op, its tensor operands with their splits on that axis, the axis's
device count) and returns an :class:`OpPlacement`: the split each tensor operand must have
(resharded first where it has another) and the result's split (an int, ``None`` for
replicated, or :data:`PARTIAL` for a sum still to be taken over the axis). A strategy that
cannot place the op raises :class:`NoRule`; the placer then falls back, in one place, to
replicated operands (DTensor's redistribute-to-``Replicate()``).

Keys are op names: a torch op (``torch.aten.view``: an op of a kernel segment) or an hir
compute op (``hir.linear``: ``aten.linear`` imported as a compute op). Both kinds use this
one registry and this one strategy type. A torch op with no entry that is tagged
``torch.Tag.pointwise`` takes the strategy registered for that tag.

Compute forms: ``@register_compute_form(AtenLinearOp, ...)`` names the hir compute op a
torch op becomes (a :class:`ComputeSpec`), beside that op's strategy.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect.torch_ops import torch_overload
from hir.frontend.torch_ir import constant_value, shape_of, tensor_info

Split = int | None


class Partial:
    """The result is a partial sum on each device of the mesh axis (DTensor's ``Partial()``):
    the placer sums it over the axis."""

    def __repr__(self) -> str:
        return "Partial()"


PARTIAL = Partial()
Output = Split | Partial


class NoRule(Exception):
    """The strategy has no placement for these operand placements (the message says why)."""

    op: ir.Operation | None = None  # the op to name, set by a segment walk that meets the refusal inside a segment


@dataclass(frozen=True)
class OpPlacement:
    """What a strategy decided: ``inputs`` (one split per tensor operand of the
    :class:`OpCall`, in its order) and the ``output`` split (of an op of several results
    placed apart: a tuple, one per result)."""

    inputs: tuple[Split, ...]
    output: Output | tuple[Output, ...]

    def outputs(self, count: int) -> tuple[Output, ...]:
        """The placement of each of the op's ``count`` results."""
        return self.output if isinstance(self.output, tuple) else (self.output,) * count

    def partial(self, count: int) -> bool:
        """Whether a result of the op's ``count`` is a partial sum."""
        return any(o is PARTIAL for o in self.outputs(count))


@dataclass
class ComputeSpec:
    """An hir compute op for one torch op: its class, tensor operands and ``emit`` options,
    and what the contraction forms need to know of it."""

    op_class: type
    inputs: list  # torch values (tensors), in hir operand order before the output
    options: dict  # keyword arguments of op_class.emit (kind, axes)
    trailing: list  # torch values after the output (linear's bias)
    transposed_rhs: bool = False  # operand 1 is used transposed ([N, K]: linear's weight)
    streams_rows: bool = False  # output rows are operand 0's rows (AG + op streams them)
    redistributes: bool = False  # the result is operand 0 read as placed (a plan style's layout): no op of its own


@dataclass
class OpCall:
    """One op on one mesh axis as a strategy sees it: ``operands`` are its tensor operands
    (the tensors of a list operand in order; a compute op's hir operands) with their splits."""

    op: ir.Operation
    operands: list  # [(value, split)]
    devices: int
    spec: ComputeSpec | None = None
    axis: int = 0  # the mesh axis placed (of a multi-D mesh)
    axes: int = 1  # the mesh's number of axes

    @property
    def splits(self) -> tuple[Split, ...]:
        return tuple(s for _, s in self.operands)

    def local(self, output: Output) -> OpPlacement:
        """Each operand read as it is placed; the result placed as ``output``."""
        return OpPlacement(self.splits, output)

    def replicated(self) -> OpPlacement:
        """Every operand replicated, and the result (DTensor's fallback)."""
        return OpPlacement((None,) * len(self.operands), None)

    def shape(self, value: ir.Value) -> list[int]:
        return shape_of(value)

    def rank(self, value: ir.Value) -> int:
        return len(self.shape(value))

    @property
    def result_rank(self) -> int:
        return self.rank(self.op.results[0])

    def dim(self, index: int, rank: int) -> int:
        """Operand ``index`` of the op, a constant dim of a rank-``rank`` tensor, made
        non-negative."""
        d = constant_int(self.op.operands[index])
        return d + rank if d < 0 else d


@dataclass(frozen=True)
class Strategy:
    """One registered strategy: ``place(call)``, the line ``doc`` the docs list, its
    ``family`` (the module it is written in); for ops with a size list, ``local_sizes(op,
    split)``: the (operand index, entry) holding the split extent, which a segment running
    on local shards rewrites to the local extent; for a segment op whose strategy may answer
    :data:`PARTIAL`, ``partial_form(op, operands, offset, result_types)``: the torch ops that
    compute one device's part of each result from its local operands (``offset``: a
    ``!torch.int``, where the device's part of the split dim starts), built at the current
    insertion point, one value per result type."""

    name: str
    place: Callable[[OpCall], OpPlacement]
    doc: str
    family: str
    local_sizes: Callable[[ir.Operation, int], tuple[int, int] | None] | None = field(default=None, compare=False)
    partial_form: Callable[[ir.Operation, list, ir.Value, list], list] | None = field(default=None, compare=False)


STRATEGIES: dict[str, Strategy] = {}
TAG_STRATEGIES: dict[torch.Tag, Strategy] = {}
COMPUTE_FORMS: dict[str, Callable[[ir.Operation], ComputeSpec | None]] = {}

OpKey = str | type


def op_name(op: OpKey) -> str:
    """The registry key of a torch-mlir op class (``AtenViewOp``), an hir op class
    (``LinearOp``) or an op name."""
    return op if isinstance(op, str) else op.OPERATION_NAME


_OPERATOR = torch_dialect.OperatorOp.OPERATION_NAME


def op_key(op: ir.Operation) -> str:
    """The registry key of an imported op: its name, or for a ``torch.operator`` (an op
    torch-mlir has no class for: ``aten.index_copy``, custom ops) the op it names
    (``torch.aten.index_copy``)."""
    if op.name == _OPERATOR:
        return ir.StringAttr(op.attributes["name"]).value
    return op.name


def _strategy(fn: Callable, doc: str, local_sizes: Callable | None, partial_form: Callable | None = None) -> Strategy:
    family = fn.__module__.rpartition(".")[2]
    return Strategy(f"{family}.{fn.__name__}", fn, doc, family, local_sizes, partial_form)


def register_op_strategy(
    *ops: OpKey, doc: str, local_sizes: Callable | None = None, partial_form: Callable | None = None
) -> Callable:
    """Register the decorated function as the strategy of ``ops`` (torch-mlir op classes,
    hir compute op classes or op names); ``doc`` is its line in docs/from-pytorch.md;
    ``local_sizes`` / ``partial_form``: see :class:`Strategy`."""

    def register(fn: Callable[[OpCall], OpPlacement]) -> Callable[[OpCall], OpPlacement]:
        strategy = _strategy(fn, doc, local_sizes, partial_form)
        for op in ops:
            key = op_name(op)
            if key in STRATEGIES:
                raise ValueError(f"{key} already has the placement strategy {STRATEGIES[key].name}")
            STRATEGIES[key] = strategy
        return fn

    return register


def register_tag_strategy(tag: torch.Tag, *, doc: str) -> Callable:
    """Register the decorated function as the strategy of every torch op tagged ``tag``
    that has no strategy of its own."""

    def register(fn: Callable[[OpCall], OpPlacement]) -> Callable[[OpCall], OpPlacement]:
        TAG_STRATEGIES[tag] = _strategy(fn, doc, None)
        return fn

    return register


def register_compute_form(*ops: OpKey) -> Callable:
    """Register the decorated function ``form(op) -> ComputeSpec | None`` as what the torch
    ops ``ops`` become when they are hir compute ops (None: the op stays in a segment)."""

    def register(fn: Callable[[ir.Operation], ComputeSpec | None]) -> Callable:
        for op in ops:
            COMPUTE_FORMS[op_name(op)] = fn
        return fn

    return register


def strategy_for(name: str) -> Strategy | None:
    """The strategy of op ``name``: its own, else its tag's, else None."""
    if name in STRATEGIES:
        return STRATEGIES[name]
    overload = torch_overload(name) if name.startswith("torch.") else None
    if overload is not None:
        return next((s for tag, s in TAG_STRATEGIES.items() if tag in overload.tags), None)
    return None


def compute_spec(op: ir.Operation) -> ComputeSpec | None:
    """The hir compute op replacing ``op``, or None when ``op`` belongs in a segment."""
    form = COMPUTE_FORMS.get(op_key(op))
    results = list(op.results)
    if form is None or len(results) != 1 or tensor_info(results[0].type) is None:
        return None
    try:
        return form(op)
    except (ValueError, TypeError):
        return None  # a run-time scalar or an unusual operand: leave it to a segment


def same_dtype(op: ir.Operation, values: Sequence[ir.Value]) -> bool:
    """Whether every value is a tensor of ``op``'s result element type (no promotion)."""
    result = tensor_info(op.results[0].type)
    if result is None:
        raise ValueError(f"{op.name}'s result is not a tensor")
    return all((info := tensor_info(v.type)) is not None and info[1] == result[1] for v in values)


# Typed readers of constant operands (:func:`~hir.frontend.torch_ir.constant_value`), each
# raising ValueError, as it does, where the operand is not a constant of that kind.
def constant_int(value: ir.Value) -> int:
    d = constant_value(value)
    if not isinstance(d, int):
        raise ValueError(f"{value.get_name()} is not a constant int")
    return d


def _ints(values: object) -> TypeGuard[list[int]]:
    return isinstance(values, list) and all(isinstance(d, int) for d in values)


def constant_ints(value: ir.Value) -> list[int]:
    """A constant int list (a ``torch.prim.ListConstruct`` of constant ints)."""
    ints = constant_value(value)
    if not _ints(ints):
        raise ValueError(f"{value.get_name()} is not a constant int list")
    return ints


def constant_dims(value: ir.Value) -> list[int] | None:
    """A reduction's constant dims: an int list, one int (as a list of it), or None
    (``torch.constant.none``: every dim)."""
    dims = constant_value(value)
    if dims is None or _ints(dims):
        return dims
    if isinstance(dims, int):
        return [dims]
    raise ValueError(f"{value.get_name()} is not a constant dim or dim list")
