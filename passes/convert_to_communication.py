"""``hir-convert-to-communication``: resharding ``hir.set`` / ``hir.reduction`` ops become
collectives plus ``hir.wait`` (nvFuser's ConvertOpToCommunication). The decision table,
teams and roots live in ``_resharding.py``; the output buffer is the op's own destination
(already allocated, destination-passing style), so no allocation is added.

Before (a row-split buffer gathered on every device)::

    %out = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%in, %out) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
                            memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()

After::

    %out = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    %w = "hir.allgather"(%in, %out) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>}
        : (...) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()

A ``stream_axis`` on the op is copied to each collective: hir-stream-lowering then runs the
collective per stream slice, as in nvFuser's collective-based pipelines (seed 003). Ops in
``hir.for`` bodies are converted too. Inner axes are resharded in place (strided chunks). Unlowerable reshardings (all-to-all,
reduce-scatter across meshes, resharding binary/matmul/linear) fail at the op's location.
``backend=cuda`` (copy engines) goes to teams inside one node only: a team that spans
nodes (``hir.ranks_per_node``, ``hir.dialect.nodes``) gets ``nccl``.
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import ComputeOp, WaitOp
from hir.dialect.comm import BACKENDS
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import blocks_postorder, func_ops, is_a
from hir.dialect.nodes import team_backend
from hir.passes._resharding import plan
from hir.passes.base import ModulePass, PassFailure, register_pass


@register_pass
@dataclass
class ConvertToCommunication(ModulePass):
    name = "hir-convert-to-communication"
    description = "Lower resharding set/reduction ops to collectives + hir.wait (nvFuser's decision table)."
    backend: str = "nccl"

    def run(self, module: ir.Module) -> bool:
        if self.backend not in BACKENDS:
            raise PassFailure(f"hir-convert-to-communication: backend '{self.backend}' is not one of {', '.join(BACKENDS)}")
        backend = ir.StringAttr.get(self.backend)
        changed = False
        for func in func_ops(module):
            for block in blocks_postorder(func):
                # Collect first: rewriting while iterating a block's op list is unsafe.
                candidates = [op.operation for op in block.operations if is_a(op.operation, ComputeOp)]
                for op in candidates:
                    lowered = plan(op)
                    if lowered is not None:
                        self._replace(op, lowered.collectives, backend)
                        changed = True
        return changed

    @staticmethod
    def _replace(op: ir.Operation, collectives, backend: ir.StringAttr) -> None:
        source, dest = op.operands[0], op.operands[1]
        extra = {}
        if STREAM_AXIS_ATTR in op.attributes:
            extra[STREAM_AXIS_ATTR] = op.attributes[STREAM_AXIS_ATTR]
        with ir.InsertionPoint(op), op.location:
            for collective, attrs in collectives:
                chosen = ir.StringAttr.get(team_backend(op, attrs["team"], backend.value, ConvertToCommunication.name))  # no copy engines across nodes
                WaitOp.emit(collective.emit(source, dest, {**attrs, "backend": chosen, **extra}, name="work"))
        op.erase()
