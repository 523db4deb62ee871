"""Can NCCL collectives overlap a GEMM at all? hir-lower's whole form of a stream-parallel
collective (nvFuser's seed-003 host program) is S chunks, each chunk's matmul and NCCL
collective on a pool stream of its own. This script writes that form by hand in torch and
times it against the sequential calls, with the process-group and cuBLAS settings that could
let NCCL's kernels run beside the GEMM (issue 39: "whole collectives never lose to plain
NCCL"):

    torchrun --nproc_per_node=4 benchmarks/whole_nccl.py [--sizes 8192,16384] [--chunks 4]

Rows (bf16, K = N = 8192, the layouts of benchmarks/overlap.py's seed-003 programs), each
the best median of 5 rounds timed in turns, x max(collective alone, matmul alone):
  sequential: the matmul, then the collective, whole;
  S streams [g]: hir-lower's whole form (chunk i's matmul and collective on stream i);
  one stream [g]: the chunks in order on the caller's stream (each collective on NCCL's
    stream, so chunk i's collective may run while chunk i + 1 multiplies);
where g is the process group: the default one, one with high-priority NCCL streams
(``is_high_priority_stream``), ones whose NCCL kernels take at most 8 or 16 CTAs
(``config.max_ctas``), or the default group with cuBLAS told to leave SMs free
(``torch._C._set_sm_carveout_experimental``; its matmul-alone rows show whether the GEMM
took the carve-out at all). Hand-written torch only: no hir code runs here.
"""

import argparse
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist

from dist_timing import bench_in_turns, init_nccl, on_streams  # benchmarks/dist_timing.py


def process_groups(world: int) -> dict:
    """Name -> process group (None: the default group) for each setting this torch has."""
    groups: dict = {"default": None}
    settings = {"high-priority streams": dict(high=True), "max 8 CTAs": dict(ctas=8), "max 16 CTAs": dict(ctas=16)}
    for name, setting in settings.items():
        try:
            options = dist.ProcessGroupNCCL.Options()
            options.is_high_priority_stream = setting.get("high", False)
            if "ctas" in setting:
                options.config.min_ctas, options.config.max_ctas = 1, setting["ctas"]
            groups[name] = dist.new_group(list(range(world)), pg_options=options)
            dist.barrier(group=groups[name])
        except Exception as err:  # an option this torch or NCCL lacks: say so, go on
            if dist.get_rank() == 0:
                print(f"no group '{name}': {type(err).__name__}: {str(err)[:100]}")
    return groups


def carved(fn: Callable[[], object], sms: int) -> Callable[[], object]:
    """``fn`` with cuBLAS asked to leave ``sms`` SMs free."""

    def run() -> object:
        torch._C._set_sm_carveout_experimental(sms)
        try:
            return fn()
        finally:
            torch._C._set_sm_carveout_experimental(None)

    return run


def rows_for(case: str, M: int, S: int, world: int, groups: dict, streams: list) -> dict:
    """Row label -> function for ``case`` ("matmul+RS" or "AG+matmul") at M rows: the
    collective and the matmul alone, sequential, stream-chunked per process group, and with
    cuBLAS's carve-out (where this torch has it)."""
    K, N = 8192, 8192
    dev, bf16 = torch.device("cuda", dist.get_rank()), torch.bfloat16
    if case == "matmul+RS":  # each rank a K/D slice; the partial [S, M/S, N] reduced and scattered on M
        a = torch.randn(S, M // S, K // world, device=dev, dtype=bf16)
        b = torch.randn(K // world, N, device=dev, dtype=bf16)
        partial = torch.empty(S, M // S, N, device=dev, dtype=bf16)
        out = torch.empty(S, M // S // world, N, device=dev, dtype=bf16)

        def matmul():
            return torch.matmul(a, b, out=partial)

        def collective():
            return dist.reduce_scatter_tensor(out.view(-1), partial.view(-1))

        def chunk(i: int, group) -> None:
            torch.matmul(a[i], b, out=partial[i])
            dist.reduce_scatter_tensor(out[i], partial[i], group=group)
    else:  # AG+matmul: each rank M/D rows, B split on N
        a = torch.randn(S, M // S // world, K, device=dev, dtype=bf16)
        full = torch.empty(S, M // S, K, device=dev, dtype=bf16)
        b = torch.randn(K, N // world, device=dev, dtype=bf16)
        out = torch.empty(S, M // S, N // world, device=dev, dtype=bf16)

        def matmul():
            return torch.matmul(full, b, out=out)

        def collective():
            return dist.all_gather_into_tensor(full.view(-1), a.view(-1))

        def chunk(i: int, group) -> None:
            dist.all_gather_into_tensor(full[i], a[i], group=group)
            torch.matmul(full[i], b, out=out[i])

    rows = {
        "matmul alone": matmul,
        "collective alone": collective,
        "sequential": (lambda: (matmul(), collective())) if case == "matmul+RS" else (lambda: (collective(), matmul())),
    }
    for name, group in groups.items():
        rows[f"{S} streams [{name}]"] = on_streams(lambda i, g=group: chunk(i, g), S, streams)
        rows[f"one stream [{name}]"] = on_streams(lambda i, g=group: chunk(i, g), S)
    for sms in (16, 32) if hasattr(torch._C, "_set_sm_carveout_experimental") else ():
        rows[f"matmul alone [carve-out {sms} SMs]"] = carved(matmul, sms)
        rows[f"{S} streams [carve-out {sms} SMs]"] = carved(on_streams(lambda i: chunk(i, None), S, streams), sms)
    return rows


def main() -> int:
    """Time every row of both cases at each size; rank 0 prints the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8192,16384", help="values of M")
    parser.add_argument("--chunks", type=int, default=4, help="S, the stream-parallel chunks")
    args = parser.parse_args()
    rank = init_nccl()
    world = dist.get_world_size()
    groups = process_groups(world)
    streams = [torch.cuda.Stream() for _ in range(args.chunks)]
    for case in ("matmul+RS", "AG+matmul"):
        for M in (int(s) for s in args.sizes.split(",")):
            rows = rows_for(case, M, args.chunks, world, groups, streams)
            times = dict(zip(rows, bench_in_turns(list(rows.values()), rounds=5, iters=10)))
            ideal = max(times["matmul alone"], times["collective alone"])
            if rank == 0:
                print(
                    f"\n{case}, {world} GPUs, M={M} K=N=8192, S={args.chunks} "
                    f"({torch.cuda.get_device_name()}, torch {torch.__version__})"
                )
                print("| row | ms | x max(collective, matmul) |\n|---|---:|---:|")
                for name, ms in times.items():
                    print(f"| {name} | {ms:.3f} | {ms / ideal:.2f}x |")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
