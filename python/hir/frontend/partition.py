"""From a torch-mlir ``torch``-dialect function (what the FX importer makes of an exported
program) to a program-level hir function, nvFuser-style:

* ``aten.linear`` / ``matmul`` / ``mm`` / ``bmm``, elementwise ``add``/``sub`` (alpha 1),
  ``mul``/``div``/``maximum``/``minimum`` of two tensors, and ``sum``/``amax``/``amin`` over
  constant dims without keepdim become hir compute ops (``hir.linear``, ``hir.matmul``,
  ``hir.binary``, ``hir.reduction``) on memref buffers, so stream lowering and the P2P
  pipelines can slice them. Their element types must agree (no type promotion).
* every maximal run of other ops becomes one kernel segment: a ``func.func {hir.kernel}``
  holding the torch ops, called with its input buffers and the buffers it writes. Tensors
  cross the boundary as decided for hir (see ``hir.interpreter.ops.tensors``):
  ``bufferization.to_tensor`` + ``builtin.unrealized_conversion_cast`` in,
  ``unrealized_conversion_cast`` + ``bufferization.materialize_in_destination`` out.
  Constants (``torch.constant.*``, lists of constants) are cloned into each segment that
  uses them.

Before (FX importer)::

    %0 = torch.aten.linear %x, %w1, %b1 : ... -> !torch.vtensor<[8,64],f32>
    %1 = torch.aten.gelu %0, %str : !torch.vtensor<[8,64],f32>, !torch.str -> ...
    %2 = torch.aten.linear %1, %w2, %b2 : ... -> !torch.vtensor<[8,16],f32>

After::

    func.func private @segment_0(%in: memref<8x64xf32>, %out: memref<8x64xf32>) attributes {hir.kernel} {
      %t = bufferization.to_tensor %in restrict : ...   %v = unrealized_conversion_cast %t ...
      %g = torch.aten.gelu %v, %str ...
      %r = unrealized_conversion_cast %g ...   bufferization.materialize_in_destination %r in restrict writable %out
    }
    func.func @main(%w1, %b1, %w2, %b2, %x: memref<...>) -> memref<8x16xf32> {
      %0 = memref.alloc()   "hir.linear"(%x, %w1, %0, %b1)
      %1 = memref.alloc()   func.call @segment_0(%0, %1)
      %2 = memref.alloc()   "hir.linear"(%1, %w2, %2, %b2)
      return %2
    }

Buffer placements (shardings) come from a :class:`Placer` (see ``placements.py``); it may
also insert reshardings (``hir.set`` between placements) in front of an op.
"""

import contextlib
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import bufferization, builtin, func
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect import KERNEL_ATTR, BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp
from hir.dialect.base import DYNAMIC
from hir.dialect.context import HirError, format_location
from hir.dialect.sharding import sharding_of
from hir.frontend.dynamic import Sizes, is_size
from hir.dialect.irutils import alloc

_VTENSOR = re.compile(r"^!torch\.vtensor<\[(?P<shape>[^\]]*)\],(?P<dtype>[a-z0-9]+)>$")
_ELEMENT = {"si64": "i64", "si32": "i32", "si16": "i16", "si8": "i8", "ui8": "ui8"}
_BINARY = {
    torch_dialect.AtenAddTensorOp.OPERATION_NAME: "add",
    torch_dialect.AtenSubTensorOp.OPERATION_NAME: "sub",
    torch_dialect.AtenMulTensorOp.OPERATION_NAME: "mul",
    torch_dialect.AtenDivTensorOp.OPERATION_NAME: "div",
    torch_dialect.AtenMaximumOp.OPERATION_NAME: "max",
    torch_dialect.AtenMinimumOp.OPERATION_NAME: "min",
}
_REDUCTION = {
    torch_dialect.AtenSumDimIntListOp.OPERATION_NAME: "sum",
    torch_dialect.AtenAmaxOp.OPERATION_NAME: "max",
    torch_dialect.AtenAminOp.OPERATION_NAME: "min",
}
_MATMUL = tuple(cls.OPERATION_NAME for cls in (torch_dialect.AtenMatmulOp, torch_dialect.AtenMmOp, torch_dialect.AtenBmmOp))
_LINEAR = torch_dialect.AtenLinearOp.OPERATION_NAME
CONSTANT_PREFIX = "torch.constant."  # torch_dialect.Constant*Op, folded at plan time
LIST_CONSTRUCT = torch_dialect.PrimListConstructOp.OPERATION_NAME
_NONE = torch_dialect.ConstantNoneOp.OPERATION_NAME
_CAST = builtin.UnrealizedConversionCastOp.OPERATION_NAME


