"""Shared pytest fixtures: an MLIR context with hir loaded. ``ops/`` is importable from every
test file (its ``comm_worker`` also drives the NCCL runs of test_interpreter_gpu.py), not only
once pytest has happened to collect a test there."""

import os
import shutil
import sys
import tempfile

import pytest

from file_progress import FileProgress
from hir.core import new_context  # before HIR_CACHE_DIR is set below: hir reads it when it caches, not on import

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "ops"))
# Imports cached on disk (hir.compile(module, ...), hir.generate) go to a directory of this
# session: a test imports what the code under test makes, never an entry of an earlier run.
_CACHE = None if "HIR_CACHE_DIR" in os.environ else tempfile.mkdtemp(prefix="hir-test-cache-")
if _CACHE is not None:
    os.environ["HIR_CACHE_DIR"] = _CACHE
# One intra-op thread per process (set before torch's first import; the ranks, CLIs and fork
# servers the tests start inherit it): the tests' tensors are tiny, and several processes
# share the cores (pytest's workers, lit, a test's ranks), where idle OpenMP threads spinning
# for work took a third or more of the CPU time (test_static_cache_prefill.py: 28.3 CPU-s
# with torch's default of a thread per core, 16.7 with one).
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def ctx():
    context = new_context()
    with context:
        yield context


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.slow`` cases (e.g. 8 Gloo ranks on 2 cores) run with HIR_TEST_SLOW=1."""
    if os.environ.get("HIR_TEST_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set HIR_TEST_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(trylast=True)  # after xdist's own, which registers its controller
def pytest_configure(config):
    if config.pluginmanager.hasplugin("dsession"):  # the xdist controller, not a worker
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            config.pluginmanager.register(FileProgress(terminal), "hir-file-progress")


def pytest_unconfigure(config):
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)
