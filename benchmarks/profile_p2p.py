"""Where the time of a P2P pipeline goes: one profiled run (after warm-up) of the
hand-written copy-engine AG+matmul anchor and of hir's hir-p2p-pipeline AG+matmul and
matmul+RS (eager, or replayed as a CUDA graph with ``--graph``), printed as rank 0's GPU
timeline: every kernel and copy with its stream, start and duration (us, from the first GPU
activity of the run).

    torchrun --nproc_per_node=4 benchmarks/profile_p2p.py [--size 16384] [--graph] [--pipeline P ...]
"""

import argparse

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

import hir
from hir.interpreter import compile as compile_program
from dist_timing import init_nccl  # benchmarks/dist_timing.py
from overlap import P2P, _copy_engine_anchor, p2p_ag_matmul_program, p2p_matmul_rs_program  # benchmarks/overlap.py


def timeline(label: str, fn) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        dist.barrier()  # as benchmarks/dist_timing.bench: ranks start together
        torch.cuda.synchronize()
        fn()
        torch.cuda.synchronize()
    dist.barrier()
    if dist.get_rank() != 0:
        return
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "nccl" not in e.name.lower()]
    if not events:
        print(f"\n{label}: no GPU events recorded")
        return
    t0 = min(e.time_range.start for e in events)
    end = max(e.time_range.end for e in events)
    print(f"\n{label}: {end - t0:.0f} us of GPU activity on rank 0")
    print("| stream | start | us | what |\n|---:|---:|---:|---|")
    for e in sorted(events, key=lambda e: e.time_range.start):
        print(f"| {getattr(e, 'device_resource_id', '?')} | {e.time_range.start - t0:.0f} | {e.time_range.elapsed_us():.0f} | {e.name[:70]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=16384, help="M (torchrun takes a bare --m for its own options)")
    parser.add_argument("--pipeline", nargs="+", default=[P2P], help="hir pipelines to profile, one timeline each")
    parser.add_argument("--graph", action="store_true", help="replay the hir programs as CUDA graphs")
    args = parser.parse_args()
    rank = init_nccl()
    D, M, K, N = dist.get_world_size(), args.size, 8192, 8192
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    a = torch.randn(1, M // D, K, device=dev, dtype=bf16)
    b = torch.randn(K, N // D, device=dev, dtype=bf16)
    anchor = _copy_engine_anchor(a[0], b, run=True)
    timeline("hand-written copy-engine AG+matmul", anchor)
    for name, build, inputs in (
        ("AG+matmul", p2p_ag_matmul_program, [a, b]),
        ("matmul+RS", p2p_matmul_rs_program, [torch.randn(D, 1, M // D, K // D, device=dev, dtype=bf16), torch.randn(1, 1, K // D, N, device=dev, dtype=bf16)]),
    ):
        for pipeline in args.pipeline:
            module = build(D, M, K, N)
            hir.lower(module, pipeline)
            program = compile_program(module, device=str(dev), graph=args.graph, static_outputs=args.graph)  # pool: the IR's hir.num_streams, else 4
            run_inputs = inputs
            if args.graph:
                program(inputs)  # capture; replays then read the graph's own input buffers
                run_inputs = program.graph.static_inputs
            mode = " (CUDA graph)" if args.graph else ""
            timeline(f"hir {name} [{pipeline}]{mode}", lambda: program(run_inputs))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
