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
``hir.for`` bodies are converted too. Inner axes are resharded in place (strided chunks). Unlowerable reshardings
(all-to-all, reduce-scatter across meshes, resharding binary/matmul/linear) fail at the op's location.

A dialect conversion (``apply_partial_conversion``), one conversion pattern per compute op
kind: ``hir.set`` and ``hir.reduction`` lower their resharding forms; the other compute ops'
patterns refuse a resharding one. The target declares the collectives and ``hir.wait``
legal. Whether an op reshards depends on its operands' placements, not on its kind, and the
Python ``ConversionTarget`` has no per-op legality callback (C++'s
``addDynamicallyLegalOp``): so compute ops are left unknown to the target, a compute op
that does not reshard stays as it is (partial conversion keeps unknown ops), and a
resharding one either becomes collectives or fails the pass. No folding
(``DialectConversionFoldingMode.NEVER``): the output is exactly the IR above.
"""

from dataclasses import dataclass

from torch_mlir import ir, rewrite

from hir.dialect import COLLECTIVE_OPS, ComputeOp, WaitOp
from hir.dialect.comm import BACKENDS
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import op_classes
from hir.dialect.nodes import team_backend
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.communication._resharding import LOWERABLE, plan, resharding_reason, unlowerable
from hir.passes.patterns import GuardedRewritePatternSet, same_types


def collective_backend(op: ir.Operation, attrs: dict[str, ir.Attribute], backend: str) -> str:
    """The backend a collective of ``op`` with ``attrs`` (its ``team``, root, axes) runs on:
    the pass's ``backend`` option, but NCCL for copy engines on a team that spans nodes
    (``hir.ranks_per_node``, ``hir.dialect.nodes``)."""
    return team_backend(op, attrs["team"], backend, ConvertToCommunication.name)


@dataclass
class _Lowering:
    """The conversion patterns' shared state: the pass's backend option."""

    backend: str

    def lower_resharding(
        self,
        op: ir.OpView,
        adaptor: ir.OpAdaptor,
        converter: rewrite.TypeConverter,
        rewriter: rewrite.ConversionPatternRewriter,
    ) -> bool:
        """``hir.set`` / ``hir.reduction`` that reshards -> its collectives, each followed by
        a ``hir.wait``, writing the op's destination; no match for one that does not reshard."""
        planned = plan(op.operation)
        if planned is None:
            return True
        source, dest = adaptor.operands[0], adaptor.operands[1]
        extra = {}
        if STREAM_AXIS_ATTR in op.attributes:
            extra[STREAM_AXIS_ATTR] = op.attributes[STREAM_AXIS_ATTR]
        with rewriter.ip, op.location:
            for collective, attrs in planned.collectives:
                backend = ir.StringAttr.get(collective_backend(op.operation, attrs, self.backend))
                WaitOp.emit(collective.emit(source, dest, {**attrs, "backend": backend, **extra}, name="work"))
        rewriter.erase_op(op)
        return False


def refuse_resharding(
    op: ir.OpView, adaptor: ir.OpAdaptor, converter: rewrite.TypeConverter, rewriter: rewrite.ConversionPatternRewriter
) -> bool:
    """A compute op outside ``LOWERABLE`` that reshards fails the pass (insert a hir.set
    first: hir-insert-reshardings does); one that does not is left alone (no match)."""
    reason = resharding_reason(op.operation)
    if reason is not None:
        raise unlowerable(op.operation, reason)
    return True


@register_pass
@dataclass
class ConvertToCommunication(ModulePass):
    name = "hir-convert-to-communication"
    description = "Lower resharding set/reduction ops to collectives + hir.wait (nvFuser's decision table)."
    backend: str = "nccl"

    def run(self, module: ir.Module) -> None:
        if self.backend not in BACKENDS:
            raise PassFailure(
                f"hir-convert-to-communication: backend '{self.backend}' is not one of {', '.join(BACKENDS)}"
            )
        context = module.context
        target = rewrite.ConversionTarget(context)
        target.add_legal_op(WaitOp.OPERATION_NAME, *(cls.OPERATION_NAME for cls in COLLECTIVE_OPS))
        patterns = GuardedRewritePatternSet(context)
        populate_convert_to_communication_patterns(patterns, self.backend)
        patterns.apply_partial_conversion(module, target)


def populate_convert_to_communication_patterns(patterns: GuardedRewritePatternSet, backend: str) -> None:
    """A conversion pattern per compute op kind: a resharding ``LOWERABLE`` op becomes its
    collective + ``hir.wait`` on ``backend``; another op that reshards fails the pass."""
    converter = same_types()  # every hir buffer type is its own target type
    lowering = _Lowering(backend)
    for source in op_classes(ComputeOp):
        pattern = lowering.lower_resharding if source in LOWERABLE else refuse_resharding
        patterns.add_conversion(source, pattern, converter)
