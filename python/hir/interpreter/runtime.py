"""What compiled steps close over at run time: the device, this rank, the stream pool, the
process group (created on first need) and the optional allocation tracker."""

import os
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from hir.interpreter.backends.process_groups import Communicator, world
from hir.interpreter.kernels import CompileMode, KernelCompileStats

# torch.cuda.set_stream is two Python wrappers around this call; a stream loop switches
# streams twice an iteration. The public API is the fallback should a torch release drop it.
_CUDA_SET_STREAM = getattr(torch._C, "_cuda_setStream", None)
HIGH_PRIORITY = -1  # CUDA stream priority of hir.high_priority_streams (lower is higher; 0 default)


class Runtime:
    """What compiled steps close over: device, rank, streams, the process group."""

    def __init__(
        self,
        device: torch.device,
        num_streams: int,
        backend: str | None,
        compile_kernels: CompileMode,
        track_memory: bool = False,
        high_priority: Sequence[int] = (),
    ) -> None:
        self.device = device
        self.memory: AllocationTracker | None = AllocationTracker() if track_memory else None
        self.backend = backend
        self.compile_kernels = compile_kernels
        self.kernel_compile = KernelCompileStats(compile_kernels)
        # a captured graph launches the decode kernels as programmatic dependents (set when a
        # program plans one: hir.interpreter.decode_kernels.planned)
        self.dependent_launches = False
        self.rank, self.world_size = world()
        self.ranks_per_node: int | None = None  # the run's node layout (None: one node), set at run start
        self.streams = StreamPool(device, num_streams, high_priority)
        # Works no hir.wait consumes: (work, location, op name), completed at entry exit.
        self.pending: list = []
        self.capture_refreshes: list = []  # what a capture's graph runs before each replay (ops/once.py)
        self.debug = bool(os.environ.get("HIR_DEBUG"))
        # When transfers exchange their shape / dtype headers (a TransferChecks, set by the
        # program before it compiles; None: on every run)
        self.transfer_checks: Any = None

    @cached_property
    def comm(self) -> Communicator:
        """The process group, initialized on first need (programs without communication
        never touch torch.distributed)."""
        return Communicator(self.device, self.backend)


# ----- streams ------------------------------------------------------------------------------
# A pool of ``num_streams`` CUDA streams keyed by ``index % num_streams`` (nvFuser's
# Stream(index)), the current stream, and stream-to-stream synchronization that never blocks
# the host. On CPU, streams are tokens and execution is sequential, which keeps the
# program's meaning (every op completes before the next starts).


class CpuStream:
    """A stream token on CPU: identity only (work runs in program order)."""

    __slots__ = ("index",)

    def __init__(self, index: int | None) -> None:
        self.index = index

    def __repr__(self) -> str:
        return "CpuStream(user)" if self.index is None else f"CpuStream({self.index})"

    def wait_stream(self, other: "CpuStream") -> None:
        """Nothing to wait for: the other stream's work has already run."""


