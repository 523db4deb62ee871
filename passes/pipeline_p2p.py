"""``hir-p2p-pipeline{algorithm=local-first|ring streams=1 copies=1 chunks=1|auto backend=
transfer=pull|push comm-stream=0|1 accumulate=0|1 overlap=on|auto|off}``: nvFuser's AllgatherP2p / AG_matmul_P2p and its
reduce-scatter mirror, as copy-engine pipelines.

A collective whose device-split axis is also its stream axis becomes one step per team
member; each step moves ONE peer's slice with ``hir.shift`` (a paired send+recv, a
copy-engine copy with ``backend = "cuda"``). The shifts run in order on the comm stream,
so each copy gets the links to itself and lands as early as it can; the compute of a step
runs on a pool stream (step j on stream ``j mod streams``) and waits only for its own copy.
The slices peers read live in a ``memref.alloc {hir.symmetric}`` buffer, so a shift reads
the peer's buffer in place (no staging copy), and its dealloc guards the buffer's reuse.

Before (after hir-convert-to-communication; A is [4, 2, 8] split along axis 0)::

    %w = "hir.allgather"(%A, %tmp) {axis = 0, backend = "cuda", stream_axis = 0, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64}

After: one local step reading the own shard in place and a loop of peer steps, each a
``hir.shift`` then the matmul of the slice it brought (``_p2p_allgather.py``); a producer +
reduce-scatter becomes per-destination compute, shifts and one ``hir.reduction``
(``_p2p_reduce_scatter.py``). The module gets ``hir.num_streams``: at least the pool
streams the steps use (compute streams, plus the reduce-scatter's reducer / receiver
stream, plus the comm stream), so none of them alias.

The tensor-parallel form gets the same treatment (``_p2p_allreduce.py``, async-TP's idea): a
contraction writing a partial sum followed by a summing ``hir.allreduce`` runs in row blocks,
each block's all-reduce issued after its matmul on the block's pool stream, so it overlaps
the next block's matmul. ``chunks`` (a number, or ``auto``: the rule there) is the block
count; ``chunks=1`` leaves the pair whole, and ``overlap=auto`` chunks it only where the
rule picks more than one block.

Run it after hir-convert-to-communication and before hir-lower:
``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower`` (without it,
hir-lower's stream lowering runs such a collective whole, un-pipelined). Options:

- ``backend`` (default: the collective's): the shifts' backend; ``nccl`` instead of ``cuda``
  for a team that spans nodes (``hir.ranks_per_node``, ``hir.dialect.nodes``).
- ``streams``: the pool streams the compute cycles through (1: compute in step order, like
  the hand-written copy-engine pipeline; n: one stream per step).
- ``copies`` > 1: each shift's copy split over that many streams (several copy engines).
- ``chunks`` > 1: each peer's slice moved and computed in that many parts
  (``hir.alias_chunk`` along its first axis that is neither the stream nor the device axis).
  ``chunks=auto`` picks the count per collective by the rule below.
- ``transfer=push``: reduce-scatter steps push (the producer writes its partial straight
  into the owner's symmetric buffer and signals after the copy; ``hir.shift``'s
  ``transfer = "push"``) instead of the owner pulling after a handshake. The all-gather side
  keeps pulling (its shards are published once behind one barrier: no handshakes either).
- ``comm-stream=1``: the shifts go on a pool stream of their own that the module marks
  high priority (``hir.high_priority_streams``), so a copy's launch is not queued behind
  the compute kernels; without it they go on the user stream.
- ``accumulate=1``: a summing reduce-scatter whose producer has an accumulating form
  (``hir.matmul {accumulate}``) becomes a ring in which each rank adds its partial to the
  received sum in the matmul's epilogue (``out += a @ b``), with no slot reduction
  (``_p2p_accumulate.py``; ``algorithm`` and ``streams`` do not apply: part c of every step
  runs on pool stream c). Other reduce-scatters keep the slot form.
- ``overlap``: ``on`` (default) pipelines every collective in P2P form; ``off`` none (hir-lower
  then runs them whole); ``auto`` those where the pipeline pays by the rule below. The named
  pipeline ``hir-lower-overlap`` (``passes/pipeline.py``) uses ``auto``.

``overlap=auto``. With n team members and one step copying for t_c and computing for t_m
(as for ``chunks=auto`` below), the whole collective then its compute takes n·t_m +
(n-1)·t_c; the pipeline, its local step first (all-gather) or last (reduce-scatter), takes
about max(n·t_m, t_m + (n-1)·t_c) plus ``step-us`` a step (the per-step launches, waits
and handshakes: 20 us by default, the eager P2P rows' excess over their graph replays in
the issue-5 runs being larger). So it pipelines when (n-1)·min(t_c, t_m) > n·step-us:
when each step hides more than it costs. Dynamic sizes, a collective with no compute
op streaming with it, or one whose team spans nodes (``hir.ranks_per_node``), stay
whole. E.g. the benchmark AG+matmul (bf16, K = N = 8192, 4 ranks) at M=8192: 3·86 = 258 us > 80 us: pipeline; the SP MLP of benchmarks/sp_mlp.py at
256 tokens, d_model 64: well under a microsecond a step: whole.

``chunks=auto``. Per collective, with n team members, one step moves B bytes (one peer's
slice) and computes F flops (its consumers / producer; matmuls count 2·M·N·K, other ops
one flop an element). With the rates ``copy-gbps`` (a peer copy, GB/s) and
``compute-tflops`` (TFLOP/s) a step copies for t_c = B / copy-gbps and computes for t_m =
F / compute-tflops. A pipeline of c chunks exposes about min(t_c, t_m) / c (filling and
draining) and costs about c · (n - 1) · ``chunk-us`` of per-part overhead (launches, waits),
so the best count is near c* = sqrt(min(t_c, t_m) / ((n - 1) · chunk-us)): ``auto`` takes
the c in {1, 2, 4, 8} of least min(t_c, t_m) / c + c · (n - 1) · chunk-us among those that
divide the chunked axis (1 when nothing can be chunked). Defaults are measured on 4x H200
(benchmarks/RESULTS.md, issue 5 runs): ``copy-gbps=300`` (a peer pull, ``copy_engines.py``:
289-329 GB/s), ``compute-tflops=800`` (the bf16 AG+matmul "matmul alone" row: 2.7e11 flops
in 0.33 ms) and ``chunk-us=15`` (chunks=2 against 1 in run B's graph rows). E.g. 4 ranks,
M=8192, K=8192, N/4=2048: t_c = 112 us, t_m = 86 us a step: c* = 1.4, cost 1: 131, 2: 133
-> 1; at M=16384 t_m = 172 us: 2 (cost 176 against 217).

The accumulating ring (``accumulate=1``) is a wavefront: step s + 1 of part i needs step s
of part i from the neighbour, so a step takes about max(t_m, t_c, (t_m + t_c) / c) and
``auto`` takes the c of least n · max(t_m, t_c, (t_m + t_c) / c) + c · (n - 1) · chunk-us
(two parts already hide the copy when t_c <= t_m; one part serializes copy and matmul).
Both times use the rank's local work (a split output counts its local shard).
"""

