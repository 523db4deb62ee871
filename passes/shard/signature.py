"""The function boundary of ``hir-convert-shard-to-hir``: where arguments live before the ops
convert, and the results' check after (the ``func.return`` handler).

An argument's placement is its ``hir.split_axes`` (recorded before partitioning by
``hir-record-shard-signature``, or written by hand), else what the first collective reading
it needs (a hand-partitioned program: all_gather needs it split, all_reduce a partial sum,
...); an argument nothing reads is replicated; otherwise where it lives is unknown: an
error, never a guess. Arguments are retyped in place to their buffers before the body
converts (their placement is per value, so no type converter can give it); the recorded
global types must match what the local types and placements map back to.
"""

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import sharding_of
from hir.dialect.sharding import Sharding
from hir.passes.base import PassFailure
from hir.passes.shard.collectives import grid_axes, needed_downstream
from hir.passes.shard.placement import (
    GLOBAL_TYPE_ATTR,
    OFFSETS_ATTR,
    SPLIT_AXES_ATTR,
    PlacementError,
    moved,
    split_axes_placement,
)
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState, is_tensor


def _entries(attrs: ir.Attribute) -> dict:
    return {named.name: named.attr for named in ir.DictAttr(attrs)}


def place_arguments(s: ConversionState) -> None:
    """Give every tensor argument its buffer type (global shape, ``#hir.shard``) and record
    the results' recorded global types; the recorded attributes then go (the placements
    live in the types)."""
    attrs = s.fn.attributes
    arg_attrs = [_entries(a) for a in ir.ArrayAttr(attrs["arg_attrs"])] if "arg_attrs" in attrs else []
    res_attrs = [_entries(a) for a in ir.ArrayAttr(attrs["res_attrs"])] if "res_attrs" in attrs else []
    s.result_globals = {i: e[GLOBAL_TYPE_ATTR] for i, e in enumerate(res_attrs) if GLOBAL_TYPE_ATTR in e}
    s.result_offsets = {
        i: list(ir.DenseI64ArrayAttr(e[OFFSETS_ATTR])) for i, e in enumerate(res_attrs) if OFFSETS_ATTR in e
    }
    s.loc = s.fn.location
    for index, arg in enumerate(s.fn.regions[0].blocks[0].arguments):
        if not is_tensor(arg):
            s.scalars[arg] = arg
            continue
        entries = arg_attrs[index] if index < len(arg_attrs) else {}
        placement = _argument_placement(s, arg, entries)
        s.placements[arg] = placement
        s.tensor_types[arg] = arg.type
        arg.set_type(s.buffer_type(arg.type, placement, f"'func.func' op @{s.name} argument #{index}"))
        offsets = list(ir.DenseI64ArrayAttr(entries[OFFSETS_ATTR])) if OFFSETS_ATTR in entries else None
        _check_global(s, f"argument #{index}", arg.type, entries.get(GLOBAL_TYPE_ATTR), s.fn.location, offsets)
        s.buffers[arg] = arg
    for key in ("arg_attrs", "res_attrs"):
        if key in attrs:
            del attrs[key]


def _argument_placement(s: ConversionState, arg: ir.BlockArgument, entries: dict) -> Sharding:
    rank = ir.RankedTensorType(arg.type).rank
    where = f"'func.func' op @{s.name} argument #{arg.arg_number}"
    if SPLIT_AXES_ATTR in entries:
        try:
            offsets = list(ir.DenseI64ArrayAttr(entries[OFFSETS_ATTR])) if OFFSETS_ATTR in entries else None
            return split_axes_placement(entries[SPLIT_AXES_ATTR], rank, s.grid, offsets)
        except PlacementError as err:
            raise PassFailure(f"{where}: {err}", s.fn.location) from None
    found = needed_downstream(arg)  # no record: what the first collective reading it needs
    if found is not None:
        return moved(s.grid.replicated, grid_axes(s, found[0]), found[1])
    if not any(True for _ in arg.uses):  # nothing reads it: no placement can be misread
        return s.grid.replicated
    raise PassFailure(
        f"{where} ({arg.type}) does not say where it lives: give it {{{SPLIT_AXES_ATTR} = #shard<axisarray[...]>}}, "
        "the split axes of its shard.sharding (#shard<axisarray[[]]> when replicated), or partition an annotated "
        "program with the hir-from-shard pipeline, which records them",
        s.fn.location,
    )


def _check_global(
    s: ConversionState,
    what: str,
    buffer_type: ir.Type,
    recorded: ir.Attribute | None,
    loc: ir.Location,
    offsets: list[int] | None = None,
) -> None:
    """The global-shape check at the program boundary: a partitioned local shape must map
    back to the global type recorded before partitioning, and a result recorded uneven must
    come out cut at the recorded boundaries."""
    placed = sharding_of(buffer_type) if isinstance(buffer_type, ir.MemRefType) else None  # host scalars: no placement
    cut = [b for _, bounds in placed.offsets for b in bounds] if placed is not None else []
    if cut != (offsets or []):
        raise PassFailure(
            f"'func.func' op @{s.name} {what} is cut at {cut or 'even parts'}, "
            f"not at its recorded sharded_dims_offsets {offsets or '(none)'}",
            loc,
        )
    if recorded is None:
        return
    want = ir.RankedTensorType(ir.TypeAttr(recorded).value)
    got = ir.MemRefType(buffer_type)
    if list(got.shape) != list(want.shape) or got.element_type != want.element_type:
        raise PassFailure(
            f"'func.func' op @{s.name} {what}: its partitioned type maps back to {list(got.shape)}x{got.element_type}, "
            f"not to its global type {want} (an uneven split or a sharding hir does not convert)",
            loc,
        )


@converts(func.ReturnOp)
def return_(s: ConversionState, op: ir.Operation) -> None:
    """`func.return` of the buffers and host scalars the results became (checked against the recorded global types and
    offsets); the function type follows."""
    results = [s.buffer(v, op) if s.is_data(v) else s.scalar(v, op) for v in op.operands]
    for index, value in enumerate(results):
        _check_global(
            s, f"result #{index}", value.type, s.result_globals.get(index), op.location, s.result_offsets.get(index)
        )
    s.create(func.ReturnOp.OPERATION_NAME, operands=results)
    arg_types = [a.type for a in s.fn.regions[0].blocks[0].arguments]
    s.fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in results]))
