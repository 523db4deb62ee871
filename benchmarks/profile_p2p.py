"""Where the time of a P2P pipeline goes: one profiled run (after warm-up) of the
hand-written copy-engine AG+matmul anchor and of hir's hir-p2p-pipeline AG+matmul and
matmul+RS (eager, or replayed as a CUDA graph with ``--graph``). Each run starts on every
GPU at one moment, as ``dist_timing.bench`` times it (``align_ranks``: an all-reduce, then
a spin while the hosts queue the run; ``--host-start``: each rank when its host gets there).
Printed: per rank, the span from that moment to the rank's last GPU activity and where it
went (GEMM kernels: busy time, first start, last end; copies: busy time; the tail after the
last GEMM), then rank 0's timeline: every kernel and copy with its stream, start and
duration (us).

    torchrun --nproc_per_node=4 benchmarks/profile_p2p.py [--size 16384] [--graph] [--host-start] [--pipeline P ...]
"""

import argparse

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

import hir
from dist_timing import align_ranks, init_nccl  # benchmarks/dist_timing.py
from hir.interpreter import compile as compile_program
from overlap import P2P, _copy_engine_anchor  # benchmarks/overlap.py
from overlap_programs import p2p_ag_matmul_program, p2p_matmul_rs_program

GEMM_NAMES = ("gemm", "xmma", "cutlass", "nvjet", "sm90_", "sm80_")
SPIN_NAMES = ("spin_kernel", "sleep")


def _kind(name: str) -> str:
    low = name.lower()
    if "memcpy" in low:
        return "copy"
    if any(n in low for n in SPIN_NAMES):
        return "spin"
    return "gemm" if any(n in low for n in GEMM_NAMES) else "other"


def timeline(label: str, fn, aligned: bool) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        dist.barrier()
        torch.cuda.synchronize()
        if aligned:
            align_ranks()
        fn()
        torch.cuda.synchronize()
    dist.barrier()
    events = [
        e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "nccl" not in e.name.lower()
    ]
    spins = [e.time_range.end for e in events if _kind(e.name) == "spin"]
    t0 = max(spins) if aligned and spins else min((e.time_range.start for e in events), default=0)
    events = [e for e in events if e.time_range.start >= t0 and _kind(e.name) != "spin"]
    summaries = [None] * dist.get_world_size()
    dist.all_gather_object(summaries, _summary(events, t0))
    if dist.get_rank() != 0:
        return
    if not events:
        print(f"\n{label}: no GPU events recorded")
        return
    print(f"\n{label}, {'from one GPU moment (align_ranks)' if aligned else 'from each rank host start'} (us)")
    print(
        "| rank | span | GEMM busy | first GEMM | last GEMM end | tail after "
        "it | copies busy | kernels |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for rank, s in enumerate(summaries):
        print(
            f"| {rank} | {s['span']:.0f} | {s['gemm']:.0f} | {s['first']:.0f} | "
            f"{s['last']:.0f} | {s['span'] - s['last']:.0f} | {s['copy']:.0f} | {s['count']} |"
        )
    print("\nrank 0's timeline\n| stream | start | us | what |\n|---:|---:|---:|---|")
    for e in sorted(events, key=lambda e: e.time_range.start):
        print(
            f"| {getattr(e, 'device_resource_id', '?')} | {e.time_range.start - t0:.0f} "
            f"| {e.time_range.elapsed_us():.0f} | {e.name[:70]} |"
        )


def _summary(events: list, t0: float) -> dict:
    """A rank's span from ``t0`` and where it went."""
    gemms = [e for e in events if _kind(e.name) == "gemm"]
    return {
        "span": max((e.time_range.end for e in events), default=t0) - t0,
        "gemm": sum(e.time_range.elapsed_us() for e in gemms),
        "first": min((e.time_range.start for e in gemms), default=t0) - t0,
        "last": max((e.time_range.end for e in gemms), default=t0) - t0,
        "copy": sum(e.time_range.elapsed_us() for e in events if _kind(e.name) == "copy"),
        "count": len(events),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=16384, help="M (torchrun takes a bare --m for its own options)")
    parser.add_argument("--pipeline", nargs="+", default=[P2P], help="hir pipelines to profile, one timeline each")
    parser.add_argument("--graph", action="store_true", help="replay the hir programs as CUDA graphs")
    parser.add_argument(
        "--host-start", action="store_true", help="start each rank's run when its host gets there (no align_ranks)"
    )
    args = parser.parse_args()
    rank = init_nccl()
    D, M, K, N = dist.get_world_size(), args.size, 8192, 8192
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    a = torch.randn(1, M // D, K, device=dev, dtype=bf16)
    b = torch.randn(K, N // D, device=dev, dtype=bf16)
    anchor = _copy_engine_anchor(a[0], b, run=True)
    timeline("hand-written copy-engine AG+matmul", anchor, not args.host_start)
    for name, build, inputs in (
        ("AG+matmul", p2p_ag_matmul_program, [a, b]),
        (
            "matmul+RS",
            p2p_matmul_rs_program,
            [
                torch.randn(D, 1, M // D, K // D, device=dev, dtype=bf16),
                torch.randn(1, 1, K // D, N, device=dev, dtype=bf16),
            ],
        ),
    ):
        for pipeline in args.pipeline:
            module = build(D, M, K, N)
            hir.lower(module, pipeline)
            program = compile_program(
                module, device=str(dev), graph=args.graph, static_outputs=args.graph
            )  # pool: the IR's hir.num_streams, else 4
            run_inputs = inputs
            if args.graph:
                program(inputs)  # capture; replays then read the graph's own input buffers
                run_inputs = program.graph.static_inputs
            mode = " (CUDA graph)" if args.graph else ""
            timeline(
                f"hir {name} [{pipeline}]{mode}",
                lambda program=program, run_inputs=run_inputs: program(run_inputs),
                not args.host_start,
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
