"""A call marked ``hir.once`` (``hir-hoist-parameter-work``): its callee reads only
parameters, so its results are computed once per set of argument tensors and reused.

The cache holds the argument tensors of the computation it keeps (so no other tensor can
take their memory while it is kept) with their storage address, shape, strides and version
counter; a call recomputes when any of these differs: a new tensor passed (another
address), or the same one written in place (``copy_``, an optimizer step: torch bumps the
version counter). Writes torch does not count are not seen: ``tensor.data.copy_(...)``,
and inference-mode tensors, which have no version counter (those recompute every call).

Under CUDA graph capture, cached results computed from the very tensors the capture runs on
are what the graph reads (their buffers, not a copy): a replay does not redo the work (a
fused projection's concatenated weights would otherwise be copied on every decode step).
Before every replay of such a graph (the refreshes its capture collected in
``Runtime.capture_refreshes``) the arguments' version counters are compared with the cached
ones; when a parameter was written in place (or the cache holds another set's results), the
work runs again, eagerly, into those same buffers, so the graph reads the current results.
Results it could not take from the cache (a capture on other tensors, e.g. a graph's static
input copies) are recorded into the graph, which then recomputes them on every replay.
"""

from collections.abc import Callable

import torch

from hir.interpreter import dependent_launch
from hir.interpreter.plan import Step


def _key(value) -> tuple:
    if not isinstance(value, torch.Tensor):
        return (value,)
    return (value.data_ptr(), tuple(value.shape), value.stride(), _version(value))


def _version(value: torch.Tensor):
    try:
        return value._version
    except RuntimeError:  # an inference tensor: no version counter, never the same
        return object()


def once_step(run: Callable[[list], list], args: list[int], outs: list[int], runtime) -> Step:
    """The step of a ``hir.once`` call: ``run`` (the callee's plan) on a cache miss."""
    cache: dict = {"key": None, "args": None, "results": None, "versions": None, "pinned": False}
    cuda = runtime.device.type == "cuda"

    def compute(values: list, key: list) -> None:
        if cache["pinned"]:  # graphs read these buffers: refill them in place
            for kept, new in zip(cache["results"], run(values)):
                kept.copy_(new)
        else:
            cache["results"] = None  # release the old results before computing new ones
            cache["results"] = run(values)
        cache["key"], cache["args"] = key, values
        cache["versions"] = [_version(v) for v in values if isinstance(v, torch.Tensor)]

    def refresher(captured: list) -> Callable[[], None]:
        """Before a replay of a graph captured on ``captured``: redo the work if the cache
        holds another set's results, or one of these tensors was written since."""
        tensors = [v for v in captured if isinstance(v, torch.Tensor)]

        def refresh() -> None:
            if cache["args"] is not captured or [_version(v) for v in tensors] != cache["versions"]:
                compute(captured, [_key(v) for v in captured])

        return refresh

    def call_once(env: list) -> None:
        values = [env[a] for a in args]
        key = [_key(v) for v in values]
        if cuda and torch.cuda.is_current_stream_capturing():
            if key != cache["key"]:
                results = run(values)  # recorded: every replay recomputes it
            else:
                results = cache["results"]
                cache["pinned"] = True
                runtime.capture_refreshes.append(refresher(cache["args"]))
                # refilled only before a replay: kernels may read them before their wait
                dependent_launch.filled_before_replays(r for r in results if isinstance(r, torch.Tensor))
        else:
            if key != cache["key"]:
                compute(values, key)
            results = cache["results"]
        for slot, value in zip(outs, results):
            env[slot] = value

    return call_once
