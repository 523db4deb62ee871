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


def test_interp_stream_for_runs_as_its_expansion():
    """hir.stream_for runs each iteration on its pool stream, the slot buffer read at the
    stream slot (``i mod slots``); hir-expand-stream-loops' form gives the same result."""
    import hir

    text = """func.func @main(%in: memref<8x4xf32>, %out: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %tmp = memref.alloc() : memref<2x4xf32>
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %user, %c2) ({
  ^bb0(%i: index, %slot: index):
    %a = "hir.alias_select"(%in, %i) {axis = 0 : i64}
        : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    %t = "hir.alias_select"(%tmp, %slot) {axis = 0 : i64}
        : (memref<2x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.binary"(%a, %a, %t) {kind = "add"}
        : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>,
        memref<4xf32, strided<[1], offset: ?>>) -> ()
    %o = "hir.alias_select"(%out, %i) {axis = 0 : i64}
        : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.binary"(%t, %a, %o) {kind = "add"}
        : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>,
        memref<4xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()
  memref.dealloc %tmp : memref<2x4xf32>
  return
}"""
    x = torch.randn(8, 4)
    results = []
    for pipeline in (None, "hir-expand-stream-loops"):
        module = hir.parse(text)
        if pipeline:
            hir.lower(module, pipeline)
            assert '"hir.stream_for"' not in str(module) and "arith.remui" in str(module)
        out = torch.zeros(8, 4)
        hir.run(module, [x, out], device="cpu")
        results.append(out)
    assert torch.equal(results[0], 3 * x) and torch.equal(results[1], 3 * x)
