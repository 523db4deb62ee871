"""The memory group (upstream memref) on one process: alloc with dynamic sizes, dim, copy,
dealloc."""

import torch

from interp_util import mem, run, same


def test_interp_memref_alloc_dynamic_dim_copy_dealloc():
    td = mem([None, 4])
    text = f"""func.func @main(%x: {td}) -> ({td}, index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : {td}
  %t = memref.alloc(%n) : {td}
  memref.copy %x, %t : {td} to {td}
  %u = memref.alloc(%n) : {td}
  "hir.binary"(%t, %t, %u) {{kind = "add"}} : ({td}, {td}, {td}) -> ()
  memref.dealloc %t : {td}
  %n2 = arith.muli %n, %c1 : index
  return %u, %n2 : {td}, index
}}"""
    x = torch.randn(5, 4)
    u, n = run(text, [x])
    assert same(u, 2 * x) and n == 5
