"""Ctrl-C and termination for the CLIs: ``SIGINT`` ends a command with one line
(``hir-run: interrupted``) and exit status 130, ``SIGTERM`` with status 143 and no line;
either way the command's ``finally`` blocks run first with further signals ignored, so
ranks are stopped and no partial output file is left (outputs are written to temporary
files that only replace the real ones once complete: :mod:`hir.outputs`).

``signals_held`` holds such a signal back over a step that must not be cut in two (the
launcher starting a rank and recording it: a rank started but not recorded would outlive
the launch); the signal takes effect when the step ends.

``pause_point`` is the test hook that makes interrupting reproducible: with
``HIR_TEST_PAUSE=POINT:FOLDER`` a process reaching ``POINT`` writes its pid to
``FOLDER/<pid>`` and waits there for a signal, so a test signals it at a known place
instead of after a guessed delay. No hir import: every layer may use it."""

import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

PAUSE_ENV = "HIR_TEST_PAUSE"
INTERRUPTED_STATUS = 130  # 128 + SIGINT, what shells report for Ctrl-C
_held: list[list[int]] = []  # one list per open signals_held block, innermost last


def _on_signal(signum: int, frame: object) -> None:
    # Cleanup (stopping ranks, removing temporary files) must not be cut short by a second
    # Ctrl-C: from here on both signals are ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _held:
        _held[-1].append(signum)
        return
    _raise(signum)


def _raise(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold a SIGINT or SIGTERM that arrives inside the block (under :func:`cli_main`'s
    handlers) until the block ends, then act on it as :func:`cli_main` would. Off the main
    thread it holds nothing: signal handlers run on the main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    _held.append(held)
    try:
        yield
    finally:
        _held.pop()
        if held:
            _raise(held[0])


def cli_main(prog: str) -> Callable:
    """Decorate a CLI's ``main(argv)``: SIGINT prints ``<prog>: interrupted`` and returns
    130, SIGTERM exits 143; the previous handlers come back when ``main`` returns (it also
    runs in-process, in tests)."""

    def wrap(main: Callable[[Sequence[str] | None], int]) -> Callable[[Sequence[str] | None], int]:
        @functools.wraps(main)
        def run(argv: Sequence[str] | None = None) -> int:
            if threading.current_thread() is not threading.main_thread():
                return main(argv)  # signal handlers belong to the main thread
            previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                return main(argv)
            except KeyboardInterrupt:
                print(f"{prog}: interrupted", file=sys.stderr)
                return INTERRUPTED_STATUS
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)

        return run

    return wrap


def pause_point(point: str) -> None:
    """The test hook (see the module docstring); nothing unless ``$HIR_TEST_PAUSE`` names
    ``point``."""
    wanted, _, folder = os.environ.get(PAUSE_ENV, "").partition(":")
    if wanted != point or not folder:
        return
    with open(os.path.join(folder, str(os.getpid())), "w") as f:
        f.write(point)
    while True:  # a signal handler raises out of the sleep
        time.sleep(0.05)
