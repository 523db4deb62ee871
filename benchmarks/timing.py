"""Timing and result checks shared by the benchmark scripts (run from the repository root as
``python benchmarks/<name>.py``, so this directory is on ``sys.path``).

A benchmark row is ``(label, ms or None, rel. error or None, why n/a)``. :class:`Verdicts`
refuses a row whose error is above its tolerance (a wrong answer is not a speed): it
prints ``WRONG (rel. error X)`` where the time would go, remembers the row, and
:meth:`Verdicts.finish` lists the wrong rows and gives the script's exit status (1 when
any). The error is the relative (Frobenius) error against a float32 reference of the same
computation; a row with no error (a communication-only anchor) is not checked.
"""

import math
import time
from collections.abc import Callable

# A bf16 row against its float32 reference (issue 39); f32 rows differ only by the order of
# float32 sums (and kernels compiled by inductor), orders of magnitude below this.
TOLERANCES = {"bf16": 1e-2, "f32": 1e-4}

Row = tuple[str, float | None, float | None, str]  # (label, ms, rel. error, why n/a)


def worst(*errors: float) -> float:
    """The largest error, NaN if any is NaN (Python's ``max`` keeps whichever NaN or number
    comes first)."""
    return math.nan if any(math.isnan(e) for e in errors) else max(errors)


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


class Verdicts:
    """The rows of one script run, each checked against a tolerance as it is formatted."""

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance  # for rows formatted without their own
        self.table = ""  # the table being printed, named in the list of wrong rows
        self.wrong: list[str] = []

    def refusal(self, label: str, error: float | None, tolerance: float | None = None) -> str | None:
        """``WRONG (rel. error X)`` when ``error`` is above the tolerance (NaN is above every
        tolerance), recording ``label`` as wrong; None for a correct or unchecked row."""
        limit = self.tolerance if tolerance is None else tolerance
        if error is None or error <= limit:
            return None
        self.wrong.append(f"{self.table + ': ' if self.table else ''}{label} (rel. error {error:.1e} > {limit:.0e})")
        return f"WRONG (rel. error {error:.1e})"

    def row(self, row: Row, base: float | None, tolerance: float | None = None) -> str:
        """A markdown row ``| label | ms | ratio to base | rel. error |``; a wrong row shows
        WRONG instead of its time and ratio, an n/a row why it did not run."""
        label, ms, error, note = row
        refused = self.refusal(label, error, tolerance)
        if refused:
            time_cell, ratio = refused, ""
        elif ms is None:
            time_cell, ratio = "n/a", note
        else:
            time_cell = f"{ms:.3f}"
            ratio = f"{ms / base:.2f}x" if base and math.isfinite(base) else ""
        return f"| {label} | {time_cell} | {ratio} | {'' if error is None else f'{error:.1e}'} |"

    def print_rows(self, rows: list[Row], base: float | None, show: bool = True) -> None:
        """Check every row; print them when ``show`` (rank 0 of a multi-rank run: the other
        ranks check the same all-reduced errors, so every rank finishes alike)."""
        for row in rows:
            line = self.row(row, base)
            if show:
                print(line, flush=True)

    def finish(self, show: bool = True) -> int:
        """The exit status: 1 after listing the wrong rows (when ``show``), else 0."""
        if self.wrong and show:
            print(f"\nWRONG: {len(self.wrong)} row(s) above their tolerance (no timing printed for them):", flush=True)
            for label in self.wrong:
                print(f"  {label}", flush=True)
        return 1 if self.wrong else 0
