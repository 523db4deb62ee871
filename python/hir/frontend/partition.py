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

Which torch ops become compute ops is registered beside their placement strategies
(``register_compute_form`` in :mod:`hir.frontend.strategies`). Buffer placements come from
the :class:`~hir.frontend.placer.PlacementPlan` the placer decided: the partitioner builds
what it says (buffer types, a resharding ``hir.set`` where a step reads a value placed
otherwise, local size lists in segments on local shards, the contraction forms of
:mod:`hir.frontend.contractions`) and decides nothing.
"""

import contextlib
from collections.abc import Callable, Iterator, Sequence

from torch_mlir import ir
from torch_mlir.dialects import bufferization, builtin, func

from hir.dialect import KERNEL_ATTR, SetOp, Sharding
from hir.dialect.base import DYNAMIC
from hir.dialect.context import HirError, format_location
from hir.dialect.irutils import alloc
from hir.frontend import contractions, device_parts, packed
from hir.frontend.dynamic import Sizes
from hir.frontend.inplace import write_in_place
from hir.frontend.placement_plan import ComputeStep, Gathered, PartialStep, PlacementPlan, SegmentStep
from hir.frontend.strategies import STRATEGIES, ComputeSpec, op_key
from hir.frontend.torch_ir import (
    LIST_CONSTRUCT,
    buffer_type,
    constant_value,
    is_cloned_value,
    is_tensor,
    owner,
    ranked_info,
    torch_int,
    torch_op,
    vtensor,
)

_CAST = builtin.UnrealizedConversionCastOp.OPERATION_NAME


class Partitioner:
    """Builds the hir module from one torch-dialect function and its placement plan (see the
    module docstring)."""

    def __init__(
        self, torch_func: func.FuncOp, plan: PlacementPlan, source_name: str = "<torch>", shapes: dict | None = None
    ) -> None:
        self.src = torch_func
        self.plan = plan
        self.source_name = source_name
        self.shapes = shapes or {}  # torch value -> symbolic shape (dynamic shapes; see dynamic.py)
        self.module = ir.Module.create()
        self.buffers: dict = {}  # torch value -> hir buffer value in @main
        self.copies: dict = {}  # (torch value, placement) -> resharded buffer
        self.segments = 0

    def error(self, op: ir.Operation, msg: str) -> HirError:
        return HirError(f"{format_location(op.location, self.source_name)}: error: '{op.name}' {msg}")

    def build(self, name: str = "main", mutated: Sequence[int] = ()) -> ir.Module:
        """@main; the first ``len(mutated)`` results of the torch function are new values of
        the arguments ``mutated`` names (a functionalized in-place write): they are copied
        into those argument buffers (``hir.set``) instead of being returned, or written
        there by the kernel segment computing them (:mod:`hir.frontend.inplace`)."""
        block = self.src.regions[0].blocks[0]
        arg_types = [self.memref_type(a) for a in block.arguments]
        ret = [op.operation for op in block.operations][-1]
        with ir.InsertionPoint(self.module.body), self.src.location:
            main = func.FuncOp(name, ir.FunctionType.get(arg_types, []))
        entry = main.add_entry_block()
        self.main_ip = ir.InsertionPoint(entry)
        self.sizes = Sizes(self.shapes, list(zip(block.arguments, entry.arguments)))
        for torch_arg, buf in zip(block.arguments, entry.arguments):
            self.buffers[torch_arg] = buf
        steps, built = self.plan.steps, set()
        for i, step in enumerate(steps):
            if i in built:
                continue
            if isinstance(step, SegmentStep):
                self.segment(step)
            elif isinstance(step, PartialStep):
                device_parts.partial_segment(self, step)
            elif isinstance(step.form, Gathered) and not step.spec.redistributes:
                siblings = [j for j in self._gathered_siblings(steps, i) if j not in built]
                built.update(siblings)
                group = [step] + [steps[j] for j in siblings]
                for s, buf in zip(group, contractions.stream_gathered(self, group)):
                    self.buffers[s.op.results[0]] = buf
            else:
                self.compute(step)
        returned = list(ret.operands)
        sets = []
        for arg, value in zip(mutated, returned):
            source = self.read(value, self.plan.of(block.arguments[arg]), ret)
            with self.in_main(ret.location):
                sets.append(SetOp.emit(source, entry.arguments[arg]))
        write_in_place(
            sets, {ir.StringAttr(f.attributes["sym_name"]).value: f.operation for f in self.module.body.operations}
        )
        returned = returned[len(mutated) :]
        results = [
            self.owned_buffer(self.read(v, placement, ret), v, ret) for v, placement in zip(returned, self.plan.results)
        ]
        with self.main_ip, ret.location:
            func.ReturnOp(results)
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [r.type for r in results]))
        return self.module

    # ----- types --------------------------------------------------------------------------
    def memref_type(self, value: ir.Value) -> ir.MemRefType:
        return buffer_type(value.type, self.attr(self.plan.of(value)))

    def attr(self, placement: Sharding | None) -> ir.Attribute | None:
        return None if placement is None else placement.attr()

    def local_type(self, value: ir.Value, placement: Sharding | None) -> ir.Type:
        """The type of ``value`` inside a kernel segment: the local shard of ``placement``."""
        if placement is None:
            return value.type
        shape, dtype = ranked_info(value)
        return vtensor(placement.local_shape(shape), dtype)

    # ----- @main --------------------------------------------------------------------------
    def buffer_of(self, value: ir.Value, at: ir.Operation) -> ir.Value:
        if value not in self.buffers:
            raise self.error(at, f"uses {value.get_name()} ({value.type}), which is not a tensor buffer of the program")
        return self.buffers[value]

    def read(self, value: ir.Value, placement: Sharding | None, at: ir.Operation, again: bool = False) -> ir.Value:
        """The buffer of ``value`` placed as ``placement``: its own, or a resharded copy made
        once per placement: each device's slice where ``placement`` only splits what is
        whole (:func:`~hir.frontend.device_parts.local_slice`), else an ``hir.set``.
        ``again``: an ``hir.set`` of its own where a copy was made before (an explicit
        redistribute asks for one: a fully sharded parameter gathered again for the
        backward, so the forward's copy can die)."""
        have = self.plan.of(value)
        if have == placement:
            return self.buffer_of(value, at)
        key = (value, placement)
        if again and key in self.copies and not device_parts.is_local_slice(have, placement):
            buf = self.new_buffer(buffer_type(value.type, self.attr(placement)), at.location, value)
            with self.in_main(at.location):
                SetOp.emit(self.buffer_of(value, at), buf)
            return buf
        if key not in self.copies:
            if have is not None and placement is not None and device_parts.is_local_slice(have, placement):
                self.copies[key] = device_parts.local_slice(self, value, have, placement, at)
                return self.copies[key]
            buf = self.new_buffer(buffer_type(value.type, self.attr(placement)), at.location, value)
            with self.in_main(at.location):
                SetOp.emit(self.buffer_of(value, at), buf)
            self.copies[key] = buf
        return self.copies[key]

    def new_buffer(self, t: ir.MemRefType, loc: ir.Location, like: ir.Value | None = None) -> ir.Value:
        """A new buffer of type ``t``; its dynamic extents (``?``) are those of the torch
        value ``like`` (same global shape)."""
        with self.main_ip, loc:
            sizes = self.sizes.of(like, t, format_location(loc, self.source_name)) if like is not None else []
            if not sizes and any(d == DYNAMIC for d in t.shape):
                raise HirError(
                    f"{format_location(loc, self.source_name)}: error: a buffer of dynamic type {t} made "
                    "for this placement has no known sizes: mark fewer dims dynamic, or place it differently"
                )
            return alloc(t, sizes).result

    def alloc(self, value: ir.Value, loc: ir.Location) -> ir.Value:
        buf = self.buffers[value] = self.new_buffer(self.memref_type(value), loc, value)
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

    # ----- compute ops ----------------------------------------------------------------------
    def compute(self, step: ComputeStep) -> None:
        """The step's hir compute op (or its contraction form) on its operands as it reads them."""
        op, spec = step.op, step.spec
        if spec.redistributes:  # a plan style's layout: the operand read as placed
            self.buffers[op.results[0]] = self.read(spec.inputs[0], step.reads[0], op, again=True)
        elif step.form is not None:
            self.buffers[op.results[0]] = contractions.partial_sum(self, step)
        else:
            bufs = [self.read(v, r, op) for v, r in zip(spec.inputs + spec.trailing, step.reads)]
            self.plain_compute(op, spec, bufs[: len(spec.inputs)], bufs[len(spec.inputs) :])

    def _gathered_siblings(self, steps: list, i: int) -> list[int]:
        """The later steps that gather the same rows as step ``i`` (q, k and v of one normed
        activation; gate and up), each reading nothing built after step ``i``: they are
        built with it, on one gathered buffer, so the rows are gathered once and the
        consumers sit together after the gather (what hir-p2p-pipeline pipelines as one
        all-gather feeding several ops)."""
        step = steps[i]
        x = step.spec.inputs[0]
        return [
            j
            for j in range(i + 1, len(steps))
            if isinstance(steps[j], ComputeStep)
            and steps[j].form == step.form
            and not steps[j].spec.redistributes
            and steps[j].spec.inputs[0] == x
            and steps[j].reads[0] == step.reads[0]
            and all(v in self.buffers for v in steps[j].spec.inputs[1:] + steps[j].spec.trailing)
        ]

    def plain_compute(self, op: ir.Operation, spec: ComputeSpec, ins: list, trailing: list) -> None:
        """``spec``'s hir op writing a new buffer for ``op``'s result."""
        out = self.alloc(op.results[0], op.location)
        with self.in_main(op.location):
            spec.op_class.emit(*ins, out, *trailing, **spec.options)

    # ----- segments -----------------------------------------------------------------------
    def segment(self, step: SegmentStep) -> None:
        """One kernel segment for the ops of ``step`` (a maximal run of non-compute ops)."""
        in_bufs = [self.read(v, r, step.ops[0]) for v, r in zip(step.inputs, step.reads)]
        out_bufs = [self.alloc(r, step.ops[-1].location) for r in step.outputs]
        local_in = [self.local_type(v, r) for v, r in zip(step.inputs, step.reads)]

        def body(values: list, ip: ir.InsertionPoint) -> list:
            mapping = dict(zip(step.inputs, values))
            for op in step.ops:
                self.clone_into(op, mapping, ip)
            return [mapping[r] for r in step.outputs]

        self.kernel(in_bufs, out_bufs, local_in, body, step.ops[0].location)

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
            values = [
                ir.Operation.create(_CAST, results=[t], operands=[_to_tensor(arg)]).result
                for arg, t in zip(args, local_in)
            ]
        results = body(values, ip)
        with ip, loc:
            for value, arg in zip(results, args[len(in_bufs) :]):
                mem = ir.MemRefType(arg.type)
                tensor = ir.Operation.create(
                    _CAST, results=[ir.RankedTensorType.get(mem.shape, mem.element_type)], operands=[value]
                ).result
                ir.Operation.create(
                    bufferization.MaterializeInDestinationOp.OPERATION_NAME,
                    operands=[tensor, arg],
                    attributes={"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()},
                )
            func.ReturnOp([])
        with self.main_ip, loc:
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), in_bufs + out_bufs)

    def clone_value(self, value: ir.Value, mapping: dict, ip: ir.InsertionPoint) -> ir.Value:
        """``value`` inside a segment: mapped, or (a constant, a size) cloned in."""
        if value not in mapping:
            self.clone_into(owner(value), mapping, ip)
        return mapping[value]

    def clone_into(self, op: ir.Operation, mapping: dict, ip: ir.InsertionPoint) -> None:
        for v in op.operands:
            if v not in mapping and is_cloned_value(v):
                self.clone_into(owner(v), mapping, ip)
        new = op.clone(ip=ip)
        for i, v in enumerate(op.operands):
            new.operands[i] = mapping[v]
        results = [r for r in op.results if is_tensor(r)]
        if results and self.plan.grid is not None:
            for split, devices in zip(self.plan.on_mesh(results[0]).splits, self.plan.grid.shape):
                _localize_sizes(op, new, split, devices, ip)
        source = op.operands[0] if len(op.operands) and is_tensor(op.operands[0]) else None
        if (
            source is not None
            and self.plan.grid is not None
            and self.plan.on_mesh(source).packed
            and not self.plan.on_mesh(op.results[0]).packed
        ):
            self._localize_cut(op, new, source, ip)
        for old, fresh in zip(op.results, new.results):
            if is_tensor(old):
                fresh.set_type(self.local_type(old, self.plan.of(old)))
            mapping[old] = fresh

    def _localize_cut(self, op: ir.Operation, new: ir.Operation, source: ir.Value, ip: ir.InsertionPoint) -> None:
        """A cut of a packed value into its pieces (:func:`hir.frontend.packed.cut`) on the
        device's part: its sizes divided by the devices of the packed dim."""
        placed = self.plan.on_mesh(source)
        axis = next(a for a, _ in placed.packed)
        with ip, new.location:
            for index, value in packed.local_cut(op, source, placed.parts(axis)).items():
                constant = (
                    torch_int(value)
                    if isinstance(value, int)
                    else torch_op(LIST_CONSTRUCT, [torch_int(v) for v in value], ir.Type.parse("!torch.list<int>"))
                )
                new.move_after(constant.owner)
                new.operands[index] = constant


