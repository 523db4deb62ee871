"""Builder ops are located at the Python line that built them: verifier errors at finish()
and run-time errors name this file's line, not loc(unknown)."""

import sys

import pytest
import torch

from hir.builder import Builder
from hir.core import HirError
from hir.interpreter import run


def test_verifier_error_names_the_building_line():
    b = Builder()
    x, y = b.input([4, 8]), b.input([4, 8])
    bad_out = b.alloc([4, 9])
    line = sys._getframe().f_lineno + 1
    b.add(x, y, out=bad_out)
    with pytest.raises(HirError, match=rf"^{__file__}:{line}:5: error: 'hir.binary' op output has shape \[4, 9\], expected \[4, 8\]"):
        b.finish()


def test_runtime_error_names_the_building_line():
    b = Builder()
    x = b.input([None, 8])
    line = sys._getframe().f_lineno + 1
    row = b.alias_select(x, b.index(5), 0)
    b.output(b.add(row, row))
    module = b.finish()
    with pytest.raises(HirError, match=rf"^{__file__}:{line}:11: error: 'hir.alias_select' index 5 is out of range"):
        run(module, [torch.randn(3, 8)], device="cpu")
    assert "loc(unknown)" not in module.operation.get_asm(enable_debug_info=True)
