"""A call marked ``hir.once`` (``hir-hoist-parameter-work``): its callee reads only
parameters, so its results are computed once per set of argument tensors and reused.

The cache holds the argument tensors of the computation it keeps (so no other tensor can
take their memory while it is kept) with their storage address, shape, strides and version
counter; a call recomputes when any of these differs: a new tensor passed (another
address), or the same one written in place (``copy_``, an optimizer step: torch bumps the
version counter). Writes torch does not count are not seen: ``tensor.data.copy_(...)``,
and inference-mode tensors, which have no version counter (those recompute every call).
Under CUDA graph capture the work is recorded into the graph (a replay recomputes it), so
a replay never reads results computed from older parameters.
"""

from typing import Callable

import torch

from hir.interpreter.plan import Step


def _key(value) -> tuple:
    if not isinstance(value, torch.Tensor):
        return (value,)
    try:
        version = value._version
    except RuntimeError:  # an inference tensor: no version counter, never the same
        version = object()
    return (value.data_ptr(), tuple(value.shape), value.stride(), version)


def once_step(run: Callable[[list], list], args: list[int], outs: list[int], device: torch.device) -> Step:
    """The step of a ``hir.once`` call: ``run`` (the callee's plan) on a cache miss."""
    cache: dict = {"key": None, "args": None, "results": None}
    cuda = device.type == "cuda"

    def call_once(env: list) -> None:
        values = [env[a] for a in args]
        if cuda and torch.cuda.is_current_stream_capturing():
            results = run(values)
        else:
            key = [_key(v) for v in values]
            if key != cache["key"]:
                cache["results"] = None  # release the old results before computing new ones
                cache["results"] = run(values)
                cache["key"], cache["args"] = key, values
            results = cache["results"]
        for slot, value in zip(outs, results):
            env[slot] = value

    return call_once
