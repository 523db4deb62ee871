"""Shared pytest fixtures: an MLIR context with hir loaded. ``ops/`` is importable from every
test file (its ``comm_worker`` also drives the NCCL runs of test_interpreter_gpu.py), not only
once pytest has happened to collect a test there."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "ops"))

from hir.core import new_context


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
