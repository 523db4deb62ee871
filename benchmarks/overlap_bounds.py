"""The overlap bounds of benchmarks/overlap.py (issue 39): the matmul beside the same
communication with no dependency between them. Such a row has no fill, no drain and no
wait, only the two sharing the GPUs (SMs, memory, power), so no pipeline over that
transport can be faster: a target below a bound row cannot be met with it.

- copy engines: the peers' shards (AG) or parts (RS) pulled one after another on a side
  stream, as the P2P pipelines move them, while the matmul runs on the caller's stream on
  data already in place; the RS row then sums the slots, as the slot form must (its own slot
  holds the local part computed at set-up: the inputs do not change, so the values are those
  of this call's matmul and the sum can be checked);
- NCCL: the whole collective on a side stream beside the matmul.

Each bound is ``(label, function returning its output, whether that output is the
benchmark's result)``: the RS row without the slot sum (the bound of the accumulating ring,
which adds in the matmul's epilogue instead) is timed, not checked.
"""

from collections.abc import Callable

import torch
import torch.distributed as dist

Bound = tuple[str, Callable[[], torch.Tensor], bool]


# Every symmetric buffer and rendezvous handle, kept to the end of the run: a dropped handle
# unmaps its peers' buffers, and a freed buffer's memory, taken again by the next size's
# allocation, hung the anchor's first barrier (issue 39 runs 15 and 18: stuck after the first
# table).
_KEPT: list = []


def keep(*objects) -> None:
    """Keep ``objects`` (symmetric buffers, handles) alive to the end of the run."""
    _KEPT.extend(objects)


def release() -> None:
    """Drop what :func:`keep` kept (at the end of the run, before the process groups go)."""
    torch.cuda.synchronize()
    _KEPT.clear()


def symmetric(local: torch.Tensor) -> tuple:
    """``local`` copied into symmetric memory: (its rendezvous handle, every rank's buffer
    indexed by rank)."""
    import torch.distributed._symmetric_memory as symm_mem

    sym = symm_mem.empty(local.shape, device=local.device, dtype=local.dtype)
    sym.copy_(local)
    handle = symm_mem.rendezvous(sym, dist.group.WORLD.group_name)
    keep(sym, handle)
    torch.cuda.synchronize()
    dist.barrier()  # every rank's copy is in place before any peer reads it
    return handle, [handle.get_buffer(r, tuple(local.shape), local.dtype) for r in range(dist.get_world_size())]


def _beside(
    matmul: Callable[[], None], comm: Callable[[], None], then: Callable[[], torch.Tensor]
) -> Callable[[], torch.Tensor]:
    """A function running ``comm`` on a side stream beside ``matmul`` on the caller's stream,
    then ``then`` after both."""
    side = torch.cuda.Stream()

    def run() -> torch.Tensor:
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            comm()
        matmul()
        main.wait_stream(side)
        return then()

    return run


def ag_matmul_bounds(shard: torch.Tensor, gathered: torch.Tensor, b: torch.Tensor) -> list[Bound]:
    """AG+matmul: ``shard`` [M/D, K] (this rank's), ``gathered`` [D, M/D, K] (every rank's,
    in place already), ``b`` [K, N/D]; the output is ``gathered @ b``."""
    rank, world = dist.get_rank(), dist.get_world_size()
    out = torch.empty(world, shard.shape[0], b.shape[1], device=b.device, dtype=b.dtype)
    _, peers = symmetric(shard)
    landing = torch.empty_like(gathered)
    full = torch.empty(world * shard.shape[0], shard.shape[1], device=shard.device, dtype=shard.dtype)

    def matmul() -> None:
        torch.matmul(gathered, b, out=out)

    def pulls() -> None:
        for i in range(1, world):
            r = (rank + i) % world
            landing[r].copy_(peers[r])

    return [
        (
            "bound: matmul beside the peer pulls (copy engines, no dependency)",
            _beside(matmul, pulls, lambda: out),
            True,
        ),
        (
            "bound: matmul beside the NCCL all-gather (no dependency)",
            _beside(matmul, lambda: dist.all_gather_into_tensor(full, shard), lambda: out),
            True,
        ),
    ]


def matmul_rs_bounds(a: torch.Tensor, b: torch.Tensor) -> list[Bound]:
    """matmul+RS in the P2P form: ``a`` [D, 1, M/D, K/D], ``b`` [1, 1, K/D, N]; block p of
    ``a @ b`` summed over the ranks is rank p's output [1, M/D, N]."""
    rank, world = dist.get_rank(), dist.get_world_size()
    partial = torch.matmul(a, b)  # [D, 1, M/D, N], this call's values
    parts = partial.reshape(world, *partial.shape[2:])
    _, peers = symmetric(parts)
    slots = torch.empty_like(parts)
    slots[rank].copy_(parts[rank])
    out = torch.empty(1, *parts.shape[1:], device=a.device, dtype=a.dtype)
    flat = parts.reshape(-1, parts.shape[-1]).clone()

    def matmul() -> None:
        torch.matmul(a, b, out=partial)

    def pulls() -> None:
        for i in range(1, world):
            r = (rank + i) % world
            slots[r].copy_(peers[r][rank])

    def slot_sum() -> torch.Tensor:
        torch.sum(slots, 0, keepdim=True, out=out)
        return out

    scattered = out.view(-1, parts.shape[-1])
    return [
        (
            "bound: matmul beside the peer pulls (copy engines, no dependency), then the slot sum",
            _beside(matmul, pulls, slot_sum),
            True,
        ),
        (
            "bound: matmul beside the peer pulls, no sum (the accumulating ring's; timed only)",
            _beside(matmul, pulls, lambda: partial),
            False,
        ),
        (
            "bound: matmul beside the NCCL reduce-scatter (no dependency)",
            _beside(matmul, lambda: dist.reduce_scatter_tensor(scattered, flat), lambda: out),
            True,
        ),
    ]


def slot_sum_alone(a: torch.Tensor, b: torch.Tensor) -> Callable[[], None]:
    """The slot form's final sum on its own (D slots of [M/D, N] into one), to time."""
    world = dist.get_world_size()
    slots = torch.empty(world, a.shape[2], b.shape[-1], device=a.device, dtype=a.dtype)
    out = torch.empty(1, *slots.shape[1:], device=a.device, dtype=a.dtype)
    return lambda: torch.sum(slots, 0, keepdim=True, out=out)
