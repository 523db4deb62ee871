"""CUDA graphs for repeated runs of a compiled program: ``Program(module, graph="auto")``
(the default), ``graph=True`` (``hir-run --cuda-graph``) and ``graph=False``.

A graph is recorded per *input signature*: the shape, strides and dtype of every tensor
input and the value of every host scalar (index / integer / float) argument. Host values
in hir (loop bounds, stream indices, allocation sizes) come only from constants, shapes and
host scalars -- no op reads device data back to the host -- so a signature fixes every host
decision the program makes and a replay does exactly what an eager run would. A new
signature (new shapes, another scalar value) records another graph; at most
``graph_cache_size`` graphs are kept, the least recently used is dropped first.

``graph="auto"``: the first call with a signature runs eagerly (it also warms up lazy
initialisations: cuBLAS handles, NCCL communicators, pool streams, symmetric buffers);
the second call with it captures, and later ones replay. ``graph=True`` captures on the
first call (after a warm-up run on a side stream, torch's recipe) and raises where auto
would fall back.

Compiled kernel segments (``compile_kernels``, :mod:`hir.interpreter.kernels`) are captured
like any other kernels: they compile at the first call of a signature, which runs eagerly.
In a capture, the one-row products and the split-KV attention a program planned launch as
programmatic dependents of the kernel before them (``kernel-pdl``, Hopper or newer:
:mod:`hir.interpreter.dependent_launch`); eager runs launch them plainly. Their dependent
variants are compiled at the capture (Triton loads them then), not at the eager first call.

Runs eagerly, never captured (``Program.graph_state.reason`` says which, and a debug log
line on the ``hir.graph`` logger):
- the program runs on a CPU device (nothing to capture);
- it has Gloo collectives (host-side transfers; NCCL and copy-engine P2P are captured);
- ``track_memory=True`` (the byte counts are kept by the alloc/dealloc steps, which a replay
  does not run);
- a call whose tensor inputs share memory (a static copy per input would break the aliasing),
  unless a graph bound to those very buffers applies; that call only;
- after a capture failed (a warning on the ``hir.graph`` logger; every later call is eager).
In a multi-rank run every rank must take the same decisions: they do when the ranks see the
same signatures (SPMD), but a capture failing on one rank only leaves the others waiting in
their collectives.

Graphs bound to the caller's buffers (``graph="auto"`` only): when two calls of a signature
in a row pass the very same buffers (same addresses, shapes, strides and dtypes: the usual
loop ``for step: program([x, w, out])``), the graph is captured on those buffers themselves,
and every later call with them replays it with no copies at all: it reads and writes the
caller's memory exactly as an eager run does (inputs that share memory included). Calls with
other buffers use a graph on static buffers (below), captured once for the signature. Bound
graphs and static graphs are each an LRU cache of ``graph_cache_size``.

Calls of a captured signature copy the tensor inputs into the graph's static input buffers
(device to device, skipped when the caller passes the static buffer itself), replay, copy
back the inputs the program may write (preallocated outputs; :func:`~hir.interpreter.graph_checks.written_arguments`
follows calls into their callees, so parameters that kernel segments and ``hir.once`` work
only read are never copied back, and their version counters keep ``hir.once``'s cache
valid), and return the outputs:
- an output that is (a view of) an input is returned as (the same view of) the caller's
  tensor, as in an eager run;
- other outputs are copied out of the graph's buffers (device to device) by default, so a
  later call never overwrites what an earlier one returned; with ``static_outputs=True`` they
  are the graph's own buffers, valid until the next call of the program (no copy: the
  fastest, clone what you keep). Copied outputs that were views of one another in the graph
  come back as separate copies (same values, no longer aliased).
All copies and the replay are ordered on the caller's current stream.
"""

import gc
import logging
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from hir.dialect.context import HirError
from hir.interpreter import dependent_launch

log = logging.getLogger("hir.graph")
GraphMode = bool | str  # True, False or "auto"


