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

The driver is MLIR's dialect conversion: per function, one conversion pattern per op name
the body holds, rooted on that op and calling its handler, applied by
``apply_partial_conversion`` with a ``ConversionTarget`` that makes the ``shard`` dialect,
``func.return`` and every op name of the tensor program illegal (so each converts or the
conversion fails), and hir, ``memref`` and ``func.func`` / ``call`` legal. The driver visits
the ops in program order (pre-order), which the handlers rely on: a value's placement is
known when its users convert. Constant folding is off (``DialectConversionFoldingMode.NEVER``):
the IR produced is what the handlers build, nothing more.

What MLIR's dialect conversion would otherwise do through a ``TypeConverter`` and the
adaptor does not fit here, and the handlers read the state instead: a tensor's hir type
depends on its placement, a property of the value (the same ``tensor<8x16xf32>`` becomes
``memref<8x64xf32, #hir.shard<..., 1>>`` or a partial sum's ``memref<4x8x16xf32, ...>``), so
no type-to-type conversion can give it; the pinned wheel's ``TypeConverter`` has no
materialization hooks either. The patterns are registered with an identity converter; the
arguments are retyped before the body converts (``signature.py``), results become buffers
in ``ConversionState.buffers``, and the function type follows the new ``func.return``.
Handlers erase nothing but their root (the driver does); ops a handler builds to convert in
turn (a slice to outline, the pieces of a halo exchange) are erased with the rest.

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
from typing import Callable

from torch_mlir import ir, rewrite
from torch_mlir.dialects import func, shard

from hir.dialect import KERNEL_ATTR, load
from hir.dialect.comm import BACKENDS
from hir.passes.base import ModulePass, PassFailure, fail, register_pass
from hir.passes.shard import annotations, collectives, compute, control, exchange, extents, halo, indices, slicing  # noqa: F401  (register their handlers)
from hir.passes.shard import registry
from hir.passes.patterns import GuardedRewritePatternSet, same_types
from hir.passes.shard.placement import GRID_ATTR, Grid, PlacementError
from hir.passes.shard.signature import place_arguments
from hir.passes.shard.state import ConversionState

_LEGAL = ("hir", "memref", "builtin")  # what the handlers build (and the driver's casts)


def _grids(module: ir.Module) -> dict[str, ir.Operation]:
    grids = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation for op in module.body.operations if op.operation.name == shard.GridOp.OPERATION_NAME}
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
        raise PassFailure(f"'func.func' op @{fn_name} uses the grid @{unknown[0]}, which the module does not define", fn.location)
    shapes = {n: tuple(ir.DenseI64ArrayAttr(grids[n].attributes["shape"])) for n in names}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"@{n} ({'x'.join(map(str, shape))})" for n, shape in shapes.items())
        raise PassFailure(f"'func.func' op @{fn_name} uses the grids {listed}; hir converts a function on grids of one shape", fn.location)
    shape = list(shapes[names[0]])
    if not shape or min(shape) <= 0:
        text = "x".join("?" if ir.ShapedType.is_dynamic_size(d) else str(d) for d in shape)
        raise PassFailure(f"'shard.grid' op has shape {text}; every extent must be static and positive (the interpreter runs on a fixed world: give its extents with hir-set-grid-shape{{shape=...}} first)", grids[names[0]].location)
    return Grid(names[0], tuple(shape))


def _pattern(entry: registry.Entry, state: ConversionState) -> Callable:
    """The conversion pattern of the ops ``entry`` converts: the handler builds their hir
    program before them and records their results in ``state``; the op is then erased. A
    handler's failure (raised) is kept by the pattern set and reported after the driver."""

    def convert(op, adaptor, converter, rewriter) -> bool:
        op = op.operation
        state.ip, state.loc = rewriter.ip, op.location
        try:
            entry.handler(state, op)
        except PlacementError as err:  # raised by placement arithmetic anywhere in a handler
            raise fail(op, str(err)) from None
        rewriter.erase_op(op)  # its results live on in the state
        return False

    return convert


def _convert_function(fn: ir.Operation, grid: Grid, backend: ir.StringAttr) -> None:
    state = ConversionState(fn, grid, backend)
    place_arguments(state)
    names = list(dict.fromkeys(op.operation.name for op in fn.regions[0].blocks[0].operations))
    ctx = fn.context
    target = rewrite.ConversionTarget(ctx)
    for dialect in _LEGAL:
        target.add_legal_dialect(dialect)
    target.add_legal_op(func.FuncOp.OPERATION_NAME, func.CallOp.OPERATION_NAME)
    target.add_illegal_dialect("shard")
    for name in names:
        target.add_illegal_op(name)
    patterns = GuardedRewritePatternSet(ctx)
    populate_convert_shard_to_hir_patterns(patterns, names, state)
    patterns.apply_partial_conversion(fn, target)


def populate_convert_shard_to_hir_patterns(patterns: GuardedRewritePatternSet, names: list[str], state: ConversionState) -> None:
    """A conversion pattern per op name in ``names``: the registry's handler of the op,
    converting into the function whose ``state`` (grid, backend, placed values) it shares."""
    converter = same_types()
    for name in names:
        patterns.add_conversion(name, _pattern(registry.lookup(name), state), converter)


@register_pass
@dataclass
class ConvertShardToHir(ModulePass):
    name = "hir-convert-shard-to-hir"
    description = "Convert a partitioned shard-dialect tensor program into an hir host program (buffers, collectives, kernel segments)."
    backend: str = "nccl"  # backend attribute of the emitted collectives

    def run(self, module: ir.Module) -> None:
        if self.backend not in BACKENDS:
            raise PassFailure(f"hir-convert-shard-to-hir: backend must be one of {', '.join(BACKENDS)}, got '{self.backend}'")
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
