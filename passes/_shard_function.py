"""The conversion of one partitioned function (``hir-convert-shard-to-hir``): walks its ops
in order, building the hir program before each one, then erases the tensor program."""

from typing import Callable, Optional

from torch_mlir import ir
from torch_mlir.dialects import arith, func, scf, shard, tensor

from hir.dialect import BinaryOp, MatmulOp, sharding_of
from hir.dialect.linalg_facts import BINARY_NAMED
from hir.passes.base import PassFailure
from hir.passes._shard_collectives import DEVICE_INDEX_OPS, Collectives, fail, is_tensor, needed_downstream
from hir.passes._shard_halo import Halos
from hir.passes._shard_extents import Extents
from hir.passes._shard_shift import Shifts
from hir.passes._shard_kernels import Port, build_kernel, closure
from hir.passes._shard_placement import (
    FREE,
    GLOBAL_TYPE_ATTR,
    OFFSETS_ATTR,
    PARTIAL,
    REPLICATED,
    SPLIT_AXES_ATTR,
    Grid,
    GridPlacement,
    PlacementError,
    infer,
    maps_of,
    split,
    split_axes_placement,
)


def _entries(attrs: ir.Attribute) -> dict:
    return {named.name: named.attr for named in ir.DictAttr(attrs)}


class FunctionConversion(Collectives, Halos, Shifts, Extents):
    """Converts one function in place; kernel segments are added before it in the module."""

    def __init__(self, fn: ir.Operation, grid: Grid, backend: ir.StringAttr) -> None:
        self.fn = fn
        self.grid = grid
        self.backend = backend
        self.name = ir.StringAttr(fn.attributes["sym_name"]).value
        self.block = fn.regions[0].blocks[0]
        self.buffers: dict = {}  # tensor value -> its buffer
        self.scalars: dict = {}  # host scalar value -> its value in the converted function
        self.host: dict = {}  # host scalar value -> its producer, cloned on first use
        self.placements: dict = {}
        self.arg_tensor_types: dict = {}  # argument -> its tensor type before retyping
        self.free: dict = {}  # value -> producer cloned where the value is read
        self.zero: set = set()  # free values known to be all zeros
        self.kernels = 0
        self.rewritten: dict = {}  # position of an op -> ops added in its place to the tensor program
        self.team = ir.DenseI64ArrayAttr.get(list(grid.mesh))
        self.work_type = ir.Type.parse("!hir.work")
        self.replicated = GridPlacement.uniform(REPLICATED, grid.rank)
        self.free_placement = GridPlacement.uniform(FREE, grid.rank)

    # ----- driver ----------------------------------------------------------------------
    def run(self) -> None:
        ops = [op.operation for op in self.block.operations]
        self.arguments()
        for position, op in enumerate(ops[:-1]):
            self.position = position
            self.ip = ir.InsertionPoint(op)
            self.loc = op.location
            try:
                self.convert(op)
            except PlacementError as err:  # raised by placement arithmetic anywhere in a handler
                raise fail(op, str(err)) from None
        ret = ops[-1]
        self.ip, self.loc = ir.InsertionPoint(ret), ret.location
        results = [self.buffer(v, ret) if self.is_data(v) else self.scalar(v, ret) for v in ret.operands]
        for index, value in enumerate(results):
            self.check_global(f"result #{index}", value.type, self.result_globals.get(index), ret.location, self.result_offsets.get(index))
        for index, value in enumerate(results):
            ret.operands[index] = value
        for position in reversed(range(len(ops) - 1)):  # users before producers
            ops[position].erase()
            for op in self.rewritten.get(position, []):
                op.erase()
        arg_types = [a.type for a in self.block.arguments]
        self.fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in results]))

    def arguments(self) -> None:
        attrs = self.fn.attributes
        arg_attrs = [_entries(a) for a in ir.ArrayAttr(attrs["arg_attrs"])] if "arg_attrs" in attrs else []
        res_attrs = [_entries(a) for a in ir.ArrayAttr(attrs["res_attrs"])] if "res_attrs" in attrs else []
        self.result_globals = {i: e[GLOBAL_TYPE_ATTR] for i, e in enumerate(res_attrs) if GLOBAL_TYPE_ATTR in e}
        self.result_offsets = {i: list(ir.DenseI64ArrayAttr(e[OFFSETS_ATTR])) for i, e in enumerate(res_attrs) if OFFSETS_ATTR in e}
        for index, arg in enumerate(self.block.arguments):
            if not is_tensor(arg):
                self.scalars[arg] = arg
                continue
            entries = arg_attrs[index] if index < len(arg_attrs) else {}
            placement = self.argument_placement(arg, entries)
            self.placements[arg] = placement
            self.arg_tensor_types[arg] = arg.type
            self.loc = self.fn.location
            arg.set_type(self.buffer_type(arg.type, placement, f"'func.func' op @{self.name} argument #{index}"))
            offsets = list(ir.DenseI64ArrayAttr(entries[OFFSETS_ATTR])) if OFFSETS_ATTR in entries else None
            self.check_global(f"argument #{index}", arg.type, entries.get(GLOBAL_TYPE_ATTR), self.fn.location, offsets)
            self.buffers[arg] = arg
        if "arg_attrs" in attrs:  # the recorded placements now live in the types
            del attrs["arg_attrs"]
        if "res_attrs" in attrs:
            del attrs["res_attrs"]

    def argument_placement(self, arg: ir.Value, entries: dict) -> GridPlacement:
        """From ``hir.split_axes``, else from the collective that reads the argument (a
        hand-partitioned program: all_gather needs it split, all_reduce a partial sum, ...);
        an argument nothing reads is replicated; otherwise where it lives is unknown: an
        error, never a guess."""
        rank = ir.RankedTensorType(arg.type).rank
        where = f"'func.func' op @{self.name} argument #{arg.arg_number}"
        if SPLIT_AXES_ATTR in entries:
            try:
                offsets = list(ir.DenseI64ArrayAttr(entries[OFFSETS_ATTR])) if OFFSETS_ATTR in entries else None
                return split_axes_placement(entries[SPLIT_AXES_ATTR], rank, self.grid, offsets)
            except PlacementError as err:
                raise PassFailure(f"{where}: {err}", self.fn.location) from None
        found = needed_downstream(arg)  # no record: what the first collective reading it needs
        if found is not None:
            return self.replicated.with_axes(self.grid_axes(found[0]), found[1])
        if not any(True for _ in arg.uses):  # nothing reads it: no placement can be misread
            return self.replicated
        raise PassFailure(
            f"{where} ({arg.type}) does not say where it lives: give it {{{SPLIT_AXES_ATTR} = #shard<axisarray[...]>}}, "
            "the split axes of its shard.sharding (#shard<axisarray[[]]> when replicated), or partition an annotated "
            "program with the hir-from-shard pipeline, which records them",
            self.fn.location,
        )

    def check_global(self, what: str, buffer_type: ir.Type, recorded: Optional[ir.Attribute], loc: ir.Location, offsets: Optional[list[int]] = None) -> None:
        """The global-shape check at the program boundary: a partitioned local shape must
        map back to the global type recorded before partitioning, and a result recorded
        uneven must come out cut at the recorded boundaries."""
        placed = sharding_of(buffer_type) if isinstance(buffer_type, ir.MemRefType) else None  # host scalars: no placement
        cut = [b for _, bounds in placed.offsets for b in bounds] if placed is not None else []
        if cut != (offsets or []):
            raise PassFailure(f"'func.func' op @{self.name} {what} is cut at {cut or 'even parts'}, not at its recorded sharded_dims_offsets {offsets or '(none)'}", loc)
        if recorded is None:
            return
        want = ir.RankedTensorType(ir.TypeAttr(recorded).value)
        got = ir.MemRefType(buffer_type)
        if list(got.shape) != list(want.shape) or got.element_type != want.element_type:
            raise PassFailure(
                f"'func.func' op @{self.name} {what}: its partitioned type maps back to {list(got.shape)}x{got.element_type}, "
                f"not to its global type {want} (an uneven split or a sharding hir does not convert)",
                loc,
            )

    # ----- values ----------------------------------------------------------------------
    def is_data(self, value: ir.Value) -> bool:
        """A tensor of the program (arguments are already retyped to their buffers)."""
        return value in self.placements or is_tensor(value)

    def buffer(self, value: ir.Value, user: ir.Operation) -> ir.Value:
        """The buffer of tensor ``value``; a free value is materialized by a kernel."""
        if value in self.buffers:
            return self.buffers[value]
        if value in self.free:
            self.placements[value] = self.replicated
            self.kernel(self.free[value], [value])
            return self.buffers[value]
        raise fail(user, f"reads {value.get_name()}, which has no buffer")

    def scalar(self, value: ir.Value, user: ir.Operation) -> ir.Value:
        """``value`` in the host program: host arithmetic is cloned where first used, so the
        device-index guards of folded ``scf.if``s and kernel-only constants leave nothing."""
        if value in self.scalars:
            return self.scalars[value]
        op = self.host.get(value)
        if op is None:
            raise fail(user, f"reads host value {value.get_name()}, which the conversion could not compute")
        if op.name in DEVICE_INDEX_OPS:
            results = self.device_index(op)
        elif op.name == shard.NeighborsLinearIndicesOp.OPERATION_NAME:
            results = self.neighbors(op, [self.scalar(v, op) for v in op.operands])
        elif op.name == shard.ShardShapeOp.OPERATION_NAME:
            results = self.shard_shape(op)
        else:
            operands = [self.scalar(v, op) for v in op.operands]
            copy = op.clone(self.ip)
            for position, operand in enumerate(operands):
                copy.operands[position] = operand
            results = list(copy.results)
        for old, new in zip(op.results, results):
            self.scalars[old] = new
        return self.scalars[value]

    def placement(self, value: ir.Value) -> GridPlacement:
        return self.placements.get(value, self.free_placement if value in self.free else self.replicated)

    def create(self, name: str, operands=(), results=(), attributes=None) -> ir.Operation:
        with self.loc:
            return ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attributes, ip=self.ip)

    def alloc(self, value: ir.Value, placement: GridPlacement, extent_of: Optional[Callable[[int], Optional[tuple]]] = None) -> ir.Value:
        """A buffer for ``value``; a dynamic dim d is sized at run time with the global extent
        (``memref.dim``) of the (buffer, dim) that ``extent_of(d)`` names, else an error."""
        buffer_type = self.buffer_type(value.type, placement)
        sizes = []
        for d, extent in enumerate(buffer_type.shape):
            if not ir.ShapedType.is_dynamic_size(extent):
                continue
            found = extent_of(d) if extent_of is not None else None
            if found is None:
                what = f"'{value.owner.name}' op result #{value.result_number}" if isinstance(value, ir.OpResult) else value.get_name()
                raise PassFailure(f"{what} has the dynamic type {value.type}: hir cannot size dim {d} of its buffer at run time (no operand of the same global extent); give it a static size", self.loc)
            source, source_dim = found
            sizes.append(self.create("memref.dim", operands=[source, self.index_constant(source_dim)], results=[ir.IndexType.get()]).result)
        segments = ir.DenseI32ArrayAttr.get([len(sizes), 0])
        out = self.create("memref.alloc", operands=sizes, results=[buffer_type], attributes={"operandSegmentSizes": segments}).result
        self.buffers[value], self.placements[value] = out, placement
        return out

    def kernel_extent(self, root: ir.Operation, result: int) -> Callable[[int], Optional[tuple]]:
        """For a kernel's result ``result``: dim d -> (buffer, dim) of an operand that the
        op's indexing maps read along the same loop, placed alike on it (same global extent)."""
        maps = maps_of(root)
        placement = self.placements[root.results[result]]

        def extent_of(d: int) -> Optional[tuple]:
            if maps is None or placement.kind == "partial":
                return None
            dims = maps[0]
            operands = list(root.operands) if len(dims) == len(root.operands) else [v for v in root.operands if self.is_data(v)]
            loop = dims[len(dims) - len(root.results) + result][d]
            for value, operand_dims in zip(operands, dims):
                if value not in self.buffers or loop is None or loop not in operand_dims:
                    continue
                q = operand_dims.index(loop)
                have = self.placement(value)
                if have.kind != "partial" and all((have[k] == split(q)) == (placement[k] == split(d)) for k in range(self.grid.rank)):
                    return self.buffers[value], q
            return None

        return extent_of

    # ----- ops -------------------------------------------------------------------------
    def convert(self, op: ir.Operation) -> None:
        from torch_mlir.dialects import linalg  # lazily: its opdsl costs hir-opt's start ~0.1 s

        name = op.name
        if name == arith.ConstantOp.OPERATION_NAME:
            self.free[op.results[0]] = op
            if not is_tensor(op.results[0]):  # host scalars may also be read by the host program
                self.host[op.results[0]] = op
        elif name == tensor.EmptyOp.OPERATION_NAME:
            self.free[op.results[0]] = op
        elif name == linalg.FillOp.OPERATION_NAME and all(v in self.free for v in op.operands):
            self.free[op.results[0]] = op
            value = self.free[op.operands[0]].attributes["value"]
            if isinstance(value, (ir.FloatAttr, ir.IntegerAttr)) and value.value == 0:
                self.zero.add(op.results[0])
        elif name == scf.IfOp.OPERATION_NAME:
            self.fold_if(op)
        elif name == tensor.ExtractOp.OPERATION_NAME:
            self.extract(op)
        elif name == tensor.DimOp.OPERATION_NAME and self.is_data(op.operands[0]):
            self.local_extent(op)
        elif name.startswith("shard."):
            self.shard_op(op)
        elif name in (linalg.MatmulOp.OPERATION_NAME, linalg.BatchMatmulOp.OPERATION_NAME) and self.matmul(op):
            pass
        elif name in BINARY_NAMED and self.binary(op):
            pass
        elif any(is_tensor(r) for r in op.results):
            self.outline(op)
        elif len(op.regions) == 0 and not any(self.is_data(v) for v in list(op.operands) + list(op.results)):
            for result in op.results:  # host scalar arithmetic (e.g. on a device index)
                self.host[result] = op
        else:
            raise fail(op, "cannot be converted to hir (no tensor result to outline and not host arithmetic)")

    def extract(self, op: ir.Operation) -> None:
        """``tensor.extract`` of a replicated tensor: a host ``memref.load`` of the element
        (every device holds the same data, so the local index is the global one)."""
        source = op.operands[0]
        placement = self.placement(source)
        if placement != self.replicated:
            raise fail(op, f"reads an element of {source.get_name()}, which is {placement}; hir reads elements of replicated tensors only")
        indices = [self.scalar(v, op) for v in op.operands[1:]]
        load = self.create("memref.load", operands=[self.buffer(source, op)] + indices, results=[op.results[0].type])
        self.scalars[op.results[0]] = load.result

    def fold_if(self, op: ir.Operation) -> None:
        """Partitioning guards an init by the device index; both branches often yield the same."""
        yields = [list(region.blocks[0].operations)[-1].operation.operands for region in op.regions if region.blocks]
        ops_per_branch = [len(list(region.blocks[0].operations)) for region in op.regions if region.blocks]
        if len(yields) == 2 and ops_per_branch == [1, 1] and list(yields[0]) == list(yields[1]):
            for result, value in zip(op.results, yields[0]):
                result.replace_all_uses_with(value)
            return
        if len(yields) == 2 and self.partial_init(op, yields[0], yields[1]):
            return
        raise fail(op, "has branches that differ; hir converts an scf.if whose branches yield the same values, or the partial-product init (device 0 keeps the destination, the others start from zeros)")

    def partial_init(self, op: ir.Operation, then: list, other: list) -> bool:
        """shard-partition's init of a partial product (a contraction over a split dim on a
        1-D grid): ``scf.if %i == 0 { yield %out } else { yield zeros }``, %i the device
        index. The result is a partial sum (each device's slot of the device axis), written
        by a kernel that runs the scf.if."""
        from torch_mlir.dialects import linalg  # lazily: its opdsl costs hir-opt's start ~0.1 s

        if self.grid.rank != 1 or len(op.results) != 1 or not is_tensor(op.results[0]):
            return False
        fill = other[0].owner if isinstance(other[0], ir.OpResult) else None
        zero = fill is not None and fill.name == linalg.FillOp.OPERATION_NAME and self.constant_value(fill.operands[0]) == 0
        compare = op.operands[0].owner if isinstance(op.operands[0], ir.OpResult) else None
        if not zero or compare is None or compare.name != arith.CmpIOp.OPERATION_NAME or ir.IntegerAttr(compare.attributes["predicate"]).value != 0:
            return False
        sides = [v.owner.name if isinstance(v, ir.OpResult) else "" for v in compare.operands]
        if sorted(sides) != sorted([DEVICE_INDEX_OPS[0] if DEVICE_INDEX_OPS[0] in sides else DEVICE_INDEX_OPS[1], arith.ConstantOp.OPERATION_NAME]):
            return False
        if any(self.constant_value(v) not in (None, 0) for v in compare.operands) or self.placement(then[0]) not in (self.replicated, self.free_placement):
            return False
        self.placements[op.results[0]] = GridPlacement((PARTIAL,))
        self.kernel(op, list(op.results))
        return True

    def constant_value(self, value: ir.Value):
        """The value of a scalar ``arith.constant`` (None for anything else)."""
        owner = value.owner if isinstance(value, ir.OpResult) else None
        if owner is None or owner.name != arith.ConstantOp.OPERATION_NAME:
            return None
        attr = owner.attributes["value"]
        return attr.value if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr)) else None

    def buffer_type(self, tensor_type: ir.Type, placement: GridPlacement, what: str = "a value") -> ir.MemRefType:
        try:
            return self.grid.buffer_type(tensor_type, placement)
        except PlacementError as err:
            raise PassFailure(f"{what} {err}", self.loc) from None

    def operand_placements(self, op: ir.Operation) -> list[GridPlacement]:
        return [self.placement(v) for v in op.operands if self.is_data(v)]

    def result_placement(self, op: ir.Operation) -> GridPlacement:
        try:
            return infer(op, self.operand_placements(op), self.grid.rank)
        except PlacementError as err:
            raise fail(op, str(err)) from None

    def matmul(self, op: ir.Operation) -> bool:
        """``hir.matmul`` when it overwrites a zero fill and is not a partial product."""
        a, b, init = op.operands
        placement = self.result_placement(op)
        if init not in self.zero or placement.kind == "partial" or any(p.offsets for p in self.operand_placements(op)):
            return False  # a kernel: hir.matmul takes even splits
        operands = [self.buffer(a, op), self.buffer(b, op)]
        self.create(MatmulOp.OPERATION_NAME, operands=operands + [self.alloc(op.results[0], placement)])
        return True

    def binary(self, op: ir.Operation) -> bool:
        lhs, rhs, init = op.operands
        placements = {self.placement(lhs), self.placement(rhs)}
        if len(placements) != 1 or self.free_placement in placements or any(p.kind == "partial" or p.offsets for p in placements) or lhs.type != rhs.type:
            return False
        kind = ir.StringAttr.get(BINARY_NAMED[op.name])
        operands = [self.buffer(lhs, op), self.buffer(rhs, op)]
        self.create(BinaryOp.OPERATION_NAME, operands=operands + [self.alloc(op.results[0], placements.pop())], attributes={"kind": kind})
        return True

    def outline(self, op: ir.Operation) -> None:
        placement = self.result_placement(op)
        for result in op.results:
            self.placements[result] = placement
        self.kernel(op, list(op.results))

    def kernel(self, root: ir.Operation, results: list[ir.Value], extent_of: Optional[Callable[[int], Optional[tuple]]] = None) -> None:
        """Outline ``root`` (with the free producers it reads) into a kernel segment; the
        dynamic extents of its first result from ``extent_of`` when given, else from the
        indexing maps (:meth:`kernel_extent`)."""
        clones, inputs = closure(root, self.free.get)
        ports = []
        for value in inputs:
            if self.is_data(value):
                tensor_type = self.arg_tensor_types.get(value, value.type)
                ports.append(Port(value, self.buffer(value, root), tensor_type, self.placement(value)))
            elif isinstance(value.type, (ir.IndexType, ir.IntegerType, ir.FloatType)):
                ports.append(Port(value, self.scalar(value, root)))
            else:
                raise fail(root, f"reads {value.get_name()} of type {value.type}, which cannot be passed to a kernel segment")
        placements = [self.placements[r] for r in results]
        outputs = [(r, self.buffer_type(r.type, p), p) for r, p in zip(results, placements)]
        name = f"{self.name}_kernel_{self.kernels}"
        self.kernels += 1
        build_kernel(name, self.fn, ports, clones + [root], outputs, root.location)
        extents = [extent_of] if extent_of is not None else [self.kernel_extent(root, i) if i < len(root.results) and r == root.results[i] else None for i, r in enumerate(results)]
        outs = [self.alloc(r, p, e) for r, p, e in zip(results, placements, extents)]
        callee = ir.FlatSymbolRefAttr.get(name)
        self.create(func.CallOp.OPERATION_NAME, operands=[p.outer for p in ports] + outs, attributes={"callee": callee})
