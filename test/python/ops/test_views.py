"""The views group on one process: alias_select and alias_chunk are views (writes land in
the parent buffer)."""

import torch

from interp_util import mem, run

T864 = mem([8, 64])


ROW = mem([64], layout="strided<[1], offset: ?>")


def test_interp_alias_select_writes_land_in_parent():
    text = f"""func.func @main(%buf: {T864}, %i: index) -> {ROW} {{
  %row = "hir.alias_select"(%buf, %i) {{axis = 0 : i64}} : ({T864}, index) -> {ROW}
  "hir.binary"(%row, %row, %row) {{kind = "add"}} : ({ROW}, {ROW}, {ROW}) -> ()
  return %row : {ROW}
}}"""
    buf = torch.randn(8, 64)
    before = buf.clone()
    (row,) = run(text, [buf, 3])
    assert row.data_ptr() == buf[3].data_ptr()
    assert torch.equal(buf[3], before[3] * 2) and torch.equal(buf[4], before[4])


def test_interp_alias_chunk_is_a_view_of_equal_parts():
    """Chunk 2 of 4 along axis 0, then chunk 1 of 2 of it along axis 1: writes land in the parent."""
    quarter = mem([2, 64], layout="strided<[64, 1], offset: ?>")
    eighth = mem([2, 32], layout="strided<[64, 1], offset: ?>")
    text = f"""func.func @main(%buf: {T864}, %i: index, %j: index) -> {eighth} {{
  %rows = "hir.alias_chunk"(%buf, %i) {{axis = 0 : i64, chunks = 4 : i64}} : ({T864}, index) -> {quarter}
  %part = "hir.alias_chunk"(%rows, %j) {{axis = 1 : i64, chunks = 2 : i64}} : ({quarter}, index) -> {eighth}
  "hir.binary"(%part, %part, %part) {{kind = "add"}} : ({eighth}, {eighth}, {eighth}) -> ()
  return %part : {eighth}
}}"""
    buf = torch.randn(8, 64)
    expected = buf.clone()
    expected[4:6, 32:] *= 2
    (part,) = run(text, [buf, 2, 1])
    assert part.data_ptr() == buf[4:6, 32:].data_ptr() and part.shape == (2, 32)
    assert torch.equal(buf, expected)
