"""All-gather+matmul and matmul+reduce-scatter on N GPUs: hir lowered programs against NCCL,
torch and torch's fused symmetric-memory kernels, side by side in one run (issue 5).

    torchrun --nproc_per_node=4 benchmarks/overlap.py [--sizes 8192,16384] [--chunks 4]
             [--pipelines 'hir-lower' 'hir-lower,hir-p2p-pipeline']

Layouts follow nvFuser's seed-003 pipelines (bf16, K = N = 8192):
  AG+matmul: A global [S, D, M/(S*D), K] split over the D devices on axis 1 (each rank holds
    M/D rows), B [K, N] split on N; out = allgather(A) @ B, split on N. Stream axis: S.
  matmul+RS: A [S, D, M/S, K] split on axis 1 (each rank holds a K/D slice, as in
    fused_matmul_reduce_scatter), B [1, D, K/D, N] split on axis 1; out = sum over D of the
    partial products, split on M. Stream axis: S.
Each row prints the median ms (CUDA events, max over ranks), the ratio to max(comm, matmul)
and the relative error against a float32 reference of the same product. Rows an
environment cannot run (e.g. a pipeline whose pass does not exist) print n/a and why.
"""

import argparse
import os
from typing import Optional

import torch
import torch.distributed as dist

import hir
from hir.builder import Builder, Shard
from hir.interpreter import compile as compile_program
from dist_timing import bench  # benchmarks/dist_timing.py


def relerr(got: torch.Tensor, ref: torch.Tensor) -> float:
    err = torch.tensor([(got.float() - ref).norm().item() ** 2, ref.norm().item() ** 2], device="cuda")
    dist.all_reduce(err)
    return (err[0] / err[1]).sqrt().item()


