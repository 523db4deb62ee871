"""``hir-convert-shard-to-hir``: a partitioned upstream ``shard`` program (after
``sharding-propagation``, ``shard-partition`` and ``shard-simplify``) becomes an hir
program-level host program on which ``hir-lower`` runs unchanged.

* each function runs on the grid it uses (several grids per module convert; grids of one
  shape are the same devices; a function on grids of different shapes is an error).
  ``shard.grid @g(shape = n)`` becomes the device mesh 0 .. n-1; a multi-D grid
  (``shape = 2x2``) the multi-D mesh of devices 0 .. 3 laid out row-major, and a collective
  over ``grid_axes = [k]`` runs with one team per line of the mesh along k
  (``team = dense<...>``), over ``grid_axes = [0, 1]`` with one team per plane along them
  (row-major); a tensor dim split over several grid axes (``[[], [0, 1]]``) is a buffer
  axis split by those mesh axes;
* every tensor gets one buffer whose type carries the global shape and the ``#hir.shard``
  placement recovered for it (``placement.py``, ``inference.py``; partial sums get a device
  axis); a dynamic dim stays ``?`` and is sized at run time from an operand (``memref.dim``);
* each op converts by the handler registered for it (``registry.py``; one module per op
  family: ``collectives.py``, ``slicing.py``, ``exchange.py``, ``halo.py``, ``indices.py``,
  ``extents.py``, ``compute.py``, ``control.py``, ``annotations.py``, ``signature.py``);
  docs/from-shard.md lists them.

Why a function pass: a tensor's buffer comes from its placement, a fact that flows from each
producer to its users across the body, and the tensor program can be erased only once every
op of it has converted. The pass is a function-level walker, as upstream's
``shard-partition`` (``Partition.cpp``) is: per function, the arguments are placed and
retyped to their buffers, then the ops of the body are visited once, in program order, and
each op's handler builds its host program before it at ``state.ip``, reading what the op's
operands became from the state (a value's placement is known when its users convert because
its producer came first); a handler may expand its op into ops of the tensor program and
convert those in turn by calling their handlers (``shard.all_to_all`` is an all_gather then
an all_slice). Once every op is visited, the tensor program (its ops and those the handlers
built) is erased, users before producers, leaving the host program.

Why not a dialect conversion: a tensor's hir type depends on its placement, a property of
the value (the same ``tensor<8x16xf32>`` becomes ``memref<8x64xf32, #hir.shard<..., 1>>`` or
a partial sum's ``memref<4x8x16xf32, ...>``), so no type-to-type conversion can give it and
the adaptor would carry the tensor types unchanged (the pinned wheel's ``TypeConverter`` has
no materialization hooks either); the placements, the buffers and the host values the
handlers share are the state a walker keeps (docs/architecture.md).

Bufferization is this pass's own, not upstream one-shot bufferization: one-shot-bufferize
runs from Python on these programs, but leaves the collectives on tensors between
``to_tensor`` / ``to_buffer`` casts, with local shapes and fully dynamic strided layouts at
function boundaries; hir needs global-shaped ``#hir.shard`` buffers, destination-passing
collectives and kernel segments, and recovering placements is the work either way.

Before (the Megatron MLP's second half, tensor parallel on 4 devices)::

    %h = linalg.generic ... ins(%mm : tensor<8x16xf32>) ...          // gelu, split along dim 1
    %p = linalg.matmul ins(%h, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%zero : ...)
    %y = shard.all_reduce %p on @tp grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>

After::

    %h = memref.alloc() : memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
    func.call @mlp_kernel_1(%mm, %h) : (...) -> ()
    %p = memref.alloc() : memref<4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
    func.call @mlp_kernel_2(%h, %w2, %p) : (...) -> ()                // local partial product
    %y = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    %w = "hir.allreduce"(%p, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w) : (!hir.work) -> ()
"""

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import func, shard

from hir.dialect import KERNEL_ATTR, load
from hir.dialect.comm import BACKENDS
from hir.passes.base import ModulePass, PassFailure, fail, register_pass
from hir.passes.shard import (  # noqa: F401  (register their handlers)
    annotations,
    collectives,
    compute,
    control,
    exchange,
    extents,
    halo,
    indices,
    registry,
    slicing,
)
from hir.passes.shard.placement import GRID_ATTR, Grid, PlacementError
from hir.passes.shard.signature import place_arguments
from hir.passes.shard.state import ConversionState


