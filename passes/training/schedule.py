"""``hir-schedule-data-parallel{defer-waits=1 prefetch=1 bucket-bytes=N optimizer-in-backward=1}``: the communication
schedule of a data-parallel training step (:mod:`hir.frontend.data_parallel`), as patterns on its lowered
collectives, run after ``hir-convert-to-communication`` and before
``hir-insert-deallocations`` (:func:`data_parallel_pipeline`). Each option adds one pattern
(or, for the update, one walk); with none the pass changes nothing (the plain schedule:
every collective waited at once, every parameter gathered at the top). Every option
computes the same values. The collectives are placed first (prefetches, buckets), then the
update moves up to their waits, then the waits move down to their first readers.

- ``defer-waits`` (:mod:`.waits`): a collective's wait moves to its buffers' first reader
  (a gradient's reduce-scatter waited where the update reads it).
- ``prefetch`` (:mod:`.prefetch`): a parameter's all-gather is issued where the parameter
  read before it is first read (one layer ahead), on the communication stream: pool stream
  ``comm-stream`` (by default the pool's last, ``hir.num_streams - 1``, so the stream loops'
  first streams stay for compute), marked high priority.
- ``bucket-bytes=N`` (:mod:`.buckets`, :mod:`.fsdp_buckets`): all-reduces, parameters'
  all-gathers and gradients' reduce-scatters of at most N bytes go as one collective of a
  flat bucket of at most N bytes; placed first, so that a bucket of gathers is prefetched
  as one.

The patterns run by the greedy driver, top-down; each moves its root (and the ops that
must go with it) and matches nothing once it is in place.
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect import (
    DEFAULT_NUM_STREAMS,
    AllgatherOp,
    AllreduceOp,
    ReduceScatterOp,
    WaitOp,
    add_high_priority_stream,
    module_num_streams,
)
from hir.passes.base import ModulePass, register_pass
from hir.passes.patterns import GuardedRewritePatternSet, exact_greedy_config
from hir.passes.training.buckets import bucket_pattern
from hir.passes.training.fsdp_buckets import gather_bucket_pattern, scatter_bucket_pattern
from hir.passes.training.prefetch import prefetch_pattern
from hir.passes.training.update_early import update_early_in_functions
from hir.passes.training.waits import defer_wait


@register_pass
@dataclass
class ScheduleDataParallel(ModulePass):
    name = "hir-schedule-data-parallel"
    description = (
        "Schedule a data-parallel step's collectives: defer-waits=1 waits each at its buffers' first reader; "
        "prefetch=1 issues each parameter's all-gather one parameter ahead on pool stream comm-stream (-1: the "
        "pool's last); bucket-bytes=N all-reduces, all-gathers and reduce-scatters small ones as one collective "
        "of a flat bucket; optimizer-in-backward=1 runs each update as soon as its reduced gradient arrives"
    )
    defer_waits: bool = False
    prefetch: bool = False
    comm_stream: int = -1  # the pool stream prefetched gathers are issued on; -1: the pool's last
    bucket_bytes: int = 0  # all-reduces of at most this many bytes issued in a row go as one; 0: none
    optimizer_in_backward: bool = False

    def run(self, module: ir.Module) -> None:
        # the collectives first (buckets, prefetches), then the update moved up to their
        # waits, then the waits moved down to their first readers
        if self.bucket_bytes > 0:  # first, so that a bucket of gathers is prefetched as one
            bucketing = GuardedRewritePatternSet(module.context)
            populate_bucket_patterns(bucketing, self.bucket_bytes)
            bucketing.apply_greedily(module, exact_greedy_config())
        if self.prefetch:
            pool = module_num_streams(module) or DEFAULT_NUM_STREAMS
            comm_stream = self.comm_stream if self.comm_stream >= 0 else pool - 1
            add_high_priority_stream(module, comm_stream)
            placing = GuardedRewritePatternSet(module.context)
            populate_prefetch_patterns(placing, comm_stream)
            placing.apply_greedily(module, exact_greedy_config())
        if self.optimizer_in_backward:
            update_early_in_functions(module)
        if self.defer_waits:
            waiting = GuardedRewritePatternSet(module.context)
            populate_defer_waits_patterns(waiting)
            waiting.apply_greedily(module, exact_greedy_config())


def populate_bucket_patterns(patterns: GuardedRewritePatternSet, bucket_bytes: int) -> None:
    """Patterns rooted on ``hir.allreduce``, ``hir.allgather`` and ``hir.reduce_scatter``:
    each coalesces its root with the collectives of the same kind after it into one of a
    flat bucket of at most ``bucket_bytes`` (:mod:`.buckets`, :mod:`.fsdp_buckets`)."""
    patterns.add(AllreduceOp, bucket_pattern(bucket_bytes))
    patterns.add(AllgatherOp, gather_bucket_pattern(bucket_bytes))
    patterns.add(ReduceScatterOp, scatter_bucket_pattern(bucket_bytes))


def populate_prefetch_patterns(patterns: GuardedRewritePatternSet, comm_stream: int) -> None:
    """A pattern rooted on ``hir.allgather``: a parameter's gather issued one parameter
    ahead on pool stream ``comm_stream`` (:mod:`.prefetch`)."""
    patterns.add(AllgatherOp, prefetch_pattern(comm_stream))


def populate_defer_waits_patterns(patterns: GuardedRewritePatternSet) -> None:
    """A pattern rooted on ``hir.wait``: the wait moved down to its buffers' first reader
    (:mod:`.waits`)."""
    patterns.add(WaitOp, defer_wait)


def data_parallel_pipeline(
    defer_waits: bool = False,
    prefetch: bool = False,
    bucket_bytes: int = 0,
    comm_stream: int = -1,
    optimizer_in_backward: bool = False,
) -> str:
    """``hir-lower`` with the data-parallel schedule's options between the conversion to
    collectives and the deallocations (:class:`ScheduleDataParallel`)."""
    options = (
        f"defer-waits={int(defer_waits)} prefetch={int(prefetch)} bucket-bytes={int(bucket_bytes)} "
        f"comm-stream={int(comm_stream)} optimizer-in-backward={int(optimizer_in_backward)}"
    )
    return (
        f"hir-insert-reshardings,hir-convert-to-communication,hir-schedule-data-parallel{{{options}}},"
        "hir-stream-lowering,hir-fuse-loops,hir-insert-deallocations,hir-hoist-parameter-work,canonicalize,cse"
    )
