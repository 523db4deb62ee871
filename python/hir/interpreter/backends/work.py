"""Work tokens (what a communication leaves in its result slot for ``hir.wait``) and the
small tensor helpers every transfer uses."""

from collections.abc import Callable

import torch
import torch.distributed as dist

REDUCE_OPS = {
    "sum": dist.ReduceOp.SUM,
    "prod": dist.ReduceOp.PRODUCT,
    "max": dist.ReduceOp.MAX,
    "min": dist.ReduceOp.MIN,
}


class Work:
    """An in-flight communication: torch work handles plus copies to run once it is done."""

    __slots__ = ("handles", "finish")

    def __init__(self, handle, finish: Callable[[], object] | None = None) -> None:
        self.handles = handle if isinstance(handle, list) else [handle]
        self.finish = finish

    def wait(self) -> None:
        for handle in self.handles:
            handle.wait()
        if self.finish is not None:
            self.finish()


class StreamWork:
    """Work issued on a CUDA stream: waiting makes the current stream wait for it."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = torch.cuda.Event()
        self.event.record()

    def wait(self) -> None:
        torch.cuda.current_stream().wait_event(self.event)


class DoneWork:
    """Work that already completed (CPU, or a local copy)."""

    __slots__ = ()

    def wait(self) -> None:
        pass


DONE = DoneWork()


def local_reduce(kind: str) -> Callable:
    """``fn(x, axis, out=None)`` reducing one axis locally (the split axis of a reduction)."""
    return {"sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin}[kind]


def identity(kind: str, dtype: torch.dtype):
    """The neutral element of a reduction (what a rank without data contributes)."""
    if kind in ("sum", "prod"):
        return 0 if kind == "sum" else 1
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    if dtype.is_floating_point:
        return -float("inf") if kind == "max" else float("inf")
    return info.min if kind == "max" else info.max


def contiguous_out(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(tensor to receive into, view to copy it back to or None)."""
    if t.is_contiguous():
        return t, None
    return torch.empty(t.shape, dtype=t.dtype, device=t.device), t


def received(handle, buf: torch.Tensor, back: torch.Tensor | None) -> Work:
    """The work of a transfer into ``buf``, whose wait copies ``buf`` into ``back`` (the
    non-contiguous output it was staged for, :func:`contiguous_out`) when there is one."""
    return Work(handle, (lambda: back.copy_(buf)) if back is not None else None)