def tensor_info(t: ir.Type) -> Optional[tuple[list[int], str]]:
    """(shape, element type name) of a ranked ``!torch.vtensor`` (``DYNAMIC`` for ``?``), else None."""
    m = _VTENSOR.match(str(t))
    if not m:
        return None
    shape = [DYNAMIC if d == "?" else int(d) for d in m["shape"].split(",")] if m["shape"] else []
    return shape, m["dtype"]


def is_tensor(value: ir.Value) -> bool:
    return str(value.type).startswith("!torch.vtensor")


def constant_value(value: ir.Value):
    """The Python value of a ``torch.constant.*`` / list-of-constants operand; raises
    ValueError when it is not one."""
    if isinstance(value.owner, ir.Block):
        raise ValueError(f"{value.get_name()} is a function argument")
    op = _owner(value)
    name = op.name
    if name == _NONE:
        return None
    if name.startswith(CONSTANT_PREFIX):
        return op.attributes["value"].value
    if name == LIST_CONSTRUCT:
        return [constant_value(v) for v in op.operands]
    raise ValueError(f"{value.get_name()} is not a constant")


def torch_int(value: int) -> ir.Value:
    """A ``torch.constant.int`` at the current insertion point and location."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.Operation.create(torch_dialect.ConstantIntOp.OPERATION_NAME, results=[ir.Type.parse("!torch.int")], attributes={"value": ir.IntegerAttr.get(i64, value)}).result


def _is_constant(op: ir.Operation) -> bool:
    if op.name.startswith(CONSTANT_PREFIX):
        return True
    if op.name == LIST_CONSTRUCT:
        try:
            constant_value(op.results[0])
            return True
        except ValueError:
            return False
    return False


def _is_cloned(op: ir.Operation) -> bool:
    return _is_constant(op) or is_size(op)
    return False


@dataclass
class ComputeSpec:
    """An hir compute op for one torch op: its class, tensor operands and ``emit`` options."""

    op_class: type
    inputs: list  # torch values (tensors), in hir operand order before the output
    options: dict  # keyword arguments of op_class.emit (kind, axes)
    trailing: list  # torch values after the output (linear's bias)


def compute_spec(op: ir.Operation) -> Optional[ComputeSpec]:
    """The hir compute op replacing ``op``, or None when ``op`` belongs in a segment."""
    operands = list(op.operands)
    results = list(op.results)
    if len(results) != 1 or tensor_info(results[0].type) is None:
        return None
    dtype = tensor_info(results[0].type)[1]

    def same_dtype(values) -> bool:
        return all(is_tensor(v) and tensor_info(v.type) is not None and tensor_info(v.type)[1] == dtype for v in values)

    try:
        if op.name == _LINEAR:
            x, w, b = operands
            bias = [] if constant_value_or(b, "tensor") is None else [b]
            if len(tensor_info(w.type)[0]) == 2 and same_dtype([x, w] + bias):
                return ComputeSpec(LinearOp, [x, w], {}, bias)
        elif op.name in _MATMUL:
            a, b = operands
            if same_dtype([a, b]):
                return ComputeSpec(MatmulOp, [a, b], {}, [])
        elif op.name in _BINARY:
            a, b = operands[:2]
            if len(operands) == 3 and constant_value(operands[2]) != 1:
                return None
            if same_dtype([a, b]):
                return ComputeSpec(BinaryOp, [a, b], {"kind": _BINARY[op.name]}, [])
        elif op.name in _REDUCTION:
            x, dims, keepdim = operands[:3]
            rest = [constant_value(v) for v in operands[3:]]  # sum's dtype
            rank = len(tensor_info(x.type)[0])
            axes = sorted(d % rank for d in (constant_value(dims) or []))
            if axes and not constant_value(keepdim) and all(r is None for r in rest) and same_dtype([x]):
                return ComputeSpec(ReductionOp, [x], {"kind": _REDUCTION[op.name], "axes": axes}, [])
    except (ValueError, TypeError):
        return None  # a run-time scalar or an unusual operand: leave it to a segment
    return None


def constant_value_or(value: ir.Value, default):
    try:
        return constant_value(value)
    except ValueError:
        return default


class Placer:
    """Where tensors live: buffer types for torch values, and the hooks a sharded program
    needs (this base class places nothing: one device, full tensors)."""

    def memref_type(self, value: ir.Value) -> ir.MemRefType:
        return buffer_type(value.type, None)

    def local_type(self, value: ir.Value) -> ir.Type:
        """The type of ``value`` inside a kernel segment (a device-local shard's type)."""
        return value.type

    def read_type(self, value: ir.Value, buffer: ir.Value) -> ir.Type:
        """The type a kernel segment reads ``buffer`` (holding ``value``) as: the local shard
        of the buffer's placement (a replicated copy of a split value reads whole)."""
        return value.type

    def emit_compute(self, part: "Partitioner", op: ir.Operation, spec: ComputeSpec) -> bool:
        """Emit ``op`` (True) or leave it to :meth:`Partitioner.plain_compute` (False)."""
        return False

    def segment_inputs(self, part: "Partitioner", run: list, inputs: list, outputs: list) -> list:
        """The buffers a segment reads (resharded where needed); places its outputs."""
        return [part.buffer_of(v, run[0]) for v in inputs]

    def localize(self, old: ir.Operation, new: ir.Operation, ip: ir.InsertionPoint) -> None:
        """Adapt ``new``, the clone of ``old`` in a kernel segment, to local shards (e.g. a
        view's size list); nothing to do unsharded."""

    def output_buffer(self, part: "Partitioner", value: ir.Value, index: int, at: ir.Operation) -> ir.Value:
        """The buffer returned as output ``index``."""
        return part.buffer_of(value, at)

    def local_arguments(self, full: list, rank: Optional[int]) -> list:
        """The entry's arguments on ``rank`` from the full tensors (all of them: unsharded)."""
        return full

    def placed_as(self, part: "Partitioner", value: ir.Value, like: ir.Value, at: ir.Operation) -> ir.Value:
        """The buffer of ``value`` placed as ``like`` is (a state entry written back)."""
        return part.buffer_of(value, at)


def buffer_type(t: ir.Type, memory_space: Optional[ir.Attribute]) -> ir.MemRefType:
    info = tensor_info(t)
    if info is None:
        raise ValueError(f"{t} is not a statically shaped tensor")
    shape, dtype = info
    element = ir.Type.parse(_ELEMENT.get(dtype, dtype))
    return ir.MemRefType.get(shape, element, memory_space=memory_space)


class Partitioner:
    """Builds the hir module from one torch-dialect function (see the module docstring)."""

    def __init__(self, torch_func: func.FuncOp, placer: Placer, source_name: str = "<torch>", shapes: Optional[dict] = None) -> None:
        self.src = torch_func
        self.placer = placer
        self.source_name = source_name
        self.shapes = shapes or {}  # torch value -> symbolic shape (dynamic shapes; see dynamic.py)
        self.module = ir.Module.create()
        self.buffers: dict = {}  # torch value -> hir buffer value in @main
        self.segments = 0

    def error(self, op: ir.Operation, msg: str) -> HirError:
        return HirError(f"{format_location(op.location, self.source_name)}: error: '{op.name}' {msg}")

    def build(self, name: str = "main", mutated: Sequence[int] = ()) -> ir.Module:
        """@main; the first ``len(mutated)`` results of the torch function are new values of
        the arguments ``mutated`` names (a functionalized in-place write): they are copied
        into those argument buffers (``hir.set``) instead of being returned."""
        block = self.src.regions[0].blocks[0]
        arg_types = [self.placer.memref_type(a) for a in block.arguments]
        ops = [op.operation for op in block.operations]
        ret = ops[-1]
        with ir.InsertionPoint(self.module.body), self.src.location:
            main = func.FuncOp(name, ir.FunctionType.get(arg_types, []))
        entry = main.add_entry_block()
        self.main_ip = ir.InsertionPoint(entry)
        self.sizes = Sizes(self.shapes, list(zip(block.arguments, entry.arguments)))
        for torch_arg, buf in zip(block.arguments, entry.arguments):
            self.buffers[torch_arg] = buf
        run: list = []
        for op in ops[:-1]:
            if _is_cloned(op):
                continue
            spec = compute_spec(op)
            if spec is None:
                run.append(op)
                continue
            self.segment(run)
            run = []
            if not self.placer.emit_compute(self, op, spec):
                self.plain_compute(op, spec)
        self.segment(run)
        returned = list(ret.operands)
        for arg, value in zip(mutated, returned):
            target = entry.arguments[arg]
            source = self.placer.placed_as(self, value, block.arguments[arg], ret)
            with self.in_main(ret.location):
                SetOp.emit(source, target)
        returned = returned[len(mutated):]
        results = [self.owned_buffer(self.placer.output_buffer(self, v, i, ret), v, ret) for i, v in enumerate(returned)]
        with self.main_ip, ret.location:
            func.ReturnOp(results)
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [r.type for r in results]))
        return self.module

    # ----- @main --------------------------------------------------------------------------
    def buffer_of(self, value: ir.Value, at: ir.Operation) -> ir.Value:
        if value not in self.buffers:
            raise self.error(at, f"uses {value.get_name()} ({value.type}), which is not a tensor buffer of the program")
        return self.buffers[value]

    def new_buffer(self, t: ir.MemRefType, loc: ir.Location, like: Optional[ir.Value] = None) -> ir.Value:
        """A new buffer of type ``t``; its dynamic extents (``?``) are those of the torch
        value ``like`` (same global shape)."""
        with self.main_ip, loc:
            sizes = self.sizes.of(like, t, format_location(loc, self.source_name)) if like is not None else []
            if not sizes and any(d == DYNAMIC for d in t.shape):
                raise HirError(f"{format_location(loc, self.source_name)}: error: a buffer of dynamic type {t} made for this placement has no known sizes: mark fewer dims dynamic, or place it differently")
            return alloc(t, sizes).result

    def alloc(self, value: ir.Value, loc: ir.Location) -> ir.Value:
        buf = self.buffers[value] = self.new_buffer(self.placer.memref_type(value), loc, value)
        return buf

    @contextlib.contextmanager
    def in_main(self, loc: ir.Location) -> Iterator[None]:
        """Build into @main (at its end, at ``loc``): ``with part.in_main(loc): SetOp.emit(...)``."""
        with self.main_ip, loc:
            yield

    def owned_buffer(self, buf: ir.Value, value: ir.Value, at: ir.Operation) -> ir.Value:
        """A returned buffer; a returned program argument is copied (outputs are fresh)."""
        if isinstance(buf.owner, ir.Block):
            out = self.new_buffer(buf.type, at.location, value)
            with self.in_main(at.location):
                SetOp.emit(buf, out)
            return out
        return buf

    def plain_compute(self, op: ir.Operation, spec: ComputeSpec, ins: Optional[list] = None, trailing: Optional[list] = None) -> None:
        """``spec``'s hir op writing a new buffer for ``op``'s result (operand buffers as
        given, else the values' own)."""
        ins = ins if ins is not None else [self.buffer_of(v, op) for v in spec.inputs]
        trailing = trailing if trailing is not None else [self.buffer_of(v, op) for v in spec.trailing]
        out = self.alloc(op.results[0], op.location)
        with self.in_main(op.location):
            spec.op_class.emit(*ins, out, *trailing, **spec.options)

    # ----- segments -----------------------------------------------------------------------
    def segment(self, run: list) -> None:
        """One kernel segment for the ops of ``run`` (a maximal run of non-compute ops)."""
        if not run:
            return
        inside = set()
        for op in run:
            inside.update(op.results)
        inputs: list = []
        sizes: list = []  # size computations cloned in (dynamic shapes)

        def read(op: ir.Operation, v: ir.Value) -> None:
            if v in inside or v in inputs:
                return
            if _is_cloned_value(v):  # cloned in; a size reads its tensors' shapes
                if not _is_constant(_owner(v)):
                    sizes.append(_owner(v))
                for w in _owner(v).operands:
                    read(op, w)
                return
            if not is_tensor(v):
                raise self.error(op, f"takes {v.get_name()} ({v.type}) from outside its segment; only tensors cross segment boundaries")
            inputs.append(v)

        for op in run:
            for v in op.operands:
                read(op, v)
        members = set(run)
        outputs = [r for op in run for r in op.results if any(_user(use) not in members for use in r.uses)]
        for r in outputs:
            if not is_tensor(r):
                raise self.error(_owner(r), f"result {r.get_name()} ({r.type}) is used outside its segment; only tensors cross segment boundaries")
        if not outputs:
            return  # nothing of it is used (e.g. shape assertions): dead code
        in_bufs = self.placer.segment_inputs(self, run, inputs, outputs)
        if sizes and any(_splits_dynamic(b) for b in in_bufs):
            raise self.error(sizes[0], "computes a size in a kernel segment that reads a dynamic dim split over devices; that is not supported yet: keep the split dim static, or replicate it")
        out_bufs = [self.alloc(r, run[-1].location) for r in outputs]
        local_in = [self.placer.read_type(v, b) for v, b in zip(inputs, in_bufs)]

        def body(values: list, ip: ir.InsertionPoint) -> list:
            mapping = dict(zip(inputs, values))
            for op in run:
                self.clone_into(op, mapping, ip)
            return [mapping[r] for r in outputs]

        self.kernel(in_bufs, out_bufs, local_in, body, run[0].location)

    def kernel(self, in_bufs: list, out_bufs: list, local_in: list, body: Callable, loc: ir.Location) -> None:
        """A ``func.func {hir.kernel}`` reading ``in_bufs`` (as torch tensors of types
        ``local_in``) and writing what ``body(values, ip)`` returns into ``out_bufs``, and
        its call in @main."""
        name = f"segment_{self.segments}"
        self.segments += 1
        types = [b.type for b in in_bufs + out_bufs]
        with ir.InsertionPoint(self.module.body), loc:
            kernel = func.FuncOp(name, ir.FunctionType.get(types, []), visibility="private")
            kernel.operation.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
        block = kernel.add_entry_block()
        ip = ir.InsertionPoint(block)
        args = list(block.arguments)
        with ip, loc:
            values = [ir.Operation.create(_CAST, results=[t], operands=[_to_tensor(arg)]).result for arg, t in zip(args, local_in)]
        results = body(values, ip)
        with ip, loc:
            for value, arg in zip(results, args[len(in_bufs):]):
                mem = ir.MemRefType(arg.type)
                tensor = ir.Operation.create(_CAST, results=[ir.RankedTensorType.get(mem.shape, mem.element_type)], operands=[value]).result
                ir.Operation.create(
                    bufferization.MaterializeInDestinationOp.OPERATION_NAME, operands=[tensor, arg], attributes={"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()}
                )
            func.ReturnOp([])
        with self.main_ip, loc:
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), in_bufs + out_bufs)

    def clone_into(self, op: ir.Operation, mapping: dict, ip: ir.InsertionPoint) -> None:
        for v in op.operands:
            if v not in mapping and _is_cloned_value(v):
                self.clone_into(_owner(v), mapping, ip)
        new = op.clone(ip=ip)
        for i, v in enumerate(op.operands):
            new.operands[i] = mapping[v]
        self.placer.localize(op, new, ip)
        for old, fresh in zip(op.results, new.results):
            if is_tensor(old):
                fresh.set_type(self.placer.local_type(old))
            mapping[old] = fresh


def _splits_dynamic(buffer: ir.Value) -> bool:
    """Whether ``buffer``'s placement splits one of its dynamic dims."""
    sharding = sharding_of(buffer.type)
    return sharding is not None and any(d == DYNAMIC and sharding.parts(i) > 1 for i, d in enumerate(ir.MemRefType(buffer.type).shape))


def _owner(value: ir.Value) -> ir.Operation:
    owner = value.owner
    return owner if isinstance(owner, ir.Operation) else owner.operation


def _is_cloned_value(value: ir.Value) -> bool:
    return not isinstance(value.owner, ir.Block) and _is_cloned(_owner(value))


def _user(use) -> ir.Operation:
    user = use.owner
    return user if isinstance(user, ir.Operation) else user.operation


def _to_tensor(buffer: ir.Value) -> ir.Value:
    t = ir.MemRefType(buffer.type)
    tensor_type = ir.RankedTensorType.get(t.shape, t.element_type)
    return ir.Operation.create(bufferization.ToTensorOp.OPERATION_NAME, results=[tensor_type], operands=[buffer], attributes={"restrict": ir.UnitAttr.get()}).result
