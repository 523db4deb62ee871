"""Set-up, timing and checks shared by the multi-GPU benchmarks: one NCCL rank per GPU
(NVLink multicast off; Gloo on CPU for the scripts' CPU check), the median time of one
call over iterations, max over ranks (the slowest rank sets the pace), and the relative
error of a rank's output against a float32 reference, over all ranks.

On GPUs every rank's clock starts at one GPU moment (:func:`_aligned_start`): a timed call
starts on all GPUs together, as it does inside a model, where the collectives before it
keep the ranks' streams in step. Timed from each host's own start, the ranks' launch skew
(tens of us after a host barrier) lands in every communicating row (a rank waits for its
peers) but not in a matmul alone. The spin also hides up to 0.5 ms of each row's own host
launch latency (the dispatch before its first kernel), which eager rows have more of than
graph replays. ``HIR_BENCH_START=host`` times from each host's start as before
(benchmarks/RESULTS.md before issue 39's run 8); ``HIR_BENCH_SPIN_CYCLES`` sets the spin's
length (:data:`ALIGN_SPIN_CYCLES`)."""

import argparse
import os
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.distributed as dist

from hir.interpreter.backends.symmetric import ENV_FLAGS


def init_nccl() -> int:
    """This torchrun rank's GPU and the NCCL process group, multicast off; returns the rank."""
    for var, value in ENV_FLAGS.items():
        os.environ.setdefault(var, value)
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    return rank


def init_ranks(device: str) -> torch.device:
    """This torchrun rank's device: its GPU under NCCL (``device`` "cuda"), else the CPU under
    Gloo (a benchmark's CPU check at a small size)."""
    if device == "cuda":
        return torch.device("cuda", init_nccl())
    dist.init_process_group("gloo")
    return torch.device("cpu")


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


# The spin after the aligning all-reduce: longer than the hosts' time to queue the timed call
# (~0.5 ms at H100 / H200 clocks). At 200000 cycles (~0.1 ms, RESULTS.md before issue 39's
# run 21) the rows that launch several kernels from Python (the bounds, the hand-written
# copy-engine anchor, torch's fused ops) still had their hosts launching when the GPUs
# started: run 21's 1000000 took the AG+matmul 8192 bound from 1.29x to 1.02x and torch's
# fused op from 2.65x to 1.37x, while the CUDA-graph rows stayed within noise.
# HIR_BENCH_SPIN_CYCLES sets another.
ALIGN_SPIN_CYCLES = int(os.environ.get("HIR_BENCH_SPIN_CYCLES", 1_000_000))


def align_ranks() -> None:
    """Queue, on the current stream, a one-element all-reduce (done on all ranks together)
    and then the same spin on each GPU: what is queued next starts at one GPU moment on
    every rank, the hosts having queued it during the spin."""
    flag = torch.zeros(1, device="cuda")
    dist.all_reduce(flag)  # the current stream waits for it
    torch.cuda._sleep(ALIGN_SPIN_CYCLES)


def _aligned_start(start: "torch.cuda.Event") -> None:
    """Record ``start`` at one GPU moment on every rank (:func:`align_ranks`)."""
    align_ranks()
    start.record()