def ag_matmul_program(S: int, D: int, M: int, K: int, N: int):
    mesh = list(range(D))
    b = Builder()
    a = b.input([S, D, M // (S * D), K], "bf16", sharding=Shard(mesh, 1))
    w = b.input([K, N], "bf16", sharding=Shard(mesh, 1))
    a_full = b.set(a, sharding=Shard(mesh), stream_axis=0)
    b.output(b.matmul(a_full, w, sharding=Shard(mesh, 3), stream_axis=0))
    return b.finish()


def matmul_rs_program(S: int, D: int, M: int, K: int, N: int):
    mesh = list(range(D))
    b = Builder()
    a = b.input([S, D, M // S, K // D], "bf16", sharding=Shard(mesh, 1))
    w = b.input([1, D, K // D, N], "bf16", sharding=Shard(mesh, 1))
    partial = b.matmul(a, w, sharding=Shard(mesh, 1), stream_axis=0)
    b.output(b.sum(partial, [1], sharding=Shard(mesh, 1), stream_axis=0))
    return b.finish()


def hir_rows(build, pipelines, inputs, reference, rank) -> list[tuple[str, Optional[float], Optional[float], str]]:
    rows = []
    for pipeline in pipelines:
        label = f"hir [{pipeline}]"
        try:
            module = build()
            hir.lower(module, pipeline)
            program = compile_program(module, device=f"cuda:{rank}", num_streams=4)
            out = program(inputs)[0]
            rows.append((label, bench(lambda: program(inputs)), relerr(out, reference), ""))
        except Exception as err:  # a pipeline this build cannot lower or run: say why
            rows.append((label, None, None, f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"))
    return rows


def ag_matmul(size: int, S: int, pipelines, rank: int, D: int) -> list:
    M, K, N = size, 8192, 8192
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(rank)
    a_local = torch.randn(S, 1, M // (S * D), K, device=dev, dtype=bf16, generator=gen)
    b_local = torch.randn(K, N // D, device=dev, dtype=bf16, generator=gen)
    a_full = torch.empty(S, D, M // (S * D), K, device=dev, dtype=bf16)
    gathered = [torch.empty_like(a_local) for _ in range(D)]
    dist.all_gather(gathered, a_local)
    a_ref = torch.cat(gathered, 1)
    reference = (a_ref.float() @ b_local.float())
    out = torch.empty(S, D, M // (S * D), N // D, device=dev, dtype=bf16)
    flat_local = a_local.reshape(-1, K).contiguous()
    flat_full = torch.empty(D * flat_local.shape[0], K, device=dev, dtype=bf16)
    t_comm = bench(lambda: dist.all_gather_into_tensor(flat_full, flat_local))
    t_mm = bench(lambda: torch.matmul(a_full, b_local, out=out))

    def sequential():
        dist.all_gather_into_tensor(flat_full, flat_local)
        torch.matmul(a_full, b_local, out=out)

    rows = [("NCCL all-gather alone", t_comm, None, ""), ("matmul alone", t_mm, None, ""), ("sequential AG -> matmul", bench(sequential), None, "")]
    rows.append(_fused("torch fused_all_gather_matmul", lambda sym, g: torch.ops.symm_mem.fused_all_gather_matmul(sym, [b_local], gather_dim=0, group_name=g), flat_local))
    rows += hir_rows(lambda: ag_matmul_program(S, D, M, K, N), pipelines, [a_local, b_local], reference, rank)
    return t_comm, t_mm, rows


def matmul_rs(size: int, S: int, pipelines, rank: int, D: int) -> list:
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
    t_comm = bench(lambda: dist.reduce_scatter_tensor(shard, flat))
    t_mm = bench(lambda: torch.matmul(a_local, b_local, out=partial))

    def sequential():
        torch.matmul(a_local, b_local, out=partial)
        dist.reduce_scatter_tensor(shard, flat)

    rows = [("NCCL reduce-scatter alone", t_comm, None, ""), ("matmul alone", t_mm, None, ""), ("sequential matmul -> RS", bench(sequential), None, "")]
    a2 = a_local.reshape(-1, K // D).contiguous()
    rows.append(_fused("torch fused_matmul_reduce_scatter", lambda sym, g: torch.ops.symm_mem.fused_matmul_reduce_scatter(a2, b_local[0, 0], "sum", scatter_dim=0, group_name=g), a2))
    rows += hir_rows(lambda: matmul_rs_program(S, D, M, K, N), pipelines, [a_local, b_local], reference, rank)
    return t_comm, t_mm, rows


def _fused(label: str, call, local: torch.Tensor):
    try:
        import torch.distributed._symmetric_memory as symm_mem

        group = dist.group.WORLD
        symm_mem.enable_symm_mem_for_group(group.group_name)
        sym = symm_mem.empty(local.shape, device=local.device, dtype=local.dtype)
        sym.copy_(local)
        return (label, bench(lambda: call(sym, group.group_name)), None, "")
    except Exception as err:
        return (label, None, None, f"{type(err).__name__}: {str(err)[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8192,16384", help="values of M")
    parser.add_argument("--chunks", type=int, default=4, help="S, the stream-parallel chunks")
    parser.add_argument("--pipelines", nargs="+", default=["hir-lower"], help="hir pipelines to lower with")
    args = parser.parse_args()
    for var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        os.environ.setdefault(var, "0" if var == "NCCL_NVLS_ENABLE" else "1")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    D = dist.get_world_size()
    for name, case in (("AG+matmul", ag_matmul), ("matmul+RS", matmul_rs)):
        for size in (int(s) for s in args.sizes.split(",")):
            t_comm, t_mm, rows = case(size, args.chunks, args.pipelines, rank, D)
            if rank == 0:
                ideal = max(t_comm, t_mm)
                print(f"\n{name}, {D} GPUs, bf16, M={size} K=N=8192, S={args.chunks} ({torch.cuda.get_device_name()}, torch {torch.__version__})")
                print("| row | ms | / max(comm, matmul) | rel. error |\n|---|---:|---:|---:|")
                for label, t, err, note in rows:
                    ms = f"{t:.3f}" if t is not None else "n/a"
                    ratio = f"{t / ideal:.2f}x" if t is not None else note
                    print(f"| {label} | {ms} | {ratio} | {'' if err is None else f'{err:.1e}'} |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
