"""Data-movement ``linalg`` named ops and the ``tensor`` ops that partitioned programs and
the FX importer put around them, on tensor values inside kernel segments:

    %e = tensor.empty() : tensor<8x16xf32>                  -> torch.empty
    %z = linalg.fill ins(%c : f32) outs(%e : ...)            -> torch.full
    %t = linalg.transpose ins(%a) outs(%e) permutation = [1, 0]    -> a.permute
    %b = linalg.broadcast ins(%v) outs(%e) dimensions = [0]  -> v.unsqueeze.expand
    %x = tensor.expand_shape / tensor.collapse_shape         -> reshape (a view when possible)
    %s = tensor.extract_slice %t[0, %o] [8, 4] [1, 1]       -> a strided view (shard.all_slice)
    %u = tensor.insert_slice %s into %t[2, 0] [8, 4] [1, 1]  -> a copy of %t, the slice overwritten
    %k = arith.constant dense<...> : tensor<...>             -> a torch tensor made once

Results are new values: nothing here writes a tensor in place (insert_slice copies). The one exception is
``linalg.fill`` on a memref (no result), which sets a host buffer to a scalar, e.g. the loop
index cast to a float. hir has no ``hir.fill`` / ``hir.iota`` because the upstream
op on memrefs already is destination-passing style and verified; an iota (0..n-1) is a kernel
segment (``torch.aten.arange`` in a ``func.func {hir.kernel}``), the one model for element-wise
compute.
"""

import numpy as np
import torch
from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from hir.dialect.base import required_i64_array
from hir.interpreter.buffers import torch_dtype
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl

DYNAMIC = ir.ShapedType.get_dynamic_size()


def _shape_maker(c: Compiler, result: ir.Value, dynamic_slots: list[int]):
    """``f(env) -> shape`` for a result type whose ``?`` dims come from index operands."""
    static = list(ir.ShapedType(result.type).shape)
    if DYNAMIC not in static:
        shape = tuple(static)
        return lambda env: shape
    positions = [i for i, d in enumerate(static) if d == DYNAMIC]

    def shape_of(env: list) -> tuple:
        out = list(static)
        for position, slot in zip(positions, dynamic_slots):
            out[position] = env[slot]
        return tuple(out)

    return shape_of


@impl(tensor.EmptyOp)
def empty(c: Compiler, op: ir.OpView) -> Step | None:
    result = op.operation.results[0]
    shape_of = _shape_maker(c, result, c.uses(op))
    dtype, device = torch_dtype(ir.ShapedType(result.type).element_type), c.runtime.device
    out = c.define(result)

    def empty_step(env: list) -> None:
        env[out] = torch.empty(shape_of(env), dtype=dtype, device=device)

    return empty_step


@impl(linalg.FillOp)
def fill(c: Compiler, op: ir.OpView) -> Step | None:
    value, init = c.uses(op)
    if not op.operation.results:  # on a memref: fill the buffer

        def fill_buffer(env: list) -> None:
            env[init].fill_(env[value])

        return fill_buffer
    out = c.define(op.operation.results[0])

    def fill_step(env: list) -> None:
        target = env[init]
        env[out] = torch.full(target.shape, env[value], dtype=target.dtype, device=target.device)

    return fill_step


def _unary_view(c: Compiler, op: ir.OpView, fn) -> Step:
    """A step computing ``fn(input, init)``: into the result value, or into a memref ``outs``."""
    src, init = c.uses(op)
    if not op.operation.results:

        def into_buffer(env: list) -> None:
            env[init].copy_(fn(env[src], env[init]))

        return into_buffer
    out = c.define(op.operation.results[0])

    def step(env: list) -> None:
        env[out] = fn(env[src], env[init])

    return step


@impl(linalg.TransposeOp)
def transpose(c: Compiler, op: ir.OpView) -> Step | None:
    perm = required_i64_array(op, "permutation")
    return _unary_view(c, op, lambda t, init: t.permute(perm))


