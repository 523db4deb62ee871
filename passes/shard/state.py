"""What the handlers of ``hir-convert-shard-to-hir`` share while one function converts: an
explicit object, passed to every handler (``handler(state, op)``).

It holds the grid, the signature's recorded placements, and what each value of the tensor
program became: a buffer (``buffers``, placed as ``placements`` says), a host scalar
(``scalars``), a producer cloned where the value is first read (``free`` tensors: empties,
fills, constants, cloned into the kernels that read them; ``host`` scalars: arithmetic and
device indices, cloned into the host program). Every tensor value gets exactly one buffer,
written once (SSA), so no copies are needed. New ops are built at ``ip``, before the op
being converted.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from torch_mlir import ir
from torch_mlir.dialects import arith, func, memref

from hir.dialect.sharding import Sharding
from hir.passes.base import PassFailure, fail
from hir.passes.shard import registry
from hir.passes.shard.inference import infer, maps_of
from hir.passes.shard.kernels import ExtentOf, Port, build_kernel, closure
from hir.passes.shard.placement import Grid, PlacementError


def is_tensor(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType)


@dataclass
class ConversionState:
    """The conversion of one function ``fn`` on ``grid``."""

    fn: ir.Operation
    grid: Grid
    backend: ir.StringAttr  # backend attribute of the emitted communications
    buffers: dict = field(default_factory=dict)  # tensor value -> its buffer
    placements: dict = field(default_factory=dict)  # tensor value -> its Sharding
    scalars: dict = field(default_factory=dict)  # host scalar value -> its value in the converted function
    host: dict = field(default_factory=dict)  # host scalar value -> its producer, cloned on first use
    free: dict = field(default_factory=dict)  # tensor value -> producer cloned where the value is read
    zero: set = field(default_factory=set)  # free values known to be all zeros
    tensor_types: dict = field(default_factory=dict)  # argument -> its tensor type before retyping
    result_globals: dict = field(default_factory=dict)  # result index -> recorded global type
    result_offsets: dict = field(default_factory=dict)  # result index -> recorded uneven boundaries
    scratch: list = field(default_factory=list)  # tensor-program ops handlers build to convert in turn
    kernels: int = 0
    ip: ir.InsertionPoint | None = None
    loc: ir.Location | None = None

    @property
    def name(self) -> str:
        return ir.StringAttr(self.fn.attributes["sym_name"]).value

    @property
    def team(self) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get(list(self.grid.mesh))

    # ----- values ----------------------------------------------------------------------
    def is_data(self, value: ir.Value) -> bool:
        """A tensor of the program (arguments are already retyped to their buffers)."""
        return value in self.placements or is_tensor(value)

    def tensor_type(self, value: ir.Value) -> ir.Type:
        """``value``'s local tensor type (an argument's from before its retyping)."""
        return self.tensor_types.get(value, value.type)

    def placement(self, value: ir.Value) -> Sharding | None:
        """``value``'s placement; None for a free value (no data of its own)."""
        if value in self.placements:
            return self.placements[value]
        return None if value in self.free else self.grid.replicated

    def data_placement(self, value: ir.Value) -> Sharding:
        """``value``'s placement, a free value counting as replicated (it holds the same
        data everywhere once materialized)."""
        placement = self.placement(value)
        return self.grid.replicated if placement is None else placement

    def buffer(self, value: ir.Value, user: ir.Operation) -> ir.Value:
        """The buffer of tensor ``value``; a free value is materialized by a kernel."""
        if value in self.buffers:
            return self.buffers[value]
        if value in self.free:
            self.placements[value] = self.grid.replicated
            outline(self, self.free[value], [value])
            return self.buffers[value]
        raise fail(user, f"reads {value.get_name()}, which has no buffer")

    def scalar(self, value: ir.Value, user: ir.Operation) -> ir.Value:
        """``value`` in the host program: host producers are cloned (or, for device
        queries, materialized by their registered host function) where first used, so the
        device-index guards of folded ``scf.if``s and kernel-only constants leave nothing."""
        if value in self.scalars:
            return self.scalars[value]
        op = self.host.get(value)
        if op is None:
            raise fail(user, f"reads host value {value.get_name()}, which the conversion could not compute")
        materialize = registry.host_function(op.name)
        if materialize is not None:
            results = materialize(self, op)
        else:
            operands = [self.scalar(v, op) for v in op.operands]
            copy = op.clone(self.ip)
            for position, operand in enumerate(operands):
                copy.operands[position] = operand
            results = list(copy.results)
        for old, new in zip(op.results, results):
            self.scalars[old] = new
        return self.scalars[value]

    def constant_value(self, value: ir.Value):
        """The value of a scalar ``arith.constant`` (None for anything else)."""
        owner = value.owner if isinstance(value, ir.OpResult) else None
        if owner is None or owner.name != arith.ConstantOp.OPERATION_NAME:
            return None
        attr = owner.attributes["value"]
        return attr.value if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr)) else None

    def operand_placements(self, op: ir.Operation) -> list[Sharding | None]:
        return [self.placement(v) for v in op.operands if self.is_data(v)]

    def result_placement(self, op: ir.Operation) -> Sharding:
        return infer(op, self.operand_placements(op), self.grid)

    # ----- building --------------------------------------------------------------------
    def create(self, name: str, operands=(), results=(), attributes=None) -> ir.Operation:
        assert self.loc is not None, "set for the op being converted"
        with self.loc:
            return ir.Operation.create(
                name, results=list(results), operands=list(operands), attributes=attributes, ip=self.ip
            )

    def index_constant(self, value: int) -> ir.Value:
        index = ir.IndexType.get()
        return self.create(
            arith.ConstantOp.OPERATION_NAME, results=[index], attributes={"value": ir.IntegerAttr.get(index, value)}
        ).result

    def index_arith(self, name: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return self.create(name, operands=[lhs, rhs], results=[ir.IndexType.get()]).result

    def buffer_type(self, tensor_type: ir.Type, placement: Sharding, what: str = "a value") -> ir.MemRefType:
        try:
            return self.grid.buffer_type(tensor_type, placement)
        except (PlacementError, ValueError) as err:
            raise PassFailure(f"{what} {err}", self.loc) from None

    def alloc(self, value: ir.Value, placement: Sharding, extent_of: ExtentOf | None = None) -> ir.Value:
        """A buffer for ``value``; a dynamic dim d is sized at run time with the global extent
        (``memref.dim``) of the (buffer, dim) that ``extent_of(d)`` names, else an error."""
        buffer_type = self.buffer_type(value.type, placement)
        sizes = []
        for d, extent in enumerate(buffer_type.shape):
            if not ir.ShapedType.is_dynamic_size(extent):
                continue
            found = extent_of(d) if extent_of is not None else None
            if found is None:
                what = (
                    f"'{value.owner.name}' op result #{value.result_number}"
                    if isinstance(value, ir.OpResult)
                    else value.get_name()
                )
                raise PassFailure(
                    f"{what} has the dynamic type {value.type}: hir cannot size dim {d} of its buffer "
                    "at run time (no operand of the same global extent); give it a static size",
                    self.loc,
                )
            source, source_dim = found
            sizes.append(
                self.create(
                    memref.DimOp.OPERATION_NAME,
                    operands=[source, self.index_constant(source_dim)],
                    results=[ir.IndexType.get()],
                ).result
            )
        segments = ir.DenseI32ArrayAttr.get([len(sizes), 0])
        out = self.create(
            memref.AllocOp.OPERATION_NAME,
            operands=sizes,
            results=[buffer_type],
            attributes={"operandSegmentSizes": segments},
        ).result
        self.buffers[value], self.placements[value] = out, placement
        return out

    def same_as(self, result: ir.Value, value: ir.Value, user: ir.Operation) -> None:
        """``result`` (of ``user``) holds ``value``'s data: the value a handler rewrote its
        op into."""
        self.buffers[result] = self.buffer(value, user)
        self.placements[result] = self.placements[value]

    def kernel(
        self, root: ir.Operation, results: list[ir.Value], placement: Sharding, extent_of: ExtentOf | None = None
    ) -> None:
        """``results`` of ``root``, all placed ``placement``, written by a kernel segment."""
        for result in results:
            self.placements[result] = placement
        outline(self, root, results, extent_of)

    def build(self, build: Callable[[], ir.Operation]) -> ir.Operation:
        """An op of the tensor program a handler adds to convert in its turn (a slice to
        outline, the pieces of a halo exchange): built at the insertion point, erased with
        the program's ops when the function is done (:meth:`erase_tensor_program`)."""
        assert self.loc is not None and self.ip is not None, "set for the op being converted"
        with self.loc, self.ip:
            op = build().operation
        self.scratch.append(op)
        return op

    def erase_tensor_program(self, program: list[ir.Operation]) -> None:
        """Erase the tensor program once every op is converted: the ops :meth:`build`
        added, then ``program`` (the function's ops before the conversion), users before
        producers."""
        for op in reversed(program + self.scratch):
            op.erase()
        self.scratch.clear()


def outline(s: ConversionState, root: ir.Operation, results: list[ir.Value], extent_of: ExtentOf | None = None) -> None:
    """Outline ``root`` (with the free producers it reads) into a kernel segment called in
    its place, writing a buffer per value of ``results`` (placed as ``s.placements`` says);
    the dynamic extents of its first result from ``extent_of`` when given, else from the
    indexing maps (:func:`_kernel_extent`)."""
    clones, inputs = closure(root, s.free.get)
    ports = []
    for value in inputs:
        if s.is_data(value):
            ports.append(Port(value, s.buffer(value, root), s.tensor_type(value), s.placement(value)))
        elif isinstance(value.type, (ir.IndexType, ir.IntegerType, ir.FloatType)):
            ports.append(Port(value, s.scalar(value, root)))
        else:
            raise fail(
                root, f"reads {value.get_name()} of type {value.type}, which cannot be passed to a kernel segment"
            )
    placements = [s.placements[r] for r in results]
    outputs = [(r, s.buffer_type(r.type, p), p) for r, p in zip(results, placements)]
    name = f"{s.name}_kernel_{s.kernels}"
    s.kernels += 1
    build_kernel(name, s.fn, ports, clones + [root], outputs, root.location)
    extents = (
        [extent_of]
        if extent_of is not None
        else [
            _kernel_extent(s, root, i) if i < len(root.results) and r == root.results[i] else None
            for i, r in enumerate(results)
        ]
    )
    outs = [s.alloc(r, p, e) for r, p, e in zip(results, placements, extents)]
    s.create(
        func.CallOp.OPERATION_NAME,
        operands=[p.outer for p in ports] + outs,
        attributes={"callee": ir.FlatSymbolRefAttr.get(name)},
    )


def _kernel_extent(s: ConversionState, root: ir.Operation, result: int) -> ExtentOf:
    """For a kernel's result ``result``: dim d -> (buffer, dim) of an operand that the
    op's indexing maps read along the same loop, placed alike on it (same global extent)."""
    maps = maps_of(root)
    placement = s.placements[root.results[result]]

    def extent_of(d: int) -> tuple | None:
        if maps is None or placement.partial:
            return None
        dims = maps[0]
        operands = (
            list(root.operands) if len(dims) == len(root.operands) else [v for v in root.operands if s.is_data(v)]
        )
        loop = dims[len(dims) - len(root.results) + result][d]
        for value, operand_dims in zip(operands, dims):
            if value not in s.buffers or loop is None or loop not in operand_dims:
                continue
            q = operand_dims.index(loop)
            have = s.placement(value)
            if (
                have is not None
                and not have.partial
                and all((have.splits[k] == q) == (placement.splits[k] == d) for k in range(s.grid.rank))
            ):
                return s.buffers[value], q
        return None

    return extent_of
