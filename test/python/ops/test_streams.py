"""The streams group on one process: pool streams by index and a stream loop (seed 004)."""

import torch

from interp_util import mem, program, same

T864 = mem([8, 64])
ROW = mem([64], layout="strided<[1], offset: ?>")


def test_interp_stream_loop_accumulating_rows():
    """The stream-lowered shape: each iteration on pool stream i writes row i of the output."""
    text = f"""func.func @main(%a: {T864}, %b: {T864}, %out: {T864}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.for"(%c0, %c8, %c1) ({{
  ^bb0(%i: index):
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    %ra = "hir.alias_select"(%a, %i) {{axis = 0 : i64}} : ({T864}, index) -> {ROW}
    %rb = "hir.alias_select"(%b, %i) {{axis = 0 : i64}} : ({T864}, index) -> {ROW}
    %ro = "hir.alias_select"(%out, %i) {{axis = 0 : i64}} : ({T864}, index) -> {ROW}
    "hir.binary"(%ra, %rb, %ro) {{kind = "mul"}} : ({ROW}, {ROW}, {ROW}) -> ()
    "hir.set_current_stream"(%user) : (!hir.stream) -> ()
    "hir.synchronize"(%s) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""
    a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.zeros(8, 64)
    prog = program(text, num_streams=3)
    prog([a, b, out])
    assert same(out, a * b)
    assert len(prog.streams.live()) == 3  # indices 0..7 map onto the 3 pool streams


def test_interp_streams_by_index_share_pool_streams():
    """nvFuser HirStream: indices 2, 2, 3 give two distinct pool streams."""
    text = """func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %s0 = "hir.get_stream"(%c2) : (index) -> !hir.stream
  "hir.set_current_stream"(%s0) : (!hir.stream) -> ()
  %s1 = "hir.get_stream"(%c2) : (index) -> !hir.stream
  "hir.set_current_stream"(%s1) : (!hir.stream) -> ()
  %s2 = "hir.get_stream"(%c3) : (index) -> !hir.stream
  "hir.set_current_stream"(%s2) : (!hir.stream) -> ()
  return
}"""
    prog = program(text)
    caller = prog.streams.current()
    prog([])
    assert [s.index for s in prog.streams.live()] == [2, 3]
    assert prog.streams.current() is caller  # the caller's stream is restored
    assert prog.streams.get(2) is prog.streams.get(6)  # 6 % 4 == 2