@impl(linalg.BroadcastOp)
def broadcast(c: Compiler, op: ir.OpView) -> Step | None:
    """``dimensions`` lists the output dims the input lacks."""
    dims = required_i64_array(op, "dimensions")
    rank = ir.ShapedType(op.operation.operands[1].type).rank
    index = tuple(None if d in dims else slice(None) for d in range(rank))
    return _unary_view(c, op, lambda t, init: t[index].expand(init.shape))


@impl(tensor.ExpandShapeOp, tensor.CollapseShapeOp)
def reshape(c: Compiler, op: ir.OpView) -> Step | None:
    slots = c.uses(op)
    result = op.operation.results[0]
    shape_of = _shape_maker(c, result, slots[1:])
    src, out = slots[0], c.define(result)

    def reshape_step(env: list) -> None:
        env[out] = env[src].reshape(shape_of(env))

    return reshape_step


def _static_or_slot(static: list[int], slots: list[int]) -> list:
    """Each entry: an int (static) or ("slot", n) for a dynamic entry read at run time."""
    dynamic = iter(slots)
    return [("slot", next(dynamic)) if v == DYNAMIC_INDEX else v for v in static]


DYNAMIC_INDEX = ir.ShapedType.get_dynamic_stride_or_offset()  # also MLIR's dynamic size marker


def _slicer(c: Compiler, op: ir.OpView, tensors: int, small: ir.Type):
    """(slots of the ``tensors`` tensor operands, env -> the index of the slice) of an
    extract_slice / insert_slice: offsets, sizes and strides (static or index operands) as
    one slice per dim; a rank-reducing slice (``small`` of lower rank) is refused (its
    dropped dims are not recorded here)."""
    slots = c.uses(op)
    counts = list(ir.DenseI32ArrayAttr(op.operation.attributes["operandSegmentSizes"]))
    dyn = slots[tensors:]
    offsets = _static_or_slot(required_i64_array(op, "static_offsets"), dyn[: counts[tensors]])
    sizes = _static_or_slot(
        required_i64_array(op, "static_sizes"), dyn[counts[tensors] : counts[tensors] + counts[tensors + 1]]
    )
    strides = _static_or_slot(required_i64_array(op, "static_strides"), dyn[counts[tensors] + counts[tensors + 1] :])
    if ir.ShapedType(small).rank != len(sizes):
        raise c.error(op, "drops unit dims (a rank-reducing slice), which the interpreter does not run")

    def value(entry, env):
        return env[entry[1]] if isinstance(entry, tuple) else entry

    def index(env: list) -> tuple:
        out = []
        for o, n, s in zip(offsets, sizes, strides):
            start, step = value(o, env), value(s, env)
            out.append(slice(start, start + value(n, env) * step, step))
        return tuple(out)

    return slots[:tensors], index


@impl(tensor.ExtractSliceOp)
def extract_slice(c: Compiler, op: ir.OpView) -> Step | None:
    """A strided view of the source."""
    (src,), index = _slicer(c, op, 1, op.operation.results[0].type)
    out = c.define(op.operation.results[0])

    def slice_step(env: list) -> None:
        env[out] = env[src][index(env)]

    return slice_step


@impl(tensor.InsertSliceOp)
def insert_slice(c: Compiler, op: ir.OpView) -> Step | None:
    """A new tensor: the destination with the source written over the slice (a halo update,
    shard-partition's padding of a local tensor with halos)."""
    (src, dest), index = _slicer(c, op, 2, op.operation.operands[0].type)
    out = c.define(op.operation.results[0])

    def insert_step(env: list) -> None:
        result = env[dest].clone()
        result[index(env)] = env[src]
        env[out] = result

    return insert_step


def dense_constant(attr: ir.DenseElementsAttr, device: torch.device) -> torch.Tensor:
    """A torch tensor holding the elements of a dense attribute."""
    shaped = ir.ShapedType(attr.type)
    dtype = torch_dtype(shaped.element_type)
    if attr.is_splat:
        splat = attr.get_splat_value()
        assert isinstance(splat, (ir.FloatAttr, ir.IntegerAttr, ir.BoolAttr)), "the element type has a torch dtype"
        return torch.full(list(shaped.shape), splat.value, dtype=dtype, device=device)
    return torch.from_numpy(np.array(attr)).to(dtype=dtype, device=device).reshape(list(shaped.shape))