def bench(fn: Callable[[], object], warm: int = 3, iters: int = 15) -> float:
    """Median milliseconds of ``fn()`` on this rank, maxed over ranks (CUDA events on a GPU,
    the host clock on the CPU)."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    aligned = cuda and os.environ.get("HIR_BENCH_START", "gpu") != "host"
    for _ in range(warm):
        fn()
    _sync()
    times = []
    for _ in range(iters):
        dist.barrier()
        _sync()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if aligned:
                _aligned_start(start)
            else:
                start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            start_s = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start_s) * 1e3)
    t = torch.tensor([statistics.median(times)], device="cuda" if cuda else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def turns(count: int, rounds: int) -> Iterator[tuple[int, int]]:
    """(round, row) in the order rows are timed in turns: every row once a round, each round
    starting further down the rows (round r at row r * count / rounds). A GPU warms up over a
    round, so a row timed first in every round would always meet it cooler than the rest."""
    for r in range(rounds):
        start = r * count // rounds
        for i in [*range(start, count), *range(start)]:
            yield r, i


def bench_in_turns(fns: Sequence[Callable[[], object]], rounds: int = 5, iters: int = 10) -> list[float]:
    """Each function's best median over ``rounds`` rounds, the functions timed in turns
    (:func:`turns`: a change of load or clocks hits every row alike)."""
    best = [float("inf")] * len(fns)
    for r, i in turns(len(fns), rounds):
        best[i] = min(best[i], bench(fns[i], warm=3 if r == 0 else 1, iters=iters))
    return best


def on_streams(chunk: Callable[[int], None], count: int, streams: list | None = None) -> Callable[[], None]:
    """A function running ``chunk(0..count-1)``: chunk i on ``streams[i]`` after the caller's
    stream, which then joins them all (hir-lower's stream loop, by hand), or in order on the
    caller's stream when ``streams`` is None."""

    def run() -> None:
        main = torch.cuda.current_stream()
        for i in range(count):
            stream = streams[i] if streams else main
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                chunk(i)
        for stream in streams or ():
            main.wait_stream(stream)

    return run


def relerr(got: torch.Tensor, ref: torch.Tensor) -> float:
    """||got - ref|| / ||ref|| over every rank's part (``ref`` float32)."""
    err = torch.tensor([(got.float() - ref).norm().item() ** 2, ref.norm().item() ** 2], device=ref.device)
    dist.all_reduce(err)
    return (err[0] / err[1]).sqrt().item()


def graphed(fn: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    """``fn`` captured in a CUDA graph (warmed up on a side stream first, as capture needs);
    the returned function replays it and returns the captured output buffer."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()

    def replay() -> torch.Tensor:
        graph.replay()
        return out

    return replay


def lowered_collectives(text: str, pipeline: str) -> dict[str, int]:
    """The collectives of the module ``text`` lowered with ``pipeline``, by kind (what an
    emitted benchmark module will run: printed beside its table)."""
    import hir
    from hir.dialect import COLLECTIVE_OPS
    from hir.dialect.irutils import blocks_postorder, func_ops

    module = hir.parse(text, "<emitted>")
    hir.lower(module, pipeline)
    kinds = {c.OPERATION_NAME: c.OPERATION_NAME.split(".", 1)[1] for c in COLLECTIVE_OPS}
    found = [
        kinds[op.operation.name]
        for fn in func_ops(module)
        for block in blocks_postorder(fn)
        for op in block.operations
        if op.operation.name in kinds
    ]
    return {kind: found.count(kind) for kind in sorted(set(found))}


def add_emit_run_arguments(
    parser: argparse.ArgumentParser,
    *,
    emits: str,
    runs: str,
    small: str,
    rounds: int,
    iters: int,
    iters_help: str,
    budget: float,
    timeout: float,
    worlds: str = "2,4",
) -> None:
    """The options of an emit-here / run-there benchmark (``layer.py``, ``tp_decode.py``):
    ``--emit DIR`` writes ``emits``, ``--from DIR`` runs ``runs`` under torchrun; ``--small``
    imports ``small`` (the CPU check on Gloo ranks: ``--device cpu``)."""
    parser.add_argument("--emit", metavar="DIR", help=f"import here: {emits} per world size")
    parser.add_argument(
        "--from", dest="from_dir", metavar="DIR", help=f"run {runs} under torchrun, one GPU (or CPU process) per rank"
    )
    parser.add_argument("--worlds", default=worlds, help="world sizes to import for (--emit)")
    parser.add_argument("--small", action="store_true", help=f"import {small} (the CPU check)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: Gloo ranks (the CPU check)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--iters", type=int, default=iters, help=iters_help)
    parser.add_argument(
        "--budget",
        type=float,
        default=budget,
        help="seconds of set-up after which rows not built yet print n/a (the rest are still timed and printed)",
    )
    parser.add_argument(
        "--timeout", type=float, default=timeout, help="seconds before a hung run dumps its stacks and exits"
    )
    parser.add_argument(
        "--rows",
        metavar="REGEX",
        help="build and time only the rows whose label matches REGEX (e.g. to find which row's build "
        "fails, with CUDA_LAUNCH_BLOCKING=1)",
    )


def selected(rows: list, pattern: str | None) -> list:
    """``rows`` (tuples whose first item is the label) matching ``--rows``."""
    return [row for row in rows if re.search(pattern, row[0])] if pattern else rows


def emit_or_run(
    parser: argparse.ArgumentParser,
    emit: Callable[[argparse.Namespace], None],
    run: Callable[[argparse.Namespace], int],
) -> int:
    """The exit status of a benchmark whose ``parser`` takes exactly one of ``--emit DIR``
    (import its modules here: the GPU machines have no FX importer) and ``--from DIR`` (run
    them under torchrun)."""
    args = parser.parse_args()
    if bool(args.emit) == bool(args.from_dir):
        parser.error("give one of --emit DIR (import) or --from DIR (run)")
    if args.emit:
        emit(args)
        return 0
    return run(args)
