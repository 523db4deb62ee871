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

Before (``test/Transforms/p2p-pipeline.mlir``'s first case after
hir-convert-to-communication{backend=cuda}; %arg0 is [4, 2, 8] split along axis 0)::

    %alloc = memref.alloc() ; %alloc_0 = memref.alloc()
    %work = "hir.allgather"(%arg0, %alloc)
        {axis = 0 : i64, backend = "cuda", stream_axis = 0 : i64, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%work)
    "hir.matmul"(%alloc, %arg1, %alloc_0) {stream_axis = 0 : i64}

After (``--print-value-names``, types elided; the module gets ``hir.num_streams = 4``)::

    %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>}
    %c0 = arith.constant 0 : index   %c1 = arith.constant 1 : index   %c4 = arith.constant 4 : index
    %user_stream = "hir.get_current_stream"()
    "hir.for"(%c0, %c1, %c1) ({ ^bb0(%s: index):          // the pool streams wait for the user stream
      %stream_1 = "hir.get_stream"(%s) ; "hir.set_current_stream"(%stream_1) ; "hir.synchronize"(%user_stream) })
    "hir.set_current_stream"(%user_stream)
    %staged = memref.alloc() {hir.symmetric} ; "hir.set"(%arg0, %staged)
    %published = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1, 2, 3>} ; "hir.wait"(%published)
    %stream = "hir.get_stream"(%c0) ; "hir.set_current_stream"(%stream)
    %shard = "hir.own_block"(%arg0) {axis = 0 : i64}        // step 0: the own shard, at once
    %slice = "hir.alias_select"(%alloc_0, %me) {axis = 0 : i64}
    "hir.matmul"(%shard, %arg1, %slice)
    "hir.set_current_stream"(%user_stream)
    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j: index):          // steps 1 .. 3
      %0 = arith.addi %me, %j : index ; %position = arith.remui %0, %c4 : index
      %stream_1 = "hir.get_stream"(%c0)
      %gathered = "hir.alias_select"(%alloc, %position) {axis = 0 : i64}
      %work = "hir.shift"(%staged, %gathered, %j) {backend = "cuda", signal = "none", team = array<i64: 0, 1, 2, 3>}
      "hir.set_current_stream"(%stream_1) ; "hir.wait"(%work)
      %slice_2 = "hir.alias_select"(%alloc_0, %position) {axis = 0 : i64}
      "hir.matmul"(%gathered, %arg1, %slice_2)
      "hir.set_current_stream"(%user_stream) })
    "hir.for"(%c0, %c1, %c1) ({ ^bb0(%s: index):          // the user stream joins the pool streams
      %stream_1 = "hir.get_stream"(%s) ; "hir.synchronize"(%stream_1) }) {hir.joins_pool_streams}

A producer + reduce-scatter becomes per-destination compute, shifts and one
``hir.reduction`` (``reduce_scatter.py``), or with ``accumulate=1`` a ring adding in the
matmul's epilogue (``accumulate.py``). The module gets ``hir.num_streams``: at least the
pool streams the steps use (compute streams, plus the reduce-scatter's reducer / receiver
stream, plus the comm stream), so none of them alias.

