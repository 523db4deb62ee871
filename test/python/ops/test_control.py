"""The control group on one process: a host hir.for loop."""

import torch

from interp_util import mem, program


def test_interp_host_for_loop_accumulates():
    """nvFuser's ForLoop test: for i in [lb, ub, step): acc += i (a 1-element buffer)."""
    t1 = mem([1], "i64")
    # hir has no op writing a host scalar into a buffer, so the body doubles the
    # accumulator: the result checks the trip count exactly.
    text = f"""func.func @main(%acc: {t1}, %lb: index, %ub: index, %step: index) {{
  "hir.for"(%lb, %ub, %step) ({{
  ^bb0(%i: index):
    "hir.binary"(%acc, %acc, %acc) {{kind = "add"}} : ({t1}, {t1}, {t1}) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""
    prog = program(text)
    for lb, ub, step in ((0, 5, 1), (3, 20, 4), (5, 5, 1), (7, 2, 1)):
        acc = torch.ones(1, dtype=torch.int64)
        prog([acc, lb, ub, step])
        assert acc.item() == 2 ** len(range(lb, ub, step))
