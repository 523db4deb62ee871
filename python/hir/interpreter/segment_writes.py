"""What a kernel segment writes into the destinations its caller passes: which arguments it
materializes into, which of those could be its result itself (:class:`Output`: the segment
arguments and fresh tensors the written value may view, read from the schema's alias
annotations), and which arguments a torch op updates in place. The analysis
:mod:`hir.interpreter.destinations` plans from, once per segment function."""

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import bufferization, builtin

from hir.interpreter.updates import out_variant, overload_of, segment_updates

_MATERIALIZE = bufferization.MaterializeInDestinationOp.OPERATION_NAME
_TO_TENSOR = bufferization.ToTensorOp.OPERATION_NAME
_CAST = builtin.UnrealizedConversionCastOp.OPERATION_NAME
_LIST_UNPACK = "torch.prim.ListUnpack"


@dataclass(frozen=True)
class Output:
    """A segment argument written by one top-level ``materialize_in_destination`` and
    otherwise unused: the segment arguments its value may be a view of; ``producer``: the
    fresh result of a torch op with an ``out=`` overload that is the written value (through
    casts only), which can write the destination itself; ``shares``: the other outputs whose
    value may view the same fresh tensor."""

    may_alias: frozenset[int]
    producer: ir.Value | None = None
    shares: frozenset[int] = frozenset()


@dataclass(frozen=True)
class SegmentWrites:
    """What a kernel segment writes: ``written``, every argument it materializes into;
    ``outputs``, the bindable ones (:class:`Output`); ``updates``, the arguments it reads
    and writes back that a torch op updates in place, each with that op's result
    (:func:`hir.interpreter.updates.segment_updates`)."""

    written: frozenset[int]
    outputs: dict[int, Output]
    updates: dict[int, ir.Value]


def segment_outputs(fn: ir.Operation) -> SegmentWrites | None:
    """What kernel segment ``fn`` writes; None when its body is not one block."""
    blocks = list(fn.regions[0].blocks)
    if len(blocks) != 1:
        return None
    args = list(blocks[0].arguments)
    updates = segment_updates(fn)
    updated = {value: index for index, value in updates.items()}
    written: set[int] = set()
    viewed: dict[int, tuple] = {}  # output -> (its value, the arguments and fresh tensors it may view)
    for index, arg in enumerate(args):
        uses = list(arg.uses)
        if any(u.owner.operation.name == _MATERIALIZE and u.operand_number == 1 for u in uses):
            written.add(index)
        if len(uses) != 1:
            continue
        user = uses[0].owner.operation
        if user.name != _MATERIALIZE or uses[0].operand_number != 1 or user.parent.operation != fn:
            continue
        sources = _sources(user.operands[0], args, updated)
        if sources is not None:
            viewed[index] = (user.operands[0], *sources)
    found: dict[int, Output] = {}
    for index, (value, arguments, fresh) in viewed.items():
        shares = frozenset(other for other, (_, _, more) in viewed.items() if other != index and fresh & more)
        found[index] = Output(arguments, None if arguments or shares else _producer(value), shares)
    return SegmentWrites(frozenset(written), found, updates)


def _producer(value: ir.Value) -> ir.Value | None:
    """The torch op result ``value`` is (through single-use casts) when that op has an
    ``out=`` overload."""
    while not isinstance(value.owner, ir.Block) and value.owner.operation.name == _CAST and len(list(value.uses)) == 1:
        value = value.owner.operation.operands[0]
    if isinstance(value.owner, ir.Block) or len(list(value.uses)) != 1 or len(value.owner.operation.results) != 1:
        return None
    overload = overload_of(value.owner.operation)
    return value if overload is not None and out_variant(overload) is not None else None


def _sources(value: ir.Value, args: list, updated: dict) -> tuple[frozenset[int], frozenset] | None:
    """(the segment arguments ``value`` may be a view of, the fresh tensors made in the
    segment it may be or view); None when unknown. Follows casts and the schema's alias
    annotations of torch ops; the result of an op updating an argument in place
    (``updated``: result -> argument index) is that argument."""
    found, fresh, todo, seen = set(), set(), [value], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in updated:
            found.add(updated[v])
            continue
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None  # a block argument that is no memref: not a tensor we know
        op = owner.operation
        if op.name == _TO_TENSOR:
            source = op.operands[0]
            if source not in args:
                return None
            found.add(args.index(source))
        elif op.name in (_CAST, _LIST_UNPACK):
            todo.append(op.operands[0])
        else:
            aliased = _aliased_operands(op, v)
            if aliased is None:
                return None
            if not aliased:
                fresh.add(v)
            todo.extend(aliased)
    return frozenset(found), frozenset(fresh)


def _aliased_operands(op: ir.Operation, result: ir.Value) -> list | None:
    """The operands torch op ``op``'s ``result`` may alias ([] when fresh), None if unknown."""
    overload = overload_of(op)
    if overload is None:
        return None
    schema = overload._schema
    index = next(i for i, r in enumerate(op.results) if r == result)
    if index >= len(schema.returns) or len(op.operands) != len(schema.arguments):
        return None
    alias = schema.returns[index].alias_info
    if alias is None:
        return []
    sets = alias.before_set  # empty for a list of views (split's Tensor(a)[]): any annotated argument
    aliased = [
        v
        for arg, v in zip(schema.arguments, op.operands)
        if arg.alias_info is not None and (not sets or arg.alias_info.before_set & sets)
    ]
    return aliased or None