import dataclasses
from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import DEFAULT_NUM_STREAMS, AllgatherOp, ReduceScatterOp, add_high_priority_stream, module_num_streams, set_module_num_streams
from hir.dialect.base import get_i64_array, get_int
from hir.dialect.comm import BACKENDS
from hir.passes._p2p_accumulate import accumulate_receives, build_accumulate, can_accumulate
from hir.passes._p2p_allgather import build_allgather
from hir.passes._p2p_allreduce import allreduce_chunks, build_allreduce, chunkable_allreduce
from hir.passes._p2p_reduce_scatter import build_reduce_scatter
from hir.passes._p2p_steps import ALGORITHMS, comm_stream_index, compute_streams
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes._p2p_cost import auto_chunks, pipeline_pays
from hir.dialect.irutils import func_ops, is_p2p_form
from hir.dialect.nodes import spans_nodes

TRANSFERS = ("pull", "push")
OVERLAPS = ("on", "auto", "off")


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser AG_matmul_P2p); options algorithm, streams, copies, chunks (a number or auto), backend, transfer, comm-stream, accumulate, overlap (on, auto, off), copy-gbps, compute-tflops, chunk-us, step-us."
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1
    chunks: str = "1"  # a number, or "auto" (the rule in the module docstring)
    transfer: str = "pull"
    comm_stream: bool = False
    copy_gbps: float = 300.0
    compute_tflops: float = 800.0
    chunk_us: float = 15.0
    accumulate: bool = False
    overlap: str = "on"  # on | auto | off (the rule in the module docstring)
    step_us: float = 20.0

    def run(self, module: ir.Module) -> None:
        self._check_options()
        needed = 0  # pool streams the built pipelines use
        high_priority = set()  # their comm streams' pool indices
        for func in func_ops(module):
            body = func.regions[0].blocks[0]
            needed = max(needed, self._chunk_allreduces(body))
            todo = [op.operation for op in body.operations if is_p2p_form(op.operation)]
            for op in todo:
                block_ops = list(body.operations)
                if not self._pipelines(op, block_ops):
                    continue  # hir-lower runs it whole
                ag = op.name == AllgatherOp.OPERATION_NAME
                opts = dataclasses.replace(self, accumulate=self.accumulate and not ag and can_accumulate(op, block_ops))
                opts = dataclasses.replace(opts, chunks=opts._chunks_for(op, block_ops))
                needed = max(needed, opts._pool_streams(op))
                if self.comm_stream:
                    high_priority.add(comm_stream_index(opts, len(get_i64_array(op, "team"))))
                if ag:
                    build_allgather(opts, op, block_ops)
                elif opts.accumulate:
                    build_accumulate(opts, op, block_ops)
                else:
                    build_reduce_scatter(opts, op, block_ops)
        if needed:
            _fix_num_streams(module, needed)
            for index in sorted(high_priority):
                add_high_priority_stream(module, index)

    def _chunk_allreduces(self, body: ir.Block) -> int:
        """Contraction + summing all-reduce pairs in row blocks (``_p2p_allreduce.py``), as
        ``overlap`` and ``chunks`` say; returns the pool streams they use."""
        if self.overlap == "off":
            return 0
        block_ops = list(body.operations)
        pairs = [(op.operation, found) for op in block_ops if (found := chunkable_allreduce(op.operation, block_ops)) is not None]
        needed = 0
        for op, (producer, rows) in pairs:
            rule = allreduce_chunks(op, producer, rows, self.copy_gbps, self.compute_tflops, self.chunk_us)
            chunks = rule if str(self.chunks) == "auto" or self.overlap == "auto" else int(self.chunks)
            if chunks > 1 and ir.MemRefType(op.operands[0].type).shape[rows] % chunks == 0:
                build_allreduce(chunks, op, producer, rows)
                needed = max(needed, chunks)
        return needed

    def _check_options(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", *BACKENDS):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of {', '.join(BACKENDS)}")
        if self.overlap not in OVERLAPS:
            raise PassFailure(f"hir-p2p-pipeline: overlap '{self.overlap}' is not one of {', '.join(OVERLAPS)}")
        if self.transfer not in TRANSFERS:
            raise PassFailure(f"hir-p2p-pipeline: transfer '{self.transfer}' is not one of {', '.join(TRANSFERS)}")
        for option in ("streams", "copies"):
            if getattr(self, option) < 1:
                raise PassFailure(f"hir-p2p-pipeline: {option} must be at least 1, got {getattr(self, option)}")
        if str(self.chunks) != "auto":
            try:
                chunks = int(self.chunks)
            except ValueError:
                raise PassFailure(f"hir-p2p-pipeline: chunks must be a number or 'auto', got '{self.chunks}'") from None
            if chunks < 1:
                raise PassFailure(f"hir-p2p-pipeline: chunks must be at least 1, got {chunks}")
        for option in ("copy_gbps", "compute_tflops", "chunk_us", "step_us"):
            if not getattr(self, option) > 0:
                raise PassFailure(f"hir-p2p-pipeline: {option.replace('_', '-')} must be positive, got {getattr(self, option)}")

    def _pipelines(self, op: ir.Operation, block_ops: list) -> bool:
        """``overlap``: whether to pipeline ``op`` (``auto``: :func:`pipeline_pays`)."""
        if self.overlap == "auto":
            if spans_nodes(op, self.name, "kept whole (overlap=auto pipelines teams inside one node only)"):
                return False
            return pipeline_pays(op, block_ops, self.copy_gbps, self.compute_tflops, self.step_us)
        return self.overlap == "on"

    def _chunks_for(self, op: ir.Operation, block_ops: list) -> int:
        """``chunks`` as a number for ``op``'s pipeline (``auto``: :func:`auto_chunks`)."""
        if str(self.chunks) != "auto":
            return int(self.chunks)
        return auto_chunks(op, block_ops, self.copy_gbps, self.compute_tflops, self.chunk_us, self.accumulate)

    def _pool_streams(self, op: ir.Operation) -> int:
        """The compute streams of ``op``'s pipeline, plus the reduce-scatter's reducer /
        receiver (pool index ``streams``) and the comm stream (the index after it)."""
        n = len(get_i64_array(op, "team"))
        if self.comm_stream:
            return comm_stream_index(self, n) + 1
        streams = compute_streams(self, n)
        if self.accumulate:
            receiver = accumulate_receives(self)
        else:
            receiver = op.name == ReduceScatterOp.OPERATION_NAME and (self.chunks > 1 or self.transfer == "push")
        return streams + (1 if receiver else 0)


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
