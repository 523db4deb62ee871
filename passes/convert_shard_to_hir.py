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
  axis split by those mesh axes; a ``shift`` along grid axis k runs with one team per line
  along k, a ``broadcast`` with one team per line (plane) and one root per team;
* every tensor gets one buffer whose type carries the global shape and the ``#hir.shard``
  placement recovered for it (``_shard_placement.py``; partial sums get a device axis); a
  dynamic dim stays ``?`` and is sized at run time from an operand (``memref.dim``);
* ``shard.all_gather`` / ``all_reduce`` / ``reduce_scatter`` -> ``hir.allgather`` /
  ``allreduce`` / ``reduce_scatter`` + ``hir.wait``; ``shard.all_slice`` (no communication)
  -> a kernel segment taking ``tensor.extract_slice`` at the device's offset;
  ``shard.shift`` (rotating) -> ``hir.shift``; ``shard.broadcast`` -> ``hir.broadcast``
  (``_shard_shift.py``); ``shard.update_halo`` -> ``hir.shift`` of the boundary rows +
  kernels (``_shard_halo.py``); ``shard.process_linear_index`` ->
  ``hir.device_index``, ``process_multi_index`` / ``neighbors_linear_indices`` host index
  arithmetic on it; a collective changing the element type converts its operand first;
* ``linalg.matmul`` / ``batch_matmul`` into a zero fill -> ``hir.matmul``; elementwise named
  ``linalg.add/sub/mul/div/max/min`` on equally placed operands -> ``hir.binary``; every other
  tensor op (``linalg.generic``, partial-sum matmuls, transposes, reshapes, ...) -> a kernel
  segment (``_shard_kernels.py``); ``tensor.empty``, fills and constants are cloned into the
  kernels that read them; an ``scf.if`` whose branches yield the same values folds away.

Bufferization is this pass's own, not upstream one-shot bufferization: one-shot-bufferize
runs from Python on these programs, but leaves the collectives on tensors between
``to_tensor`` / ``to_buffer`` casts, with local shapes and fully dynamic strided layouts at
function boundaries; hir needs global-shaped ``#hir.shard`` buffers, destination-passing
collectives and kernel segments, and recovering placements is the work either way. Here
every tensor value gets exactly one buffer, written once (SSA), so no copies are needed.

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
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes._shard_function import FunctionConversion
from hir.passes._shard_placement import GRID_ATTR, Grid


def _grids(module: ir.Module) -> dict[str, ir.Operation]:
    grids = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation for op in module.body.operations if op.operation.name == shard.GridOp.OPERATION_NAME}
    if not grids:
        raise PassFailure("the module has no shard.grid: nothing to convert", module.operation.location)
    return grids


def _used_grids(fn: ir.Operation) -> list[str]:
    """The grids ``fn`` names: the one ``hir-record-shard-signature`` recorded for its
    shardings, and those of the shard ops left in its body."""
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
                    FunctionConversion(fn, _function_grid(fn, grids), backend).run()
                if GRID_ATTR in fn.attributes:
                    del fn.attributes[GRID_ATTR]
        for op in list(module.body.operations):
            if op.operation.name == shard.GridOp.OPERATION_NAME:
                op.operation.erase()
