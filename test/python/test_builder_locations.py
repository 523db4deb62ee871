"""Builder ops are located at the Python line that built them: verifier errors at finish()
and run-time errors name this file's line, not loc(unknown)."""

import re

import pytest
import torch

from hir.builder import Builder
from hir.core import HirError
from hir.interpreter import run
from source_marks import marked


def located(tag: str, call: str) -> str:
    """``file:line:col:`` of ``call`` on this file's line marked ``# at: TAG`` (as a regex)."""
    line, text = marked(__file__, tag)
    return re.escape(f"{__file__}:{line}:{text.index(call) + 1}:")


def test_verifier_error_names_the_building_line():
    b = Builder()
    x, y = b.input([4, 8]), b.input([4, 8])
    bad_out = b.alloc([4, 9])
    b.add(x, y, out=bad_out)  # at: add
    error = r" error: 'hir.binary' op output has shape \[4, 9\], expected \[4, 8\]"
    with pytest.raises(HirError, match="^" + located("add", "b.add") + error):
        b.finish()


def test_runtime_error_names_the_building_line():
    b = Builder()
    x = b.input([None, 8])
    row = b.alias_select(x, b.index(5), 0)  # at: select
    b.output(b.add(row, row))
    module = b.finish()
    error = r" error: 'hir.alias_select' index 5 is out of range"
    with pytest.raises(HirError, match="^" + located("select", "b.alias_select") + error):
        run(module, [torch.randn(3, 8)], device="cpu")
    assert "loc(unknown)" not in module.operation.get_asm(enable_debug_info=True)
