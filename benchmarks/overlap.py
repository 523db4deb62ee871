"""All-gather+matmul and matmul+reduce-scatter on N GPUs: hir lowered programs against NCCL,
torch and torch's fused symmetric-memory kernels, side by side in one run (issue 5).

    torchrun --nproc_per_node=4 benchmarks/overlap.py [--sizes 8192,16384] [--chunks 4]
             [--pipelines 'hir-lower' ...] [--p2p '<P2P pipeline>' ...] [--graph]

Layouts follow nvFuser's seed-003 pipelines (bf16, K = N = 8192):
  AG+matmul: A global [S, D, M/(S*D), K] split over the D devices on axis 1 (each rank holds
    M/D rows), B [K, N] split on N; out = allgather(A) @ B, split on N. Stream axis: S.
  matmul+RS: A [S, D, M/S, K] split on axis 1 (each rank holds a K/D slice, as in
    fused_matmul_reduce_scatter), B [1, D, K/D, N] split on axis 1; out = sum over D of the
    partial products, split on M. Stream axis: S.
  P2P forms (``--p2p`` pipelines, default hir-p2p-pipeline): AG+matmul with A [D, M/D, K]
    split on the device axis, which is also the stream axis; matmul+RS with A
    [D, D, M/D, K/D] (destination block, K-slice owner), reduce-scattered along the stream
    axis. These are the copy-engine pipelines of hir-p2p-pipeline.
Each row prints the median ms (CUDA events, max over ranks; a table's rows timed in turns,
each its best of ``--rounds`` rounds), the ratio to max(comm, matmul)
and the relative error against a float32 reference of the same product, taken after the
first call and again after the timed calls (a race shows in either). Rows an environment
cannot run (e.g. a pipeline whose pass does not exist) print n/a and why; a row whose
error is above 1e-2 prints WRONG instead of its time, and the script exits 1 listing them.
"""

import argparse
import faulthandler
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist

import hir
from dist_timing import bench, init_nccl, on_streams, relerr, turns  # benchmarks/dist_timing.py
from hir.interpreter import compile as compile_program
from hir.interpreter.backends.process_groups import shutdown
from overlap_bounds import (  # benchmarks/overlap_bounds.py
    ag_matmul_bounds,
    keep,
    matmul_rs_bounds,
    release,
    slot_sum_alone,
    symmetric,
)
from overlap_programs import ag_matmul_program, matmul_rs_program, p2p_ag_matmul_program, p2p_matmul_rs_program
from timing import TOLERANCES, Row, Verdicts, worst

P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower"


def hir_callable(
    build, pipeline: str, inputs: list, device: torch.device, graph: bool | str
) -> Callable[[], torch.Tensor]:
    """The module ``build()`` gives, lowered by ``pipeline`` and compiled for ``device``; a
    function running it that returns its first output. A graph program (``graph=True``)
    runs on the graph's own static input buffers (a replay copies no inputs) and returns its
    static output buffer."""
    module = build()
    hir.lower(module, pipeline)
    static = graph is True
    program = compile_program(
        module, device=str(device), graph=graph, static_outputs=static
    )  # pool: the IR's hir.num_streams, else 4
    program(inputs)
    args = program.graph.static_inputs if static else inputs
    return lambda: program(args)[0]


# A row to time: (label, function, the float32 reference its result is checked against, or
# None for a row timed only); or, for a row that cannot run, its n/a Row.
Candidate = tuple[str, Callable[[], torch.Tensor | None], torch.Tensor | None]


def not_available(label: str, err: Exception) -> Row:
    """The n/a row of ``label``, saying why (the error's first line)."""
    return (label, None, None, f"{type(err).__name__}: {str(err).splitlines()[0][:90] if str(err) else ''}")


def candidate(
    label: str, build: Callable[[], Callable[[], torch.Tensor | None]], reference: torch.Tensor | None
) -> Candidate | Row:
    """A row to time: the function ``build()`` gives, called once here; its n/a row when it
    cannot be built or run (an API this torch lacks, a size it rejects)."""
    try:
        fn = build()
        fn()
        return (label, fn, reference)
    except Exception as err:
        return not_available(label, err)


