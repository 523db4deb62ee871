"""Programmatic dependent launch of hir's decode kernels in a captured CUDA graph.

On Hopper and newer GPUs a kernel launched as a *programmatic dependent* of the kernel before
it on its stream may start while that one drains (its programs take the multiprocessors the
other's last programs leave) and waits for it (``griddepcontrol.wait``) before it reads what
that kernel wrote; once past its wait it lets the kernel after it start the same way. A
1B Llama's decode step is ~150 kernels of a few microseconds each, so the ramps between them
are a good part of the step.

Two of hir's decode kernels (the split-KV attention with its combine fused, and the one-row
products; mechanism ``kernel-pdl`` of :mod:`hir.interpreter.decode_kernels`; the tiled
products launch plainly) launch that way on NVIDIA GPUs of compute capability 9 or newer
while hir captures a program as a CUDA graph (:class:`hir.interpreter.graph.GraphRunner`),
and only then: a graph's first kernels start after everything before the graph's launch has
finished, so within a replay "the kernel before" is always one of the program's own. Each
waits before anything else it reads or writes, and lets the next start only past that wait,
so a kernel that starts early overlaps only the one before it. The one-row products also load
the first columns of their weight strip before their wait (the loads that take longest, made
while the kernel before drains) where every weight they read lives in the storage of a
program argument that the program never writes, and in no storage of an argument it may write
(:func:`hir.interpreter.graph_checks.written_arguments`), or in a ``hir.once`` result the graph
reads from its cache (a fused projection's concatenated weight: refilled, when its parameters
change, before a replay starts): nothing still running can be writing it (any other buffer the
program makes is read after the wait). Outside a capture (eager runs, other devices) the kernels launch as before.
"""

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch


@dataclass
class DependentLaunches:
    """The decode kernels one capture launched as programmatic dependents."""

    read_only: frozenset[int] = field(default_factory=frozenset)  # storages no kernel of the program writes
    written: frozenset[int] = field(default_factory=frozenset)  # storages of the arguments it may write
    launches: int = 0  # kernels launched as programmatic dependents
    weight_first: int = 0  # of those, one-row products that loaded their weight before their wait


_CAPTURE = threading.local()  # .launches: the capture running on this thread (a CUDA capture is per thread)


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


@contextmanager
def capturing(arguments: Iterable[torch.Tensor], written: Iterable[torch.Tensor]) -> Iterator[DependentLaunches]:
    """While a program is captured on its ``arguments``, of which it may write ``written``:
    the decode kernels it launches are programmatic dependents (module docstring)."""
    written_storages = frozenset(_storage(t) for t in written)
    read_only = frozenset(s for s in map(_storage, arguments) if s not in written_storages)
    launches = DependentLaunches(read_only, written_storages)
    previous = getattr(_CAPTURE, "launches", None)
    _CAPTURE.launches = launches
    try:
        yield launches
    finally:
        _CAPTURE.launches = previous


def filled_before_replays(tensors: Iterable[torch.Tensor]) -> None:
    """Notes ``tensors`` read-only in the capture running on this thread (none: nothing): buffers
    that no kernel of the graph writes, filled (when at all) before a replay starts, as the
    ``hir.once`` results a graph reads from the cache (:mod:`hir.interpreter.ops.once`). One
    sharing the storage of an argument the program may write stays out."""
    launches = getattr(_CAPTURE, "launches", None)
    if launches is not None:
        storages = {_storage(t) for t in tensors} - launches.written
        launches.read_only = launches.read_only | storages


def supported(device: torch.device) -> bool:
    """Whether kernels on ``device`` can launch as programmatic dependents: NVIDIA GPUs of
    compute capability 9 (Hopper) or newer (``griddepcontrol`` is PTX)."""
    return device.type == "cuda" and torch.version.hip is None and torch.cuda.get_device_capability(device)[0] >= 9


def launch(device: torch.device, *weights: torch.Tensor) -> tuple[bool, bool]:
    """How a decode kernel launched now on ``device`` goes: (as a programmatic dependent,
    loading ``weights`` before its wait). Both false outside :func:`capturing` or below
    Hopper (and on ROCm); the second needs ``weights`` all read-only."""
    launches = getattr(_CAPTURE, "launches", None)
    if launches is None or not supported(device):
        return False, False
    first = bool(weights) and all(_storage(w) in launches.read_only for w in weights)
    launches.launches += 1
    launches.weight_first += first
    return True, first
