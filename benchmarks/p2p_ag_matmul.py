"""Quick timing of hir-p2p-pipeline AG+matmul (bf16, A [M, K] row-sharded, B [K, N/world])
through the interpreter, vs NCCL all-gather + matmul. Run: torchrun --nproc_per_node=N
benchmarks/p2p_ag_matmul.py [M] [K] [N]. Prints ms (median of 20, max over ranks)."""

import os
import sys

for key, value in {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}.items():
    os.environ.setdefault(key, value)

import torch
import torch.distributed as dist

import hir
from hir.interpreter import compile as compile_program
from hir.interpreter.distributed import Communicator, default_device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))
from test_p2p import ag_matmul  # noqa: E402
from dist_timing import bench  # benchmarks/dist_timing.py


def main() -> None:
    M, K, N = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (16384, 8192, 8192)))
    dev = default_device("cuda")
    Communicator(dev, "nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    ml, nl = M // world, N // world
    a = torch.randn(1, ml, K, device=dev, dtype=torch.bfloat16)
    b = torch.randn(K, nl, device=dev, dtype=torch.bfloat16)
    full = torch.empty(world, ml, K, device=dev, dtype=torch.bfloat16)
    out = torch.empty(world, ml, nl, device=dev, dtype=torch.bfloat16)
    t_ag = bench(lambda: dist.all_gather_into_tensor(full, a))
    t_mm = bench(lambda: torch.matmul(full, b, out=out))
    ref = torch.matmul(full, b).float()
    row = [f"world={world} M={M} K={K} N={N}: nccl_ag={t_ag:.3f} mm={t_mm:.3f} seq={t_ag + t_mm:.3f}"]
    for algorithm in ("local-first", "ring"):
        for streams in (2, 4):
            module = hir.parse(ag_matmul(world, ml, K, nl, "bf16"), "ag_matmul.mlir")
            hir.lower(module, f"hir-convert-to-communication{{backend=cuda}},hir-p2p-pipeline{{algorithm={algorithm}}},hir-lower")
            program = compile_program(module, device=str(dev), num_streams=streams)
            t = bench(lambda: program([a, b]))
            (got,) = program([a, b])
            torch.cuda.synchronize()
            err = ((got.float() - ref).norm() / ref.norm()).item()
            row.append(f"hir[{algorithm},{streams} streams]={t:.3f} ({t / max(t_ag, t_mm):.2f}x ideal, relerr {err:.1e})")
    if rank == 0:
        print("\n  ".join(row), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