def signature(values: list) -> tuple:
    """The key of a call: what a captured graph has fixed about its inputs."""
    return tuple((tuple(v.shape), v.stride(), v.dtype) if isinstance(v, torch.Tensor) else v for v in values)


def bound_signature(values: list) -> tuple:
    """The key of a graph bound to the caller's buffers: the signature plus every tensor's
    address (a bound graph reads and writes exactly that memory)."""
    return tuple((v.data_ptr(), v.size(), v.stride(), v.dtype) if isinstance(v, torch.Tensor) else v for v in values)


def share_memory(values: list) -> bool:
    storages = [v.untyped_storage().data_ptr() for v in values if isinstance(v, torch.Tensor) and v.numel()]
    return len(set(storages)) != len(storages)


@dataclass
class GraphState:
    """What ``Program(graph=...)`` does with CUDA graphs (``Program.graph_state``)."""

    mode: GraphMode  # the option: True, False or "auto"
    reason: str | None = None  # why every call runs eagerly (None: graphs are used)
    # the last call: "eager", "eager (first call of this signature)", "capture", "replay", "replay (bound)", ...
    last: str = "none"
    graphs: int = 0  # graphs cached now (bound ones included)
    bound: int = 0  # of which bound to the caller's buffers
    captures: int = 0
    replays: int = 0
    signatures: list = field(default_factory=list)  # cached signatures, least recently used first

    @property
    def active(self) -> bool:
        return self.mode is not False and self.reason is None


@dataclass
class CapturedGraph:
    graph: Any  # torch.cuda.CUDAGraph
    static_inputs: list
    outputs: list  # the graph's output tensors (static buffers)
    output_sources: list  # per output: (input index, view spec) when it lives in a static input, else None
    bound: bool = False  # captured on the caller's buffers: no input copies, nothing to copy back
    refreshes: tuple = ()  # run before each replay (hir.once results the graph reads, ops/once.py)


