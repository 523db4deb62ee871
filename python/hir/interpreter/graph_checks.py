"""What the CUDA-graph runner (:mod:`hir.interpreter.graph`) decides once per module: whether
it can be captured at all, and which entry arguments a run may write (those a replay copies
back to the caller's buffers)."""

import torch
from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import OP_CLASSES
from hir.dialect.base import get_str
from hir.dialect.irutils import uses_through_views, written_operands

_CALL = func.CallOp.OPERATION_NAME


def graph_blockers(
    module: ir.Module, device: torch.device, backend: str | None, has_comm: bool, track_memory: bool
) -> list[str]:
    """Why ``module`` cannot be captured as a CUDA graph on ``device`` (empty: it can)."""
    reasons: list[str] = []
    if device.type != "cuda":
        reasons.append(f"needs a CUDA device; this program runs on {device}")
    if has_comm and backend not in (None, "nccl"):
        reasons.append(f"cannot capture collectives of the '{backend}' backend (host-side transfers); use nccl")

    def visit(op: ir.Operation) -> ir.WalkResult:
        cls = OP_CLASSES.get(op.name)
        if cls is not None and cls.TEAM_ATTR is not None and get_str(op, "backend") == "gloo":  # a communication
            reasons.append(
                "cannot capture Gloo collectives (host-side transfers; use "
                f"backend nccl): {op.location}: '{op.name}' uses the gloo backend"
            )
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if track_memory:
        reasons.append("track_memory=True counts bytes in the alloc/dealloc steps, which a replay does not run")
    return reasons


def written_arguments(block: ir.Block, functions: dict | None = None) -> frozenset[int]:
    """Indices of the arguments of ``block`` (a function body) that the program may write,
    directly or through views. A call writes the operands its callee (in ``functions``, by
    name) may write, found the same way in its body (a kernel segment writes what it
    materializes into); unknown ops and unknown callees count as writing every buffer operand."""
    functions = functions or {}
    callees: dict[str, frozenset[int] | None] = {}

    def callee_writes(call: ir.Operation) -> frozenset[int] | None:
        name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
        if name not in callees:
            callees[name] = None  # a recursive call is unknown while its callee is analysed
            blocks = list(functions[name].regions[0].blocks) if name in functions else []
            callees[name] = arguments(blocks[0]) if len(blocks) == 1 else None
        return callees[name]

    def written(value: ir.Value) -> bool:
        for use in uses_through_views(value):
            user = use.owner.operation
            written_indices = callee_writes(user) if user.name == _CALL else written_operands(user)
            if written_indices is None or use.operand_number in written_indices:
                return True
        return False

    def arguments(body: ir.Block) -> frozenset[int]:
        return frozenset(
            i for i, arg in enumerate(body.arguments) if isinstance(arg.type, ir.MemRefType) and written(arg)
        )

    return arguments(block)