def _localize_sizes(
    old: ir.Operation, new: ir.Operation, split: int | None, devices: int, ip: ir.InsertionPoint
) -> None:
    """In a segment on local shards, give the clone ``new`` of ``old`` its local size list
    (the entry of the split extent divided by the devices; an inferred ``-1`` stays), where
    ``old``'s strategy names that entry (``local_sizes``)."""
    strategy = STRATEGIES.get(op_key(old))
    at = None if split is None or strategy is None or strategy.local_sizes is None else strategy.local_sizes(old, split)
    if at is None:
        return
    index, entry = at
    sizes = new.operands[index].owner
    entries = list(sizes.operands)
    if not entries[entry].owner.name.startswith("torch.constant.") or constant_value(entries[entry]) == -1:
        return  # inferred, or a size the segment computes from its local tensors (dynamic shapes)
    with ip, new.location:
        entries[entry] = torch_int(constant_value(entries[entry]) // devices)
        rebuilt = ir.Operation.create(sizes.name, results=[sizes.results[0].type], operands=entries).result
    new.move_after(rebuilt.owner)
    new.operands[index] = rebuilt


def _to_tensor(buffer: ir.Value) -> ir.Value:
    t = ir.MemRefType(buffer.type)
    tensor_type = ir.RankedTensorType.get(t.shape, t.element_type)
    return ir.Operation.create(
        bufferization.ToTensorOp.OPERATION_NAME,
        results=[tensor_type],
        operands=[buffer],
        attributes={"restrict": ir.UnitAttr.get()},
    ).result
