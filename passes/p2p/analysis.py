"""The analysis hir-p2p-pipeline's patterns consult (``pipeline.py``): per source collective,
whether it is pipelined and with which resolved options (``overlap``, ``chunks=auto`` and
``accumulate`` decided by the cost rules of ``cost.py``), and over the run the pool streams
the pipelines use, which the pass gives the module once the driver returned
(``hir.num_streams``, ``hir.high_priority_streams``). It reads the IR and never changes it.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir

from hir.dialect import AllgatherOp, ReduceScatterOp
from hir.dialect.base import required_i64_array
from hir.dialect.nodes import spans_nodes
from hir.passes.p2p.accumulate import accumulate_receives, can_accumulate
from hir.passes.p2p.allreduce import chunkable_allreduce
from hir.passes.p2p.cost import auto_chunks, pipeline_pays, rs_allgather_pays
from hir.passes.p2p.rs_allgather import row_split
from hir.passes.p2p.steps import comm_stream_index, compute_streams

TRANSFERS = ("pull", "push")
OVERLAPS = ("on", "auto", "off")
ALLREDUCE_FORMS = ("auto", "rs-ag", "chunked")  # the forms of a contraction + all-reduce pair


@dataclass
class PipelineAnalysis:
    """Decisions for the pass ``options`` (a ``P2PPipeline``, its options checked), and the
    pool streams the decided pipelines use."""

    options: Any
    pool_streams: int = 0  # the most pool streams any pipeline uses
    high_priority: set[int] = field(default_factory=set)  # the comm streams' pool indices
    # Collectives decided to run whole: the greedy driver's second sweep visits them again
    # (and no pattern erases a collective it did not rewrite, so the handles stay valid).
    kept_whole: set[ir.Operation] = field(default_factory=set)
    # Compute ops chunked only to overlap a collective that runs whole (overlap=auto): the
    # pattern rooted on each writes it whole once the collective's pattern decided it.
    runs_whole: set[ir.Operation] = field(default_factory=set)

    def p2p_schedule(self, op: ir.Operation, chosen: bool = False) -> Any | None:
        """The options the pipeline of ``op`` (a collective in P2P form) is built with: ``chunks`` a number,
        ``accumulate`` only where the reduce-scatter can; None when ``overlap`` keeps it whole (not asked when the
        pipeline is already ``chosen``: the reduce-scatter of an all-reduce's rs-ag form)."""
        options = self.options
        if not chosen and (op in self.kept_whole or not self._pipelines(op)):
            self.kept_whole.add(op)
            return None  # hir-lower runs it whole
        ag = op.name == AllgatherOp.OPERATION_NAME
        opts = dataclasses.replace(options, accumulate=options.accumulate and not ag and can_accumulate(op))
        opts = dataclasses.replace(opts, chunks=self._chunks_for(op, opts.accumulate))
        self.pool_streams = max(self.pool_streams, _pool_streams(opts, op))
        if options.comm_stream:
            self.high_priority.add(comm_stream_index(opts, len(required_i64_array(op, "team"))))
        return opts

    def allreduce_schedule(self, op: ir.Operation) -> tuple | None:
        """The form of the all-reduce ``op`` and the contraction before it, as ``allreduce``,
        ``overlap`` and ``chunks`` say (cost.py): ``("rs-ag", producer, rows, RowSplit)``
        (``rs_allgather.py``), ``("chunked", producer, rows, chunks)`` (``allreduce.py``), or
        None to keep the pair whole."""
        found = None if op in self.kept_whole else chunkable_allreduce(op)
        plan = None if found is None else self._allreduce_form(op, *found)
        if plan is None:
            self.kept_whole.add(op)
        return plan

    def _allreduce_form(self, op: ir.Operation, producer: ir.Operation, rows: int) -> tuple | None:
        options = self.options
        auto = options.overlap == "auto"
        if options.allreduce != "chunked":
            split = row_split(op, producer, rows)
            if split is not None and (not auto or self._rs_allgather_pays(op, producer)):
                return "rs-ag", producer, rows, split
            if options.allreduce == "rs-ag":
                return None
        # Row blocks never pay by the rule (their NCCL all-reduces share the SMs): a fixed count only.
        chunks = 1 if auto or str(options.chunks) == "auto" else int(options.chunks)
        if chunks <= 1 or ir.MemRefType(op.operands[0].type).shape[rows] % chunks:
            return None
        self.pool_streams = max(self.pool_streams, chunks)
        return "chunked", producer, rows, chunks

    def _rs_allgather_pays(self, op: ir.Operation, producer: ir.Operation) -> bool:
        options = self.options
        if spans_nodes(op, options.name, "kept whole (overlap=auto pipelines teams inside one node only)"):
            return False
        return rs_allgather_pays(op, producer, options.copy_gbps, options.compute_tflops, options.step_us)

    def _pipelines(self, op: ir.Operation) -> bool:
        """``overlap``: whether to pipeline ``op`` (``auto``: :func:`pipeline_pays`)."""
        options = self.options
        if options.overlap == "auto":
            if spans_nodes(op, options.name, "kept whole (overlap=auto pipelines teams inside one node only)"):
                return False
            return pipeline_pays(op, options.copy_gbps, options.compute_tflops, options.step_us)
        return options.overlap == "on"

    def _chunks_for(self, op: ir.Operation, accumulate: bool) -> int:
        """``chunks`` as a number for ``op``'s pipeline (``auto``: :func:`auto_chunks`)."""
        options = self.options
        if str(options.chunks) != "auto":
            return int(options.chunks)
        return auto_chunks(op, options.copy_gbps, options.compute_tflops, options.chunk_us, accumulate)


def _pool_streams(opts: Any, op: ir.Operation) -> int:
    """The compute streams of ``op``'s pipeline, plus the reduce-scatter's reducer /
    receiver (pool index ``streams``) and the comm stream (the index after it)."""
    n = len(required_i64_array(op, "team"))
    if opts.comm_stream:
        return comm_stream_index(opts, n) + 1
    streams = compute_streams(opts, n)
    if opts.accumulate:
        receiver = accumulate_receives(opts)
    else:
        receiver = op.name == ReduceScatterOp.OPERATION_NAME and (opts.chunks > 1 or opts.transfer == "push")
    return streams + (1 if receiver else 0)