The tensor-parallel form gets the same treatment (async-TP's idea): a contraction writing a
partial sum followed by a summing ``hir.allreduce`` becomes, as ``allreduce`` says, the
contraction with its rows split over the team feeding a reduce-scatter that the
reduce-scatter pattern pipelines, then one all-gather of the rows into the all-reduce's
output (``rs-ag``, ``rs_allgather.py``), or row blocks, each block's all-reduce issued
after its matmul on the block's pool stream (``chunked``, ``allreduce.py``).

**Patterns and driver.** One pattern per source collective, rooted on it
(:func:`populate_p2p_pipeline_patterns`): ``hir.allgather`` in P2P form (with its wait and
its stream-parallel consumers after it), ``hir.reduce_scatter`` in P2P form (with its wait
and the stream-parallel producer before it; the slot form or the accumulating ring) and
``hir.allreduce`` (with its wait and the contraction before it); each finds the ops it
matches with its root from the root's operands' uses, never by listing the block. Whether
and how each is pipelined (``overlap``, ``chunks=auto``, ``accumulate``) is
:class:`PipelineAnalysis`'s answer (``analysis.py``), which also collects the pool streams
the pipelines use; the pass gives them to the module after the driver. Under
``overlap=auto`` a collective that runs whole is rewritten without its stream axis, and the
compute chunked only for it by a pattern rooted on that compute op (the analysis keeps the
decision), each through the rewriter. The driver is MLIR's **greedy driver** as a plain
worklist (``exact_greedy_config()``: top-down, no folding, no constant CSE, no region
simplification): a pattern erases ops other than its root (the consumers after an
all-gather, the wait after a collective), which the walk driver forbids, and a producer
running whole comes before the collective that decides it (the next sweep rewrites it); the
ops a pattern builds match no pattern (no stream axis, or nested in a loop), so the last
sweep changes nothing. Besides the patterns' rewrites the greedy driver only erases ops
left unused (it always does: an unused constant or allocation of the input goes), so the
pass runs it only on a module holding a collective some pattern is rooted on.

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
  ``chunks=auto`` picks the count per collective by the rule of ``cost.py``.
- ``transfer=push``: reduce-scatter steps push (the producer writes its partial straight
  into the owner's symmetric buffer and signals after the copy; ``hir.shift``'s
  ``transfer = "push"``) instead of the owner pulling after a handshake. All-gather steps
  push each rank's shard from where it lies into the peers' symmetric ``%received`` slots:
  no staging copy and no publishing barrier before the first transfer (an all-gather whose
  gathered buffer is read after its consumers keeps pulling).
- ``comm-stream=1``: the shifts go on a pool stream of their own that the module marks
  high priority (``hir.high_priority_streams``), so a copy's launch is not queued behind
  the compute kernels; without it they go on the user stream.
- ``accumulate=1``: a summing reduce-scatter whose producer has an accumulating form
  (``hir.matmul {accumulate}``) becomes a ring in which each rank adds its partial to the
  received sum in the matmul's epilogue (``out += a @ b``), with no slot reduction
  (``accumulate.py``; ``algorithm`` and ``streams`` do not apply: part c of every step
  runs on pool stream c). Other reduce-scatters keep the slot form.
- ``overlap``: ``on`` (default) pipelines every collective in P2P form; ``off`` none (hir-lower
  then runs them whole); ``auto`` those where the pipeline pays by the rule of ``cost.py``,
  and runs an NCCL collective chunked on streams (nvFuser's seed-003 form) whole, once,
  with the compute chunked only to overlap it, where chunking cannot overlap (``cost.py``).
  The named pipeline ``hir-lower-overlap`` (``passes/pipeline.py``) uses ``auto``.
- ``allreduce``: the form of a contraction + sum all-reduce pair. ``rs-ag``: the pipelined
  reduce-scatter + all-gather, where the rows (the contraction's M axis) split evenly over
  the team, else whole; ``chunked``: ``chunks`` row blocks (``chunks=auto``: whole, the rule
  never chunks); ``auto`` (default): ``rs-ag`` where it applies, else ``chunked``. Under
  ``overlap=auto`` the named form (``auto``: rs-ag or whole) is taken only where ``cost.py``'s
  rule says it beats the whole pair. Another value is an error at the first all-reduce.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir, rewrite

from hir.dialect import (
    DEFAULT_NUM_STREAMS,
    OP_CLASSES,
    AllgatherOp,
    AllreduceOp,
    ComputeOp,
    ReduceScatterOp,
    add_high_priority_stream,
    module_num_streams,
    set_module_num_streams,
)
from hir.dialect.base import required_str
from hir.dialect.comm import BACKENDS
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import FUNC, func_ops, is_p2p_form
from hir.passes.base import ModulePass, PassFailure, fail, register_pass
from hir.passes.p2p.accumulate import build_accumulate
from hir.passes.p2p.allgather import build_allgather
from hir.passes.p2p.allreduce import build_allreduce
from hir.passes.p2p.analysis import ALLREDUCE_FORMS, OVERLAPS, TRANSFERS, PipelineAnalysis
from hir.passes.p2p.cost import chunked_only_with, runs_whole_on_nccl
from hir.passes.p2p.reduce_scatter import build_reduce_scatter
from hir.passes.p2p.rs_allgather import build_rs_allgather
from hir.passes.p2p.steps import ALGORITHMS
from hir.passes.patterns import GuardedRewritePatternSet, exact_greedy_config, replace_without_attribute


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = (
        "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser "
        "AG_matmul_P2p), contraction + all-reduce to a pipelined reduce-scatter + all-gather or row blocks; options "
        "algorithm, streams, copies, chunks (a number or auto), backend, transfer, comm-stream, accumulate, overlap "
        "(on, auto, off), allreduce (auto, rs-ag, chunked), copy-gbps, compute-tflops, chunk-us, step-us."
    )
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1
    chunks: str = "1"  # a number, or "auto" (the rule in cost.py)
    transfer: str = "pull"
    comm_stream: bool = False
    copy_gbps: float = 300.0
    compute_tflops: float = 800.0
    chunk_us: float = 15.0
    accumulate: bool = False
    overlap: str = "on"  # on | auto | off (the rule in cost.py)
    allreduce: str = "auto"  # auto | rs-ag | chunked: the form of a contraction + all-reduce pair
    step_us: float = 20.0

    def run(self, module: ir.Module) -> None:
        self._check_options()
        if self.allreduce not in ALLREDUCE_FORMS:  # reported at the first all-reduce it would shape
            at = next((op.location for op in _root_ops(module) if op.name == AllreduceOp.OPERATION_NAME), None)
            raise PassFailure(
                f"hir-p2p-pipeline: allreduce '{self.allreduce}' is not one of {', '.join(ALLREDUCE_FORMS)}", at
            )
        if self.overlap == "off" or not _root_ops(module):
            return  # nothing to rewrite: the IR stays as it is, dead ops included
        analysis = PipelineAnalysis(self)
        patterns = GuardedRewritePatternSet(module.context)
        populate_p2p_pipeline_patterns(patterns, analysis)
        patterns.apply_greedily(module, exact_greedy_config())
        if analysis.pool_streams:
            _fix_num_streams(module, analysis.pool_streams)
            for index in sorted(analysis.high_priority):
                add_high_priority_stream(module, index)

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
                raise PassFailure(
                    f"hir-p2p-pipeline: {option.replace('_', '-')} must be positive, got {getattr(self, option)}"
                )


def populate_p2p_pipeline_patterns(patterns: GuardedRewritePatternSet, analysis: PipelineAnalysis) -> None:
    """The pipelines' patterns, one rooted on each source collective; ``analysis`` decides
    which ops are pipelined and how (the pass's options). And one rooted on each compute op
    kind: a compute op chunked on streams only to overlap a collective that runs whole
    (``overlap=auto``) runs whole too."""
    p2p = _Patterns(analysis)
    patterns.add(AllgatherOp, p2p.pipeline_allgather)
    patterns.add(ReduceScatterOp, p2p.pipeline_reduce_scatter)
    patterns.add(AllreduceOp, p2p.pipeline_allreduce)
    for name, cls in OP_CLASSES.items():
        if issubclass(cls, ComputeOp):
            patterns.add(name, p2p.run_compute_whole)


@dataclass
class _Patterns:
    """The patterns' shared state: the analysis they consult."""

    analysis: PipelineAnalysis

    def pipeline_allgather(self, root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        """An all-gather in P2P form in a function's body, with its wait and consumers ->
        the all-gather pipeline (``allgather.py``); no match where it runs whole."""
        return self._pipeline(root.operation, rewriter, lambda opts: build_allgather)

    def pipeline_reduce_scatter(self, root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        """A reduce-scatter in P2P form in a function's body, with its producer and wait ->
        the accumulating ring (``accumulate.py``) where the analysis chose it, else the slot
        pipeline (``reduce_scatter.py``); no match where it runs whole."""
        return self._pipeline(root.operation, rewriter, _reduce_scatter_builder)

    def _pipeline(
        self,
        op: ir.Operation,
        rewriter: rewrite.PatternRewriter,
        builder: Callable[[Any], Callable],
        chosen: bool = False,
    ) -> bool:
        """The pipeline of the collective ``op``, built by ``builder(options)`` with the
        options the analysis resolved for it (``chosen``: pipelined whatever ``overlap`` says)."""
        if not _in_p2p_form(op):
            return not self._run_whole_on_nccl(op, rewriter)
        opts = self.analysis.p2p_schedule(op, chosen)
        if opts is None:
            return True
        builder(opts)(opts, op, rewriter)
        return False

    def _run_whole_on_nccl(self, op: ir.Operation, rewriter: rewrite.PatternRewriter) -> bool:
        """Under ``overlap=auto``, an NCCL collective chunked on streams (not in P2P form)
        runs whole: the op without its stream axis (``cost.py``, :func:`runs_whole_on_nccl`).
        The compute chunked only to overlap it (:func:`chunked_only_with`) is told to the
        analysis, and its own pattern (:meth:`run_compute_whole`) writes it whole: hir-lower
        then issues each once, whole, in sequence. Before / after::

            "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64}
            %w = "hir.reduce_scatter"(%partial, %out) {backend = "nccl", stream_axis = 0 : i64, ...}

            "hir.matmul"(%a, %w, %partial)
            %w = "hir.reduce_scatter"(%partial, %out) {backend = "nccl", ...}
        """
        if self.analysis.options.overlap != "auto" or op.parent.name != FUNC or not runs_whole_on_nccl(op):
            return False
        self.analysis.runs_whole.update(chunked_only_with(op))
        replace_without_attribute(op, STREAM_AXIS_ATTR, rewriter)
        return True

    def run_compute_whole(self, root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        """A compute op the analysis says runs whole (:meth:`_run_whole_on_nccl`) -> the op
        without its stream axis; no match otherwise. (A producer comes before its
        collective: the greedy driver's next sweep reaches it.)"""
        op = root.operation
        if op not in self.analysis.runs_whole:
            return True
        self.analysis.runs_whole.discard(op)
        replace_without_attribute(op, STREAM_AXIS_ATTR, rewriter)
        return False

    def pipeline_allreduce(self, root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        """A contraction + summing all-reduce pair in a function's body -> the contraction +
        a pipelined reduce-scatter of its rows + an all-gather (``rs_allgather.py``), or row
        blocks (``allreduce.py``), as the analysis chose; no match where it keeps the pair whole."""
        op = root.operation
        if op.parent.name != FUNC:
            return True
        plan = self.analysis.allreduce_schedule(op)
        if plan is None:
            return True
        form, producer, rows, detail = plan
        if form == "chunked":
            build_allreduce(detail, op, producer, rows, rewriter)
            return False
        options = self.analysis.options
        build_rs_allgather(
            detail,
            op,
            producer,
            options.backend or required_str(op, "backend"),
            options.name,
            self._pipeline_scattered,
            rewriter,
        )
        return False

    def _pipeline_scattered(self, rs: ir.Operation, rewriter: rewrite.PatternRewriter) -> None:
        """The reduce-scatter of an rs-ag form, pipelined as the pass's options say."""
        if self._pipeline(rs, rewriter, _reduce_scatter_builder, chosen=True):
            raise fail(rs, "is not in the P2P form hir-p2p-pipeline pipelines")  # rs_allgather.py builds it so


def _reduce_scatter_builder(opts: Any) -> Callable:
    """The accumulating ring where the analysis chose it, else the slot pipeline."""
    return build_accumulate if opts.accumulate else build_reduce_scatter


def _root_ops(module: ir.Module) -> list:
    """The collectives of the patterns' root kinds in the functions' bodies."""
    roots = (AllgatherOp.OPERATION_NAME, ReduceScatterOp.OPERATION_NAME, AllreduceOp.OPERATION_NAME)
    ops = (op.operation for func in func_ops(module) for op in func.regions[0].blocks[0].operations)
    return [op for op in ops if op.name in roots]


def _in_p2p_form(op: ir.Operation) -> bool:
    """A collective in nvFuser's P2P form in a function's body (the pipelines' source): the
    ops a pipeline builds carry no stream axis, so they never match."""
    return op.parent.name == FUNC and is_p2p_form(op)


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
        raise PassFailure(
            f"hir-p2p-pipeline: the pipelines use {needed} pool streams, but the "
            f"module fixes hir.num_streams = {fixed}; lower streams= or raise it"
        )
