"""The CLIs as the tests run them in subprocesses: ``hir-run`` and ``hir-import`` through
lit's fork server (test/lit_zygote.py), each call still a process of its own with its argv,
environment, directory, stdin / stdout / stderr and exit status, but forked past torch's
imports (a fresh ``hir-run`` spends ~2.2 CPU-s importing them, ``hir-import`` ~4.6);
test_lit_zygote.py checks the server against the installed scripts. ``HIR_LIT_ZYGOTE=0``:
the installed scripts throughout."""

import functools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import lit_zygote

TOOLS = lit_zygote.TOOLS  # the CLIs the server runs


@functools.cache
def _shims(path: str) -> str:
    """The folder of the server's shims (one server per test process), "" without one."""
    return lit_zygote.start(dict(os.environ, PATH=path, HIR_DEVICE="cpu")) or ""


def tool_environment() -> dict:
    """``os.environ`` for a CLI's process: ``HIR_DEVICE=cpu``; on PATH, the CLIs next to
    this interpreter (the package under test) and before them the server's shims."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    shims = _shims(path)
    return dict(os.environ, HIR_DEVICE="cpu", PATH=shims + os.pathsep + path if shims else path)
