"""What long work is doing, on a terminal: one stderr line per step (``hir-import: exporting
Net (torch.export) [00:03]``), with its time, drawn by tqdm. Off unless a CLI turned it on
(``--progress``, or stderr is a terminal): pipes, logs and the Python API stay quiet.

    with progress.task("exporting Net (torch.export)"):
        ...                                  # the line shows the elapsed time meanwhile
    progress.note("compiled region @main:3 in 4.2 s")

No hir import and no tqdm import until a line is drawn: every layer may report."""

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_config = {"enabled": False, "prog": "hir"}
REFRESH_S = 0.5  # how often a running step's elapsed time is redrawn


def configure(prog: str, requested: bool | None) -> None:
    """Turn progress on for this process: ``requested`` (``--progress`` / ``--no-progress``),
    else when stderr is a terminal."""
    _config["prog"] = prog
    _config["enabled"] = requested if requested is not None else sys.stderr.isatty()


def enabled() -> bool:
    return bool(_config["enabled"])


def note(text: str) -> None:
    """A finished step's line (kept above any running step's line)."""
    if enabled():
        from tqdm import tqdm  # tqdm loads only when a bar is shown

        tqdm.write(f"{_config['prog']}: {text}", file=sys.stderr)


def _stderr_size() -> dict:
    """The terminal's size for tqdm; one that reports none (0 x 0: a bare pty) would get
    nothing drawn, so it gets 100 x 24."""
    try:
        columns, lines = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        columns, lines = 0, 0
    return {"ncols": columns or 100, "nrows": lines or 24}


@contextmanager
def task(what: str, status: Callable[[], str] | None = None) -> Iterator[None]:
    """A running step: ``<prog>: <what> [elapsed]`` redrawn while it runs (with
    ``status()`` appended, e.g. how many ranks are up), then ``<what>: done in N s``. Not on
    a terminal (``--progress`` into a log): a line when it starts and one when it ends."""
    if not enabled():
        yield
        return
    from tqdm import tqdm  # tqdm loads only when a bar is shown

    prog = _config["prog"]
    if not sys.stderr.isatty():
        tqdm.write(f"{prog}: {what} ...", file=sys.stderr)
        start = time.perf_counter()
        yield
        tqdm.write(f"{prog}: {what}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        return
    bar = tqdm(desc=f"{prog}: {what}", bar_format="{desc} [{elapsed}]", file=sys.stderr, leave=False, **_stderr_size())
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(REFRESH_S):
            if status is not None:
                bar.set_description_str(f"{prog}: {what} ({status()})", refresh=False)
            bar.refresh()

    start = time.perf_counter()
    thread = threading.Thread(target=refresh, name="hir-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()
    tqdm.write(f"{prog}: {what}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
