"""Set-up and timing shared by the multi-GPU benchmarks: one NCCL rank per GPU (NVLink
multicast off), and CUDA events around one call, median over iterations, max over ranks
(the slowest rank sets the pace)."""

import os
import statistics
from typing import Callable

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


def bench(fn: Callable[[], object], warm: int = 3, iters: int = 15) -> float:
    """Median milliseconds of ``fn()`` on this rank, maxed over ranks."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()
