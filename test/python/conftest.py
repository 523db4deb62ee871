"""Shared pytest fixtures: an MLIR context with hir loaded."""

import pytest

from hir.core import new_context


@pytest.fixture
def ctx():
    context = new_context()
    with context:
        yield context
