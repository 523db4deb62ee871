"""``hir-stream-lowering``: every op carrying ``stream_axis = k`` (axis k of its output is
stream-parallel, nvFuser's ParallelType::Stream) becomes the seed 001/003 loop structure:
the full output stays allocated before the loop, the user stream is saved, a separate loop
syncs each pool stream with it, and the work loop runs the op on ``hir.alias_select`` slices
(index ``%i`` along the mapped axis of each operand that has it) on pool stream ``%i``.
Collectives (from hir-convert-to-communication) run per slice with their ``hir.wait``.

Before::

    %out = memref.alloc(%d) : memref<?x8xf32>
    "hir.set"(%in, %out) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()

After::

    %out = memref.alloc(%d) : memref<?x8xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %out, %c0 : memref<?x8xf32>
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.for"(%c0, %n, %c1) ({ ^bb0(%i: index):       // initial sync loop
      %s = "hir.get_stream"(%i) ; "hir.set_current_stream"(%s) ; "hir.synchronize"(%user)
      "hir.yield"() : () -> () }) : (index, index, index) -> ()
    "hir.for"(%c0, %n, %c1) ({ ^bb0(%i: index):       // work loop
      %s = "hir.get_stream"(%i) ; "hir.set_current_stream"(%s)
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      %b = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (...) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.set"(%a, %b) : (...) -> ()
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%s)
      "hir.yield"() : () -> () }) : (index, index, index) -> ()

The stream axis maps through set, binary (broadcast operands are not sliced, or read at index
0 where their extent is 1), reduction (kept axes; ``axes`` renumbered), matmul (batch axes;
M unless both operands are batched; N with a 2-D B: the slices are vectors) and linear
(every axis; an N slice is a 1-D weight). Errors: stream axes on program inputs or on split
axes, nested stream parallelism, unsupported ops, and matmul axes whose slices would be
read as matrices.

``chunks=S`` (``hir-stream-lowering{chunks=4}``) splits the stream axis of extent N into S
stream iterations of N/S rows each instead of N iterations of one: the loops run to S and
every operand is viewed with ``hir.alias_chunk`` (the axis is kept, so no axis renumbering
and no vector restriction on matmul; a broadcast operand is used whole). This is how an
AG+matmul pipeline is written when the stream axis is not a device axis. A static N that S
does not divide is an error at the op; a dynamic N is checked when the chunk is taken.

    "hir.for"(%c0, %c4, %c1) ({ ^bb0(%i: index):      // chunks = 4, N = 8: 2 rows each
      ...
      %a = "hir.alias_chunk"(%in, %i) {axis = 0 : i64, chunks = 4 : i64} : (memref<8x8xf32>, index) -> memref<2x8xf32, strided<[8, 1], offset: ?>>
      ...
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir

from hir.dialect.base import VerifyError, sharding_of
from hir.dialect.compute_ops import STREAM_AXIS_ATTR
from hir.dialect.view_ops import chunk_type, select_type
from hir.passes import _stream_loops
from hir.passes._axes import is_broadcast_axis, operand_axis, output_index
from hir.passes._ir import (
    COLLECTIVE_OPS,
    COMPUTE_OPS,
    FUNC_ARG_STREAM_ATTRS,
    create,
    fail,
    func_ops,
    get_i64_array,
    get_int,
    i64_attr,
    stream_axis,
)
from hir.passes.base import ModulePass, PassFailure, register_pass

_REDUCED_AXIS_ATTRS = ("axis", "scatter_axis")  # collective attributes in input coordinates


@register_pass
@dataclass
class StreamLowering(ModulePass):
    name = "hir-stream-lowering"
    description = "Lower stream-parallel ops to hir.for stream loops over alias_select slices (seeds 001/003); chunks=S: S iterations over alias_chunk views."
    chunks: int = 0  # 0: one iteration per index of the stream axis; S: S chunks of N/S rows

    def run(self, module: ir.Module) -> None:
        if self.chunks < 0:
            raise PassFailure(f"hir-stream-lowering: chunks must be >= 0 (0: one iteration per index), got {self.chunks}")
        for func in func_ops(module):
            _check_inputs(func)
            body = func.regions[0].blocks[0]
            todo = []
            for op in body.operations:
                op = op.operation
                if STREAM_AXIS_ATTR in op.attributes:
                    todo.append(op)
                elif op.regions:
                    _reject_nested(op)
            arguments = set(body.arguments)
            for op in todo:
                _lower(op, arguments, self.chunks)


def _check_inputs(func: ir.Operation) -> None:
    if "arg_attrs" not in func.attributes:
        return
    for index, attrs in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])):
        attrs = ir.DictAttr(attrs)
        for key in FUNC_ARG_STREAM_ATTRS:
            if key in attrs:
                raise PassFailure(f"program input #{index} is stream-parallel ('{key}'); nvFuser does not stream-parallelize fusion inputs: stream a copy of it instead", func.location)


def _reject_nested(op: ir.Operation) -> None:
    for nested in op.regions:
        for block in nested.blocks:
            for inner in block.operations:
                inner = inner.operation
                if STREAM_AXIS_ATTR in inner.attributes:
                    raise fail(inner, "is stream-parallel inside a region; nested stream parallelism is not supported")
                if inner.regions:
                    _reject_nested(inner)


@dataclass
class _Slice:
    index: int  # operand number
    axis: int  # operand axis selected
    broadcast: bool  # read index 0 (extent-1 broadcast axis) instead of the stream index


def _slices(op: ir.Operation, k: int, chunks: int = 0) -> list[_Slice]:
    """Which operands to slice, along which axis; fails where slicing is not expressible."""
    out_rank = ir.MemRefType(op.operands[output_index(op)].type).rank
    if op.name == "hir.matmul" and not chunks:  # chunks keep the axis: no vectors
        batch = out_rank - 2
        rank_a, rank_b = (ir.MemRefType(op.operands[i].type).rank for i in (0, 1))
        # A slice drops the axis; torch.matmul reads a 1-D operand as a vector, which is
        # right for M with a 2-D A or 2-D B and for N with a 2-D B, and wrong otherwise (a
        # batched operand's slice would be read as a matrix).
        if (k == batch + 1 and rank_b != 2) or (k == batch and rank_a > 2 and rank_b > 2):
            axis_name = "N" if k == batch + 1 else "M"
            raise fail(op, f"has stream axis {k}, the {axis_name} axis of a matmul of ranks {rank_a} and {rank_b}; its slices would be read as matrices, not vectors (stream a batch axis, M with a 2-D A or B, or N with a 2-D B)")
    slices = []
    for index, operand in enumerate(op.operands):
        if not isinstance(operand.type, ir.MemRefType):
            continue
        axis = operand_axis(op, index, k)
        if axis is None:
            continue
        try:
            sharding = sharding_of(operand, f"operand #{index}")
        except VerifyError as err:
            raise fail(op, str(err)) from None
        if sharding is not None and sharding.axis == axis:
            raise fail(op, f"has stream axis {k}, which is axis {axis} of operand #{index}, split over the device mesh {list(sharding.mesh)}; a split axis cannot also be stream-parallel")
        slices.append(_Slice(index, axis, is_broadcast_axis(op, index, axis, k)))
    return slices


def _lower(op: ir.Operation, arguments: set, chunks: int) -> None:
    name = op.name
    k = stream_axis(op)
    if name not in COMPUTE_OPS and name not in COLLECTIVE_OPS:
        raise fail(op, f"carries stream_axis = {k}, but hir-stream-lowering only handles {', '.join(COMPUTE_OPS + COLLECTIVE_OPS)}")
    out = op.operands[output_index(op)]
    if out in arguments:
        raise fail(op, "writes its stream-parallel output into a program input; stream parallelism needs an output allocated by the program")
    extent = ir.MemRefType(out.type).shape[k]
    if chunks and extent != ir.ShapedType.get_dynamic_size() and extent % chunks:
        raise fail(op, f"has stream axis {k} of extent {extent}, which does not split into {chunks} stream chunks (hir-stream-lowering{{chunks={chunks}}}): use a chunk count dividing it")
    slices = _slices(op, k, chunks)
    in_axis = operand_axis(op, 0, k)  # before the op's operands change
    waits = [use.owner.operation for use in op.results[0].uses] if op.results else []
    loc = op.location
    with ir.InsertionPoint(op), loc:
        loop = _stream_loops.build(out, k, chunks)
    with ir.InsertionPoint(loop.epilogue), loc:
        for s in slices:
            source = op.operands[s.index]
            if chunks and s.broadcast:
                continue  # an extent-1 axis broadcasts to every chunk
            if chunks:
                attrs = {"axis": i64_attr(s.axis), "chunks": i64_attr(chunks)}
                view = create("hir.alias_chunk", [source, loop.iv], [chunk_type(source.type, s.axis, chunks)], attrs)
            else:
                index = loop.zero if s.broadcast else loop.iv
                view = create("hir.alias_select", [source, index], [select_type(source.type, s.axis)], {"axis": i64_attr(s.axis)})
            op.operands[s.index] = view.result
    op.move_before(loop.epilogue)
    for wait in waits:
        wait.move_before(loop.epilogue)
    del op.attributes[STREAM_AXIS_ATTR]
    if not chunks:  # a chunk keeps the axis
        _renumber_axes(op, in_axis)


def _renumber_axes(op: ir.Operation, removed: Optional[int]) -> None:
    """Attributes naming input axes shift down past the sliced-away axis."""
    if removed is None:
        return
    if op.name == "hir.reduction":
        axes = get_i64_array(op, "axes")
        op.attributes["axes"] = ir.DenseI64ArrayAttr.get([a - (1 if a > removed else 0) for a in axes])
        return
    for attr in _REDUCED_AXIS_ATTRS:
        value = get_int(op, attr)
        if value is not None and op.name in COLLECTIVE_OPS:
            op.attributes[attr] = i64_attr(value - (1 if value > removed else 0))
