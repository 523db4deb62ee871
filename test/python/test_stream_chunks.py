"""hir-stream-lowering{chunks=S}: S stream iterations of N/S rows over hir.alias_chunk views;
results equal the unlowered program; a static extent S does not divide is an error at the
op, a dynamic one at run time; batched matmul into an inner-axis chunk."""

import pytest
import torch

import hir
from hir.core import HirError
from hir.interpreter import run

PROGRAM = """func.func @main(%x: memref<?x6xf32>, %w: memref<3x6x5xf32>) -> memref<3x?x5xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x6xf32>
  %t = memref.alloc(%n) : memref<?x6xf32>
  "hir.binary"(%x, %x, %t) {kind = "mul", stream_axis = 0 : i64}
      : (memref<?x6xf32>, memref<?x6xf32>, memref<?x6xf32>) -> ()
  %o = memref.alloc(%n) : memref<3x?x5xf32>
  "hir.matmul"(%t, %w, %o) {stream_axis = 1 : i64} : (memref<?x6xf32>, memref<3x6x5xf32>, memref<3x?x5xf32>) -> ()
  return %o : memref<3x?x5xf32>
}"""


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_chunked_lowering_runs_equal(chunks):
    x, w = torch.randn(8, 6), torch.randn(3, 6, 5)
    module = hir.parse(PROGRAM, "chunks.mlir")
    (want,) = run(module, [x, w], device="cpu")
    hir.lower(
        module, f"hir-stream-lowering{{chunks={chunks}}},hir-fuse-loops,hir-insert-deallocations,canonicalize,cse"
    )
    text = str(module)
    assert text.count('"hir.alias_chunk"') >= 2 and '"hir.alias_select"' not in text
    (got,) = run(module, [x, w], device="cpu")
    assert torch.allclose(got, want, atol=1e-5) and torch.allclose(want, (x * x) @ w, atol=1e-5)


def test_dynamic_extent_that_does_not_divide_fails_at_the_chunk():
    module = hir.parse(PROGRAM, "chunks.mlir")
    hir.lower(module, "hir-stream-lowering{chunks=4}")
    with pytest.raises(
        HirError, match=r"chunks.mlir:5:3: error: 'hir.alias_chunk' axis 0 of extent 6 does not divide into 4 chunks"
    ):
        run(module, [torch.randn(6, 6), torch.randn(3, 6, 5)], device="cpu", source_name="chunks.mlir")


def test_static_extent_that_does_not_divide_is_an_error():
    text = (
        PROGRAM.replace("?x6", "6x6")
        .replace("3x?x5", "3x6x5")
        .replace("%n = memref.dim %x, %c0 : memref<6x6xf32>", "")
        .replace("alloc(%n)", "alloc()")
    )
    with pytest.raises(
        HirError,
        match=r"chunks.mlir:5:3: error: 'hir.binary' op has stream axis "
        r"0 of extent 6, which does not split into 4 stream chunks",
    ):
        hir.lower(hir.parse(text, "chunks.mlir"), "hir-stream-lowering{chunks=4}", source_name="chunks.mlir")
    with pytest.raises(HirError, match="chunks must be >= 0"):
        hir.lower(hir.parse(text, "chunks.mlir"), "hir-stream-lowering{chunks=-2}")