class StreamPool:
    """The run's streams on ``device``. Pool streams are created on first use and kept for
    the life of the program, so repeated runs reuse them.

    The current stream is cached: :meth:`enter` reads it from torch when a run starts and
    :meth:`set_current` keeps it, so the per-op path never asks torch for it (each
    ``torch.cuda.current_stream()`` builds a new Stream object). Handlers that switch streams
    themselves restore torch's current stream before they return (``with torch.cuda.stream``)."""

    def __init__(self, device: torch.device, num_streams: int, high_priority: Sequence[int] = ()) -> None:
        if num_streams < 1:
            raise ValueError(f"num_streams must be >= 1, got {num_streams}")
        self.device = device
        self.num_streams = num_streams
        # Pool indices created at high priority (the module's hir.high_priority_streams).
        self.high_priority = frozenset(i % num_streams for i in high_priority)
        self.cuda = device.type == "cuda"
        self._pool: dict[int, Any] = {}
        self._index_of: dict[int, int] = {}  # id() of a pool Stream object -> its pool index (role)
        self._current: Any = None if self.cuda else CpuStream(None)
        self._device_index = (
            (device.index if device.index is not None else torch.cuda.current_device()) if self.cuda else None
        )
        self._caller_key: tuple | None = None  # (stream id, device index, device type)
        self._caller: Any = None
        self._events: dict[int, Any] = {}  # CUDA stream handle -> the event its waiters wait on

    def get(self, index: int) -> Any:
        """Pool stream ``index % num_streams``."""
        key = index % self.num_streams
        stream = self._pool.get(key)
        if stream is None:
            if self.cuda:
                priority = HIGH_PRIORITY if key in self.high_priority else 0
                stream = torch.cuda.Stream(self.device, priority=priority)
            else:
                stream = CpuStream(key)
            self._pool[key] = stream
            if self.cuda:
                self._index_of[id(stream)] = key  # held in _pool: the id is never reused
        return stream

    def role(self, stream: Any) -> int | None:
        """The pool index of ``stream``, None for a stream outside the pool (the caller's:
        whichever stream a run starts on). A run does the same work on a role whatever torch
        stream plays it, so per-op caches keyed by role (peer buffers) serve eager calls on
        any caller stream, a CUDA graph's side-stream warm-up and its capture alike. The pool's
        own Stream objects are recognised by identity, not by CUDA stream: torch hands out its
        streams round-robin from a small pool, so a capture stream may be the very CUDA stream
        of one of ours and still plays the caller's role."""
        if not self.cuda:
            return stream.index
        return self._index_of.get(id(stream))

    def live(self) -> list:
        """The pool streams created so far (distinct objects)."""
        return list(self._pool.values())

    def enter(self) -> Any:
        """The caller's stream at the start of a run (read from torch on CUDA). The caller
        usually runs on the same stream call after call: its Stream object is then reused,
        not rebuilt (``torch.cuda.current_stream`` costs a few microseconds a call)."""
        if self.cuda:
            # _device_index: an int on cuda
            key = torch._C._cuda_getCurrentStream(self._device_index)  # pyright: ignore[reportArgumentType]
            if key != self._caller_key:
                self._caller_key = key
                self._caller = torch.cuda.Stream(stream_id=key[0], device_index=key[1], device_type=key[2])
            self._current = self._caller
        return self._current

    def current(self) -> Any:
        return self._current if self._current is not None else self.enter()

    def set_current(self, stream: Any) -> None:
        if self.cuda:
            if _CUDA_SET_STREAM is not None:
                _CUDA_SET_STREAM(
                    stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type
                )
            else:
                torch.cuda.set_stream(stream)
        self._current = stream

    def synchronize(self, stream: Any) -> None:
        """The current stream waits for ``stream``'s work so far (an event recorded on
        ``stream`` and waited on by the current stream); the host does not block. On CUDA
        each stream has one event, re-recorded per wait: a wait takes the event's state when
        it is issued, so re-recording never changes an earlier wait (and no event is created
        and destroyed per wait, as ``Stream.wait_stream`` does)."""
        if not self.cuda:
            return  # CPU: the other stream's work has already run
        event = self._events.get(stream.cuda_stream)
        if event is None:
            event = self._events[stream.cuda_stream] = torch.cuda.Event()
        event.record(stream)
        event.wait(self._current)  # what Stream.wait_event does, one call fewer


class AllocationTracker:
    """Bytes of the buffers the program allocated and has not deallocated yet, and their
    peak (``Program(..., track_memory=True).memory``). Buffers the program returns stay
    counted; program inputs are not counted. Counting happens in the alloc and dealloc
    steps, so it is exact on CPU and GPU alike. Memory is counted once per storage: a buffer
    bound to another's storage (an all-reduce's output made of its dead input,
    ``result_in_input.py``) adds nothing until the last of them is deallocated."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.allocations = 0
        # storage address -> [buffers counted on it, bytes counted, weak ref]: an entry whose
        # storage died uncounted (a returned buffer the caller dropped) is a new storage
        self._held: dict[int, list] = {}

    def reset(self) -> None:
        self.current = self.peak = self.allocations = 0
        self._held.clear()

    def add(self, t: torch.Tensor) -> None:
        self.allocations += 1
        if t.numel() == 0:
            return
        storage = t.untyped_storage()
        entry = self._held.get(storage.data_ptr())
        if entry is not None and not entry[2].expired():
            entry[0] += 1
            return
        self._held[storage.data_ptr()] = [1, storage.nbytes(), StorageWeakRef(storage)]
        self.current += storage.nbytes()
        if self.current > self.peak:
            self.peak = self.current

    def free(self, t: object) -> None:
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            return
        key = t.untyped_storage().data_ptr()
        entry = self._held.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            del self._held[key]
            self.current -= entry[1]
