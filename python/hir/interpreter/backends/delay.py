"""``HIR_COMM_DELAY_CYCLES=N``: a debug knob that makes a missing wait show as a wrong answer.

With it set (on a GPU), every communication is held back on the stream that issues it by a
``torch.cuda._sleep(N)`` kernel (about N GPU clock cycles: 1e6 is roughly 0.5 ms on an
H100): before each collective is issued, before each copy of a ``hir.shift`` and before each
of its signals. Data then lands late, every time, so a consumer that does not wait for it
reads a stale buffer and a test comparing against a reference fails, instead of passing
under lucky timing. The knob changes no ordering a correct program relies on; it is read
once, when a program is compiled (``Program``), and costs nothing when unset.
"""

import os
from collections.abc import Callable

import torch

from hir.dialect.context import HirError

COMM_DELAY_ENV = "HIR_COMM_DELAY_CYCLES"


def comm_delay(device: torch.device) -> Callable[[], None] | None:
    """The delay to run before a transfer or signal on ``device``'s current stream, or None
    (the knob unset, or not a CUDA device)."""
    text = os.environ.get(COMM_DELAY_ENV, "").strip()
    if not text:
        return None
    try:
        cycles = int(text)
    except ValueError:
        raise HirError(f"error: ${COMM_DELAY_ENV} must be a number of GPU clock cycles, got {text!r}") from None
    if cycles < 0:
        raise HirError(f"error: ${COMM_DELAY_ENV} must be >= 0, got {cycles}")
    if device.type != "cuda" or cycles == 0:
        return None

    def delay() -> None:
        torch.cuda._sleep(cycles)

    return delay
