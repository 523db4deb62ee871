"""``hir-p2p-pipeline{algorithm=local-first|ring streams=1 copies=1 chunks=1 backend=}``: nvFuser's
AllgatherP2p / AG_matmul_P2p and its reduce-scatter mirror, as copy-engine pipelines.

A collective whose device-split axis is also its stream axis becomes one step per team
member; each step moves ONE peer's slice with ``hir.shift`` (a paired send+recv, a
copy-engine copy with ``backend = "cuda"``). The shifts run in order on the user stream, so
each copy gets the links to itself and lands as early as it can; the compute of a step runs
on a pool stream (step j on stream ``j mod streams``) and waits only for its own copy. The
slices peers read live in a ``memref.alloc {hir.symmetric}`` buffer, so a shift reads the
peer's buffer in place (no staging copy), and its dealloc guards the buffer's reuse.

Before (after hir-convert-to-communication; A is [4, 2, 8] split along axis 0)::

    %w = "hir.allgather"(%A, %tmp) {axis = 0, backend = "cuda", stream_axis = 0, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64}

After: one local step and a loop of peer steps, each a ``hir.shift`` then the matmul of the
slice it brought (``_p2p_allgather.py``); a producer + reduce-scatter becomes per-destination
compute, shifts and one ``hir.reduction`` (``_p2p_reduce_scatter.py``). The module gets
``hir.num_streams``: at least the pool streams the steps use (compute streams, plus the
chunked reduce-scatter's reducer stream), so none of them alias.

Run it after hir-convert-to-communication and before hir-lower:
``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower`` (without it,
hir-lower's stream lowering runs such a collective whole, un-pipelined). ``backend`` (default: the collective's) sets the shifts' backend; ``streams``
the number of pool streams the compute cycles through (1: compute in step order, like the
hand-written copy-engine pipeline; n: one stream per step); ``copies`` > 1 splits each
shift's copy over that many streams (``copies`` attribute: several copy engines per peer);
``chunks`` > 1 moves and computes each peer's slice in that many parts (``hir.alias_chunk``
along its first axis that is neither the stream nor the device axis).
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import DEFAULT_NUM_STREAMS, AllgatherOp, ReduceScatterOp, module_num_streams, set_module_num_streams
from hir.dialect.base import get_i64_array
from hir.dialect.comm import BACKENDS
from hir.passes._p2p_allgather import build_allgather
from hir.passes._p2p_reduce_scatter import build_reduce_scatter
from hir.passes._p2p_steps import ALGORITHMS, compute_streams
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.helpers import func_ops, is_p2p_form


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser AG_matmul_P2p); options algorithm, streams, copies, chunks, backend."
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1
    chunks: int = 1

    def run(self, module: ir.Module) -> None:
        self._check_options()
        needed = 0  # pool streams the built pipelines use
        for func in func_ops(module):
            body = func.regions[0].blocks[0]
            todo = [op.operation for op in body.operations if is_p2p_form(op.operation)]
            for op in todo:
                needed = max(needed, self._pool_streams(op))
                if op.name == AllgatherOp.OPERATION_NAME:
                    build_allgather(self, op, list(body.operations))
                else:
                    build_reduce_scatter(self, op, list(body.operations))
        if needed:
            _fix_num_streams(module, needed)

    def _check_options(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", *BACKENDS):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of {', '.join(BACKENDS)}")
        for option in ("streams", "copies", "chunks"):
            if getattr(self, option) < 1:
                raise PassFailure(f"hir-p2p-pipeline: {option} must be at least 1, got {getattr(self, option)}")

    def _pool_streams(self, op: ir.Operation) -> int:
        """The compute streams of ``op``'s pipeline, plus the chunked reduce-scatter's
        reducer (pool index ``streams``)."""
        streams = compute_streams(self, len(get_i64_array(op, "team")))
        reducer = op.name == ReduceScatterOp.OPERATION_NAME and self.chunks > 1
        return streams + (1 if reducer else 0)


def _fix_num_streams(module: ir.Module, needed: int) -> None:
    """``hir.num_streams``: kept when a pass already fixed it (it must be large enough),
    else the default pool grown to what the pipelines need."""
    try:
        fixed = module_num_streams(module)
    except ValueError as err:
        raise PassFailure(f"hir-p2p-pipeline: {err}") from None
    if fixed is None:
        set_module_num_streams(module, max(DEFAULT_NUM_STREAMS, needed))
    elif fixed < needed:
        raise PassFailure(f"hir-p2p-pipeline: the pipelines use {needed} pool streams, but the module fixes hir.num_streams = {fixed}; lower streams= or raise it")