class GraphRunner:
    """Runs ``execute(values) -> outputs`` eagerly or through cached CUDA graphs (see the
    module docstring for the policy)."""

    def __init__(
        self,
        execute: Callable[[list], list],
        device: torch.device,
        pool: Any,
        state: GraphState,
        written: frozenset[int] = frozenset(),
        static_outputs: bool = False,
        cache_size: int = 4,
        refreshes: list | None = None,
        dependent_launches: Callable[[], bool] = lambda: False,
    ) -> None:
        self.execute = execute
        # whether a capture launches the decode kernels as programmatic dependents (decided
        # when the program is planned, so asked at the capture)
        self.dependent_launches = dependent_launches
        self.launched: dependent_launch.DependentLaunches | None = None  # the last capture's
        # Filled by a capture with what its graph must run before each replay (hir.once
        # results it reads from the cache, ops/once.py); kept on the graph's entry.
        self.refreshes = refreshes if refreshes is not None else []
        self.device = device
        self.pool = pool
        self.state = state
        self.written = written
        self.static_outputs = static_outputs
        self.cache_size = cache_size
        self._graphs: OrderedDict[tuple, CapturedGraph] = OrderedDict()
        self._bound: OrderedDict[tuple, CapturedGraph] = OrderedDict()  # by bound_signature
        self._seen: OrderedDict[tuple, tuple] = (
            OrderedDict()
        )  # auto: signature -> bound_signature of its last unbound call

    @property
    def static_inputs(self) -> list:
        """The static input buffers of the most recently used static graph (benchmarks pass
        them back to skip the input copies)."""
        return next(reversed(self._graphs.values())).static_inputs if self._graphs else []

    def __call__(self, values: list) -> list:
        state = self.state
        if state.reason is not None:
            state.last = "eager"
            return self.execute(values)
        if state.mode == "auto":
            at = bound_signature(values)
            entry = self._bound.get(at)
            if entry is not None:  # the fast path: no copies, no other checks
                self._bound.move_to_end(at)
                state.last = "replay (bound)"
                state.replays += 1
                self._replay_graph(entry)
                return self._outputs(entry, values)
            key = signature(values)
            previous = self._seen.pop(key, None)
            self._seen[key] = at
            if previous is None:
                if len(self._seen) > 4 * self.cache_size:
                    self._seen.popitem(last=False)
                return self._eager(values, "eager (first call of this signature)")
            if previous == at:  # the same buffers twice in a row: bind a graph to them
                entry = self._capture(at, values, bound=True)
                if entry is None:
                    return self._eager(values, "eager (capture failed)")
                state.replays += 1
                self._replay_graph(entry)
                return self._outputs(entry, values)
        else:
            key = signature(values)
        if share_memory(values):
            return self._eager(values, "eager (tensor inputs share memory)")
        entry = self._graphs.get(key)
        if entry is not None:
            self._graphs.move_to_end(key)
            state.last = "replay"
        else:
            entry = self._capture(key, values)
            if entry is None:
                return self._eager(values, "eager (capture failed)")
        state.replays += 1
        return self._replay(entry, values)

    def bound_replay(self, values: list) -> Callable[[], list] | None:
        """The replay of the graph captured on exactly ``values``' buffers (``graph="auto"``'s
        bound graph), as one call with no signature lookup: for a caller that passes the same
        buffers every time and changes only their contents (a compiled program's state and
        its staged inputs, :mod:`hir.frontend.compiled`). None when no such graph is cached.
        The replay holds its graph even after the cache drops it."""
        entry = self._bound.get(bound_signature(values)) if self.state.reason is None else None
        if entry is None:
            return None
        state = self.state

        def replay() -> list:
            state.last = "replay (bound)"
            state.replays += 1
            self._replay_graph(entry)
            return self._outputs(entry, values)

        return replay

    def _replay_graph(self, entry: CapturedGraph) -> None:
        for refresh in entry.refreshes:
            refresh()
        entry.graph.replay()

    def _eager(self, values: list, what: str) -> list:
        self.state.last = what
        log.debug("graph %s: %s", self.state.mode, what)
        return self.execute(values)

    def _replay(self, entry: CapturedGraph, values: list) -> list:
        for static, value in zip(entry.static_inputs, values):
            if isinstance(static, torch.Tensor) and static.data_ptr() != value.data_ptr():
                static.copy_(value)
        self._replay_graph(entry)
        for index in self.written:
            static, value = entry.static_inputs[index], values[index]
            if isinstance(static, torch.Tensor) and static.data_ptr() != value.data_ptr():
                value.copy_(static)
        return self._outputs(entry, values)

    def _outputs(self, entry: CapturedGraph, values: list) -> list:
        """The call's results after a replay: outputs living in inputs as (views of) the
        caller's tensors, the others copied out (or the graph's buffers: static_outputs)."""
        results, copies = [], {}
        for out, source in zip(entry.outputs, entry.output_sources):
            if source is not None:
                index, view = source
                value = values[index]
                whole = view == (tuple(value.size()), value.stride(), 0)
                results.append(value if whole else value.as_strided(view[0], view[1], value.storage_offset() + view[2]))
            elif isinstance(out, torch.Tensor) and not self.static_outputs:
                if id(out) not in copies:  # the same buffer returned twice stays one tensor
                    copies[id(out)] = out.clone()
                results.append(copies[id(out)])
            else:
                results.append(out)
        return results

    def _execute_captured(self, values: list) -> list:
        """``execute(values)`` under capture, the decode kernels launched as programmatic
        dependents where the program planned them so (:mod:`hir.interpreter.dependent_launch`)."""
        self.launched = None
        if not self.dependent_launches():
            return self.execute(values)
        tensors = [(i, v) for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
        written = [v for i, v in tensors if i in self.written]
        with dependent_launch.capturing([v for _, v in tensors], written) as launched:
            outputs = self.execute(values)
        self.launched = launched
        return outputs

    def _capture(self, key: tuple, values: list, bound: bool = False) -> CapturedGraph | None:
        """Capture the program on static copies of ``values``, or on ``values`` themselves
        when ``bound`` (auto's second call with the first call's buffers: that eager call
        was the warm-up, and a capture runs nothing, so the caller's data is untouched)."""
        state, dev = self.state, self.device
        static_inputs = list(values) if bound else [_static_copy(v) for v in values]
        caller = torch.cuda.current_stream(dev)
        streams = [self.pool.get(i) for i in range(self.pool.num_streams)]
        if state.mode is True:  # no eager run of this signature yet: warm up off the caller's stream
            side = torch.cuda.Stream(dev)
            side.wait_stream(caller)
            with torch.cuda.stream(side):
                self.execute(static_inputs)
            caller.wait_stream(side)
        torch.cuda.synchronize(dev)
        # As inductor's CUDA graph trees do: the cuBLAS workspaces cached for eager streams
        # (the first call's, the warm-up's) are freed, so the capture allocates its own in the
        # graph's pool, where a later clear (inductor's) cannot free memory the graph uses.
        torch._C._cuda_clearCublasWorkspaces()
        graph = torch.cuda.CUDAGraph()
        self.refreshes.clear()
        try:
            with _no_collection(), torch.cuda.graph(graph):
                capture = torch.cuda.current_stream(dev)
                for stream in streams:  # fork every pool stream from the capture stream
                    stream.wait_stream(capture)
                outputs = self._execute_captured(static_inputs)
                for stream in streams:  # and join it back
                    capture.wait_stream(stream)
        except (HirError, RuntimeError) as err:
            if state.mode is True:
                if isinstance(err, HirError):
                    raise HirError(
                        f"{err.message}\nerror: graph=True: the program could not be captured as a CUDA graph"
                    ) from None
                raise HirError(f"error: graph=True: CUDA graph capture failed: {err}") from None
            state.reason = f"capture failed: {err}"
            log.warning("graph='auto': CUDA graph capture failed, running eagerly from now on: %s", err)
            return None
        sources = [_source(out, static_inputs) for out in outputs]
        if bound:  # hold no reference to the caller's tensors
            static_inputs = [None if isinstance(v, torch.Tensor) else v for v in static_inputs]
        entry = CapturedGraph(graph, static_inputs, list(outputs), sources, bound, tuple(self.refreshes))
        self.refreshes.clear()
        cache = self._bound if bound else self._graphs
        cache[key] = entry
        if len(cache) > self.cache_size:
            dropped, _ = cache.popitem(last=False)
            log.debug("graph %s: dropped the graph of %s (cache of %d)", state.mode, dropped, self.cache_size)
        state.captures += 1
        state.last = "capture (bound)" if bound else "capture"
        log.debug("graph %s: captured %s", state.mode, key)
        return entry

    def refresh(self) -> GraphState:
        self.state.graphs = len(self._graphs) + len(self._bound)
        self.state.bound = len(self._bound)
        self.state.signatures = list(self._graphs) + [_unbound(at) for at in self._bound]
        return self.state


def _unbound(at: tuple) -> tuple:
    """The signature of a bound_signature (addresses dropped)."""
    return tuple((tuple(v[1]), v[2], v[3]) if isinstance(v, tuple) else v for v in at)


@contextmanager
def _no_collection():
    """No cyclic GC in a capture: it may free a symmetric buffer, which aborts a capture."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _static_copy(value: Any) -> Any:
    """A buffer of the same size, strides and contents (scalars as they are)."""
    if not isinstance(value, torch.Tensor):
        return value
    static = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
    return static.copy_(value)


def _source(out: Any, static_inputs: list) -> tuple | None:
    """(input index, (size, stride, offset)) when ``out`` lives in a static input buffer."""
    if not isinstance(out, torch.Tensor):
        return None
    storage = out.untyped_storage().data_ptr()
    for index, static in enumerate(static_inputs):
        if isinstance(static, torch.Tensor) and static.untyped_storage().data_ptr() == storage:
            return index, (tuple(out.size()), out.stride(), out.storage_offset() - static.storage_offset())
    return None
