"""The arith group (upstream, host scalars) on one process: folding and run-time arithmetic."""

import pytest

from interp_util import run


@pytest.mark.parametrize(
    "op,a,b,want",
    [
        ("addi", 7, 3, 10),
        ("subi", 7, 3, 4),
        ("muli", 7, 3, 21),
        ("divsi", -7, 2, -3),
        ("divui", 7, 2, 3),
        ("remsi", -7, 2, -1),
        ("remui", 7, 3, 1),
        ("ceildivsi", 7, 2, 4),
        ("minsi", -7, 2, -7),
        ("maxsi", -7, 2, 2),
    ],
)
def test_interp_arith(op, a, b, want):
    text = f"""func.func @main(%a: index, %b: index) -> (index, index) {{
  %r = arith.{op} %a, %b : index
  %c5 = arith.constant 5 : index
  %f = arith.{op} %c5, %c5 : index
  return %r, %f : index, index
}}"""
    r, _ = run(text, [a, b])
    assert r == want


def test_interp_arith_cmpi_select_index_cast():
    text = """func.func @main(%a: index, %b: index) -> (i1, index, i64) {
  %lt = arith.cmpi slt, %a, %b : index
  %m = arith.select %lt, %a, %b : index
  %c = arith.index_cast %m : index to i64
  return %lt, %m, %c : i1, index, i64
}"""
    assert run(text, [3, 9]) == [True, 3, 3]
