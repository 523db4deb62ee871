"""GC stress for the test suite (``bash scripts/check --gc-stress``, or ``HIR_GC_STRESS=1``
with ``MALLOC_PERTURB_`` set): every hir entry point (parsing, a pipeline run and each pass
in it, ``hir.run`` and ``Program``, ``hir.from_torch``, ``hir.from_shard``) ends with a full
``gc.collect()``. Python wrappers of MLIR objects are then released as soon as they can be,
and freed memory is overwritten (``MALLOC_PERTURB_``), so a handle that outlived what it
wraps (an op a pattern erased, a module already freed) fails at the entry point that left
it, not at some later collection. Off, the decorator returns the function unchanged.
"""

import functools
import gc
import os
from collections.abc import Callable
from typing import TypeVar

ENABLED = os.environ.get("HIR_GC_STRESS", "") not in ("", "0")

F = TypeVar("F", bound=Callable)


_frozen = False


def collect() -> None:
    """A full collection, under GC stress only. The first one then freezes what is alive
    (``gc.freeze``: the imports, torch's among them), so later ones scan only what was
    created since, in milliseconds instead of ~0.1 s."""
    global _frozen
    if ENABLED:
        gc.collect()
        if not _frozen:
            gc.freeze()
            _frozen = True


def checkpoint(fn: F) -> F:
    """``fn`` followed by :func:`collect` (also when it raises), under GC stress only."""
    if not ENABLED:
        return fn

    @functools.wraps(fn)
    def collected(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            collect()

    return collected  # type: ignore[return-value]