def in_turns(items: list[Candidate | Row], rounds: int = 5) -> list[Row]:
    """The rows of ``items`` (candidates, and n/a rows passed through), in order: the
    candidates timed in turns (:func:`dist_timing.turns`), each row's best median of 10
    calls over ``rounds`` rounds; a checked row's error is the larger of its first call's
    and that of its last timed call, checked right after it (rows may share an output
    buffer)."""
    candidates = [item for item in items if len(item) == 3]
    errors = [None if reference is None else relerr(fn(), reference) for _, fn, reference in candidates]
    best = [float("inf")] * len(candidates)
    for r, i in turns(len(candidates), rounds):
        _, fn, reference = candidates[i]
        last: list = []
        best[i] = min(
            best[i],
            bench(lambda fn=fn, last=last: last.__setitem__(slice(None), [fn()]), warm=3 if r == 0 else 1, iters=10),
        )
        if r == rounds - 1 and reference is not None:
            errors[i] = worst(errors[i], relerr(last[0], reference))
    timed = iter(zip(best, errors))
    return [(item[0], *next(timed), "") if len(item) == 3 else item for item in items]


def hir_candidates(build, pipelines, inputs, reference, graph: bool, tag: str = "") -> list[Candidate | Row]:
    """One candidate per pipeline (and per mode: eager interpretation, CUDA-graph replay), or
    its n/a row. Graph rows pass the graph's own static input buffers, so a replay copies no
    inputs."""
    items: list[Candidate | Row] = []
    for pipeline in pipelines:
        for mode in ("eager", "graph") if graph else ("eager",):
            label = f"hir{tag} [{pipeline}]" + (" (CUDA graph)" if mode == "graph" else "")
            try:
                items.append(
                    (label, hir_callable(build, pipeline, inputs, reference.device, mode == "graph"), reference)
                )
            except Exception as err:  # a pipeline this build cannot lower or run: say why
                items.append(not_available(label, err))
    return items


