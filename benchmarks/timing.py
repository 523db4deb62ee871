"""Timing helpers shared by the benchmark scripts (run from the repository root as
``python benchmarks/<name>.py``, so this directory is on ``sys.path``)."""

import time
from typing import Callable


def best(fn: Callable[[], object], repeat: int, number: int, sync: Callable[[], None]) -> float:
    """Fastest of ``repeat`` timings of ``number`` calls, in seconds per call (``sync`` waits
    for the device after each timing)."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        times.append((time.perf_counter() - start) / number)
    return min(times)
