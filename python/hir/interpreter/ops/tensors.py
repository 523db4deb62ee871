"""Tensor values inside kernel segments: the bridge between hir's memref
buffers and the value-semantics tensors that torch-mlir's ``torch`` dialect and upstream
``linalg``-on-tensors compute on.

    %t = bufferization.to_tensor %in restrict : memref<4x8xf32> to tensor<4x8xf32>
    %v = builtin.unrealized_conversion_cast %t : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>
    ...                                   // torch.aten.* / linalg ops on %v / %t
    bufferization.materialize_in_destination %r in restrict writable %out
        : (tensor<4x8xf32>, memref<4x8xf32>) -> ()

Why these ops: ``bufferization.to_tensor`` / ``materialize_in_destination`` are MLIR's own
memref <-> tensor boundary (what one-shot bufferization produces and consumes), so a kernel
segment keeps hir's destination-passing calling convention. ``torch_c.from_builtin_tensor`` is
torch-mlir's tensor <-> ``!torch.vtensor`` bridge, but the pinned wheel cannot register the
``torch_c`` dialect from Python; ``builtin.unrealized_conversion_cast`` is the upstream op for
exactly such a type-system boundary, and canonicalization folds its round trips.

At run time every one of these values is the same torch tensor: ``to_tensor`` and the cast
pass it through (no copy; value semantics hold because tensor ops never write their
operands), ``materialize_in_destination`` copies the result into the destination buffer,
unless the plan binds that buffer to the result (:mod:`hir.interpreter.destinations`): then
the segment returns the result itself (made contiguous where the buffer's uses need it), or
the op computing the result writes the destination with its ``out=`` overload.
"""

from torch_mlir import ir
from torch_mlir.dialects import bufferization, builtin

from hir.interpreter.generated import slot_moves_step
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


@register_impls
class TensorBridgeImpls:
    @impl(bufferization.ToTensorOp, builtin.UnrealizedConversionCastOp)
    def pass_through(self, c: Compiler, op: ir.OpView) -> Step | None:
        operands, results = op.operation.operands, op.operation.results
        if len(operands) != 1 or len(results) != 1:
            raise c.error(op, f"must have one operand and one result to run, has {len(operands)} and {len(results)}")
        c.share(results[0], operands[0])  # the same torch tensor: no step
        return None

    @impl(bufferization.MaterializeInDestinationOp)
    def materialize(self, c: Compiler, op: ir.OpView) -> Step | None:
        if op.operation.results:
            raise c.error(op, "with a tensor destination is not supported: write into a memref buffer")
        src, dst = c.uses(op)
        if c.written_in_place(op.operation.operands[1]):  # the producer wrote it with out=
            return None
        contiguous = c.returned(op.operation.operands[1])
        if contiguous is not None:  # the destination becomes the result: no copy
            if not contiguous:
                return slot_moves_step("bind_result", [f"env[{dst}] = env[{src}]"], {})

            def bind_contiguous(env: list) -> None:
                result = env[src]
                env[dst] = result if result.is_contiguous() else result.contiguous()

            return bind_contiguous

        def copy_into(env: list) -> None:
            env[dst].copy_(env[src])

        return copy_into