def ag_matmul(size: int, S: int, pipelines, p2p, graph: bool, rank: int, D: int) -> list[Candidate | Row]:
    """AG+matmul's candidates (and n/a rows): the collective alone, the matmul alone, then
    the rest."""
    M, K, N = size, 8192, 8192
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(rank)
    a_local = torch.randn(S, 1, M // (S * D), K, device=dev, dtype=bf16, generator=gen)
    b_local = torch.randn(K, N // D, device=dev, dtype=bf16, generator=gen)
    a_full = torch.empty(S, D, M // (S * D), K, device=dev, dtype=bf16)
    gathered = [torch.empty_like(a_local) for _ in range(D)]
    dist.all_gather(gathered, a_local)
    a_ref = torch.cat(gathered, 1)
    reference = a_ref.float() @ b_local.float()
    out = torch.empty(S, D, M // (S * D), N // D, device=dev, dtype=bf16)
    flat_local = a_local.reshape(-1, K).contiguous()
    flat_full = torch.empty(D * flat_local.shape[0], K, device=dev, dtype=bf16)

    def sequential():
        dist.all_gather_into_tensor(flat_full, flat_local)
        torch.matmul(a_full, b_local, out=out)

    def chunk(i: int) -> None:
        dist.all_gather_into_tensor(a_full[i].view(-1), a_local[i].view(-1))
        torch.matmul(a_full[i], b_local, out=out[i])

    rows = [
        ("NCCL all-gather alone", lambda: dist.all_gather_into_tensor(flat_full, flat_local), None),
        ("matmul alone", lambda: torch.matmul(a_full, b_local, out=out), None),
        ("sequential AG -> matmul", sequential, None),
        (
            f"NCCL AG -> matmul in {S} stream chunks (hand; hir's whole form)",
            _returning(on_streams(chunk, S, _streams(S)), out),
            reference,
        ),
    ]
    # P2P form (also the anchors'): rank r's rows are the r-th block of the gathered A.
    blocks = torch.stack([g.reshape(M // D, K) for g in gathered])
    p2p_ref = blocks.float() @ b_local.float()
    rows.append(_copy_engine_anchor(a_local.reshape(M // D, K), b_local, reference=p2p_ref))
    rows += _bound_rows(lambda: ag_matmul_bounds(a_local.reshape(M // D, K), blocks, b_local), p2p_ref)
    rows.append(
        _fused(
            "torch fused_all_gather_matmul",
            lambda sym, g: torch.ops.symm_mem.fused_all_gather_matmul(sym, [b_local], gather_dim=0, group_name=g)[1][0],
            flat_local,
            p2p_ref.reshape(M, -1),
        )
    )
    rows += hir_candidates(lambda: ag_matmul_program(S, D, M, K, N), pipelines, [a_local, b_local], reference, graph)
    rows += hir_candidates(
        lambda: p2p_ag_matmul_program(D, M, K, N), p2p, [a_local.reshape(1, M // D, K), b_local], p2p_ref, graph, " P2P"
    )
    return rows


def matmul_rs(size: int, S: int, pipelines, p2p, graph: bool, rank: int, D: int) -> list[Candidate | Row]:
    """matmul+RS's candidates, in :func:`ag_matmul`'s order."""
    M, K, N = size, 8192, 8192
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(100 + rank)
    a_local = torch.randn(S, 1, M // S, K // D, device=dev, dtype=bf16, generator=gen)
    b_local = torch.randn(1, 1, K // D, N, device=dev, dtype=bf16, generator=gen)
    partial32 = (a_local.float() @ b_local.float()).sum(1)  # [S, M/S, N]
    dist.all_reduce(partial32)
    reference = partial32.chunk(D, 1)[rank]
    partial = torch.empty(S, 1, M // S, N, device=dev, dtype=bf16)
    flat = partial.reshape(-1, N)
    shard = torch.empty(flat.shape[0] // D, N, device=dev, dtype=bf16)

    def sequential():
        torch.matmul(a_local, b_local, out=partial)
        dist.reduce_scatter_tensor(shard, flat)

    shard_parts = shard.view(S, -1, N)

    def chunk(i: int) -> None:
        torch.matmul(a_local[i], b_local[0], out=partial[i])
        dist.reduce_scatter_tensor(shard_parts[i], partial[i].view(-1))

    rows = [
        ("NCCL reduce-scatter alone", lambda: dist.reduce_scatter_tensor(shard, flat), None),
        ("matmul alone", lambda: torch.matmul(a_local, b_local, out=partial), None),
        ("sequential matmul -> RS", sequential, None),
        (
            f"NCCL matmul -> RS in {S} stream chunks (hand; hir's whole form)",
            _returning(on_streams(chunk, S, _streams(S)), shard_parts),
            reference,
        ),
    ]
    a2 = a_local.reshape(-1, K // D).contiguous()
    rows.append(
        _fused(
            "torch fused_matmul_reduce_scatter",
            lambda sym, g: torch.ops.symm_mem.fused_matmul_reduce_scatter(
                a2, b_local[0, 0], "sum", scatter_dim=0, group_name=g
            ),
            a2,
            partial32.reshape(M, N).chunk(D, 0)[rank],
        )
    )
    rows += hir_candidates(lambda: matmul_rs_program(S, D, M, K, N), pipelines, [a_local, b_local], reference, graph)
    # P2P form: D row blocks, block p reduced onto rank p.
    a_p2p = torch.randn(D, 1, M // D, K // D, device=dev, dtype=bf16, generator=gen)
    partial32 = (a_p2p.float() @ b_local.float()).sum(1)  # [D, M/D, N]
    dist.all_reduce(partial32)
    rows += _bound_rows(lambda: matmul_rs_bounds(a_p2p, b_local), partial32[rank : rank + 1])
    rows.append(("the slot form's final sum alone", slot_sum_alone(a_p2p, b_local), None))
    rows += hir_candidates(
        lambda: p2p_matmul_rs_program(D, M, K, N), p2p, [a_p2p, b_local], partial32[rank : rank + 1], graph, " P2P"
    )
    return rows


def _bound_rows(bounds: Callable[[], list], reference: torch.Tensor) -> list:
    """The overlap bounds (benchmarks/overlap_bounds.py) as candidates, checked against
    ``reference`` where they compute the result; one n/a row saying why when this torch
    cannot build them."""
    try:
        built = bounds()
    except Exception as err:
        return [not_available("overlap bounds", err)]
    return [candidate(label, lambda fn=fn: fn, reference if checked else None) for label, fn, checked in built]


def _streams(count: int) -> list:
    return [torch.cuda.Stream() for _ in range(count)]


def _returning(fn: Callable[[], None], out: torch.Tensor) -> Callable[[], torch.Tensor]:
    """``fn``, then ``out`` (the buffer it writes): a row checked against its reference."""

    def run() -> torch.Tensor:
        fn()
        return out

    return run


def _copy_engine_anchor(
    a_shard: torch.Tensor, b: torch.Tensor, run: bool = False, reference: torch.Tensor | None = None
):
    """DESIGN.md's hand-written copy-engine AG+matmul (shared/reference/ag_matmul_ce.py):
    shard already in symmetric memory, own block's matmul at once, peer copies in order on
    one side stream, each block's matmul waiting for its copy's event. A candidate checked
    against ``reference`` (every rank's blocks, [world, rows, N]), or (``run``) the pipeline
    function itself."""

    def build() -> Callable[[], torch.Tensor]:
        rank, world = dist.get_rank(), dist.get_world_size()
        handle, peers = symmetric(a_shard)
        sym = peers[rank]
        a_full = torch.empty(world, *a_shard.shape, device=a_shard.device, dtype=a_shard.dtype)
        out = torch.empty(world, a_shard.shape[0], b.shape[1], device=b.device, dtype=b.dtype)
        side = torch.cuda.Stream()
        events = [torch.cuda.Event() for _ in range(world)]

        def pipeline():
            main = torch.cuda.current_stream()
            handle.barrier(channel=0)
            side.wait_stream(main)
            torch.mm(sym, b, out=out[rank])
            with torch.cuda.stream(side):
                for i in range(1, world):
                    r = (rank + i) % world
                    a_full[r].copy_(peers[r])
                    events[r].record(side)
            for i in range(1, world):
                r = (rank + i) % world
                main.wait_event(events[r])
                torch.mm(a_full[r], b, out=out[r])
            handle.barrier(channel=1)
            return out

        return pipeline

    return build() if run else candidate("hand-written copy-engine pipeline (anchor)", build, reference)


def _fused(label: str, call, local: torch.Tensor, reference: torch.Tensor):
    """A candidate timing torch's fused symmetric-memory op ``call(symmetric copy of local, group
    name)``, which returns the output checked against ``reference``."""

    def build() -> Callable[[], torch.Tensor]:
        import torch.distributed._symmetric_memory as symm_mem

        group = dist.group.WORLD
        symm_mem.enable_symm_mem_for_group(group.group_name)
        sym = symm_mem.empty(local.shape, device=local.device, dtype=local.dtype)
        sym.copy_(local)
        keep(sym)
        return lambda: call(sym, group.group_name)

    return candidate(label, build, reference)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8192,16384", help="values of M")
    parser.add_argument("--chunks", type=int, default=4, help="S, the stream-parallel chunks")
    parser.add_argument(
        "--pipelines", nargs="*", default=["hir-lower"], help="hir pipelines for the seed-003 (S-chunk) programs"
    )
    parser.add_argument("--p2p", nargs="*", default=[P2P], help="hir pipelines for the P2P-form programs")
    parser.add_argument("--graph", action="store_true", help="also time each hir row as a CUDA-graph replay")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of the rows timed in turns (a row's time: its best round)"
    )
    parser.add_argument(
        "--timeout", type=float, default=0, help="seconds before a hung run dumps its stacks and exits (0: never)"
    )
    args = parser.parse_args()
    if args.timeout:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    rank = init_nccl()
    D = dist.get_world_size()
    verdicts = Verdicts(TOLERANCES["bf16"])
    for name, case in (("AG+matmul", ag_matmul), ("matmul+RS", matmul_rs)):
        for size in (int(s) for s in args.sizes.split(",")):
            rows = in_turns(case(size, args.chunks, args.pipelines, args.p2p, args.graph, rank, D), args.rounds)
            ideal = max(rows[0][1], rows[1][1])  # the collective alone, the matmul alone
            verdicts.table = f"{name} M={size}"
            if rank == 0:
                print(
                    f"\n{name}, {D} GPUs, bf16, M={size} K=N=8192, S={args.chunks} "
                    f"({torch.cuda.get_device_name()}, torch {torch.__version__})"
                )
                print("| row | ms | / max(comm, matmul) | rel. error |\n|---|---:|---:|---:|")
            verdicts.print_rows(rows, ideal, show=rank == 0)
    # the rows' CUDA graphs, symmetric buffers and hir's team groups before the default group:
    # destroy_process_group hung under a live graph that had captured NCCL kernels
    release()
    shutdown()
    return verdicts.finish(show=rank == 0)


if __name__ == "__main__":
    sys.exit(main())