def _grids(module: ir.Module) -> dict[str, ir.Operation]:
    grids = {
        ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
        for op in module.body.operations
        if op.operation.name == shard.GridOp.OPERATION_NAME
    }
    if not grids:
        raise PassFailure("the module has no shard.grid: nothing to convert", module.operation.location)
    return grids


def _used_grids(fn: ir.Operation) -> list[str]:
    """The grids ``fn`` names: the one ``hir-record-shard-signature`` recorded for its
    shardings, and those of the shard ops left in its body (an analysis: a walk)."""
    names = [ir.FlatSymbolRefAttr(fn.attributes[GRID_ATTR]).value] if GRID_ATTR in fn.attributes else []

    def visit(op):
        if op.name.startswith("shard.") and "grid" in op.attributes:
            names.append(ir.FlatSymbolRefAttr(op.attributes["grid"]).value)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    return list(dict.fromkeys(names))


def _function_grid(fn: ir.Operation, grids: dict[str, ir.Operation]) -> Grid:
    """The grid ``fn`` runs on: the one it names, or several of one shape (every grid maps to
    the devices 0 .. n-1 row-major, so grids of one shape are the same devices). A function
    naming no grid shards nothing: every value is replicated, so any grid of the module
    gives the same program (the first is taken)."""
    names = _used_grids(fn) or [next(iter(grids))]
    fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
    unknown = [n for n in names if n not in grids]
    if unknown:
        raise PassFailure(
            f"'func.func' op @{fn_name} uses the grid @{unknown[0]}, which the module does not define", fn.location
        )
    shapes = {n: tuple(ir.DenseI64ArrayAttr(grids[n].attributes["shape"])) for n in names}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"@{n} ({'x'.join(map(str, shape))})" for n, shape in shapes.items())
        raise PassFailure(
            f"'func.func' op @{fn_name} uses the grids {listed}; hir converts a function on grids of one shape",
            fn.location,
        )
    shape = list(shapes[names[0]])
    if not shape or min(shape) <= 0:
        text = "x".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in shape)
        raise PassFailure(
            f"'shard.grid' op has shape {text}; every extent must be static and positive (the interpreter "
            "runs on a fixed world: give its extents with hir-set-grid-shape{shape=...} first)",
            grids[names[0]].location,
        )
    return Grid(names[0], tuple(shape))


def _convert_function(fn: ir.Operation, grid: Grid, backend: ir.StringAttr) -> None:
    """Convert ``fn``'s body, op by op in program order, then erase the tensor program."""
    state = ConversionState(fn, grid, backend)
    place_arguments(state)
    program = [op.operation for op in fn.regions[0].blocks[0].operations]
    for op in program:
        state.ip, state.loc = ir.InsertionPoint(op), op.location
        try:
            registry.lookup(op.name).handler(state, op)
        except PlacementError as err:  # raised by placement arithmetic anywhere in a handler
            raise fail(op, str(err)) from None
    state.erase_tensor_program(program)


@register_pass
@dataclass
class ConvertShardToHir(ModulePass):
    name = "hir-convert-shard-to-hir"
    description = (
        "Convert a partitioned shard-dialect tensor program into an "
        "hir host program (buffers, collectives, kernel segments)."
    )
    backend: str = "nccl"  # backend attribute of the emitted collectives

    def run(self, module: ir.Module) -> None:
        if self.backend not in BACKENDS:
            raise PassFailure(
                f"hir-convert-shard-to-hir: backend must be one of {', '.join(BACKENDS)}, got '{self.backend}'"
            )
        load(module.context)  # a module from the FX importer has no hir in its context yet
        grids = _grids(module)
        backend = ir.StringAttr.get(self.backend)
        for op in list(module.body.operations):
            fn = op.operation
            if fn.name == func.FuncOp.OPERATION_NAME and op.regions[0].blocks and KERNEL_ATTR not in fn.attributes:
                with fn.location:  # types built along the way need a location
                    _convert_function(fn, _function_grid(fn, grids), backend)
                if GRID_ATTR in fn.attributes:
                    del fn.attributes[GRID_ATTR]
        for grid in grids.values():  # every function converted: no op names a grid any more
            grid.erase()
