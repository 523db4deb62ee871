"""Copy-engine bandwidth of peer-to-peer pulls through symmetric memory, every rank pulling
at once (as in a P2P pipeline step): one peer on one stream, one peer split over 2 and 4
streams (``hir.interpreter.backends.copy_engine.split_copy``, the ``copies`` attribute of hir.shift), and all
peers, one after another or all at once. Tells how many copy engines a shift should use.

    torchrun --nproc_per_node=4 benchmarks/copy_engines.py [--mib 64]
"""

import argparse

import torch
import torch.distributed as dist

from dist_timing import bench, init_nccl  # benchmarks/dist_timing.py
from hir.interpreter.backends.copy_engine import split_copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB per peer block (64: a bf16 4096x8192 shard)")
    args = parser.parse_args()
    rank = init_nccl()
    import torch.distributed._symmetric_memory as symm_mem

    world, group = dist.get_world_size(), dist.group.WORLD
    rows = args.mib * 2**20 // (8192 * 2)
    shape = (rows, 8192)
    sym = symm_mem.empty(shape, dtype=torch.bfloat16, device="cuda")
    sym.normal_()
    handle = symm_mem.rendezvous(sym, group.group_name)
    peers = [handle.get_buffer(r, shape, torch.bfloat16) for r in range(world)]
    dest = torch.empty(world, *shape, dtype=torch.bfloat16, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(world)]
    nxt = (rank + 1) % world
    others = [(rank + i) % world for i in range(1, world)]

    def all_at_once() -> None:
        current = torch.cuda.current_stream()
        for s, r in zip(streams, others):
            s.wait_stream(current)
            with torch.cuda.stream(s):
                dest[r].copy_(peers[r])
        for s in streams[: len(others)]:
            current.wait_stream(s)

    cases = [
        ("1 peer, 1 stream", 1, lambda: dest[nxt].copy_(peers[nxt])),
        ("1 peer, split over 2 streams", 1, lambda: split_copy(dest[nxt], peers[nxt], streams[:1])),
        ("1 peer, split over 4 streams", 1, lambda: split_copy(dest[nxt], peers[nxt], streams[:3])),
        (f"{world - 1} peers, one after another", world - 1, lambda: [dest[r].copy_(peers[r]) for r in others]),
        (
            f"{world - 1} peers, each split over 2 streams, one after another",
            world - 1,
            lambda: [split_copy(dest[r], peers[r], streams[:1]) for r in others],
        ),
        (f"{world - 1} peers at once (a stream each)", world - 1, all_at_once),
    ]
    results = []
    for label, blocks, fn in cases:
        handle.barrier(channel=0)
        ms = bench(fn)
        results.append((label, ms, blocks * args.mib * 2**20 / (ms * 1e-3) / 1e9))
    if rank == 0:
        print(
            f"\nPeer pulls, {world} GPUs, {args.mib} MiB per block, every rank "
            f"pulling ({torch.cuda.get_device_name()}, torch {torch.__version__})"
        )
        print("| case | ms | GB/s received per GPU |\n|---|---:|---:|")
        for label, ms, gbs in results:
            print(f"| {label} | {ms:.3f} | {gbs:.0f} |")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
