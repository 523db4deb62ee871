"""scf.if / scf.for / scf.yield and linalg.fill in the interpreter; i1 arguments take Python
bools; errors are reported at the op."""

import pytest
import torch

import hir
from hir.core import HirError
from interp_util import run

SELECT = """func.func @main(%flag: i1, %a: memref<4xf32>, %b: memref<4xf32>) -> memref<4xf32> {
  %r = scf.if %flag -> (memref<4xf32>) {
    scf.yield %a : memref<4xf32>
  } else {
    %t = memref.alloc() : memref<4xf32>
    "hir.binary"(%a, %b, %t) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    scf.yield %t : memref<4xf32>
  }
  return %r : memref<4xf32>
}"""


@pytest.mark.parametrize("flag", [True, False, 1, 0, torch.tensor(True)])
def test_if_takes_a_python_bool(flag):
    a, b = torch.randn(4), torch.randn(4)
    (r,) = run(SELECT, [flag, a, b])
    assert torch.equal(r, a if bool(flag) else a + b)


@pytest.mark.parametrize("bad", [2, 0.5, "yes", torch.ones(2)])
def test_i1_argument_rejects_non_bools(bad):
    with pytest.raises(HirError, match=r"argument #0 \(i1\) expects a bool"):
        run(SELECT, [bad, torch.randn(4), torch.randn(4)])


def test_for_with_iter_args_accumulates_in_a_buffer():
    text = """func.func @main(%n: index, %x: memref<3xf32>) -> (memref<3xf32>, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = memref.alloc() : memref<3xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<3xf32>)
  %count = scf.for %i = %c0 to %n step %c1 iter_args(%k = %c0) -> (index) {
    "hir.binary"(%acc, %x, %acc) {kind = "add"} : (memref<3xf32>, memref<3xf32>, memref<3xf32>) -> ()
    %k1 = arith.addi %k, %c1 : index
    scf.yield %k1 : index
  }
  return %acc, %count : memref<3xf32>, index
}"""
    x = torch.randn(3)
    acc, count = run(text, [5, x])
    assert count == 5 and torch.allclose(acc, 5 * x)
    acc, count = run(text, [0, x])
    assert count == 0 and torch.equal(acc, torch.zeros(3))


def test_fill_int_buffer_and_errors():
    text = """func.func @main(%v: i64, %s: index) -> memref<2xi32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %b = memref.alloc() : memref<2xi32>
  scf.for %i = %c0 to %c4 step %s {
    %vi = arith.trunci %v : i64 to i32
    linalg.fill ins(%vi : i32) outs(%b : memref<2xi32>)
  }
  return %b : memref<2xi32>
}"""
    (b,) = run(text, [7, 1])
    assert b.tolist() == [7, 7]
    with pytest.raises(HirError, match=r"test.mlir:5:3: error: 'scf.for' step must be positive, got 0"):
        run(text, [7, 0])


def test_scf_if_in_lowered_programs_is_left_alone():
    """hir-lower frees buffers used inside branches after the scf.if; results agree."""
    text = SELECT.replace(
        "return %r",
        """%o = memref.alloc() : memref<4xf32>
  "hir.set"(%r, %o) {stream_axis = 0 : i64} : (memref<4xf32>, memref<4xf32>) -> ()
  return %o""",
    )
    a, b = torch.randn(4), torch.randn(4)
    module = hir.parse(text, "test.mlir")
    want = hir.interpreter.run(module, [False, a, b], device="cpu")
    hir.lower(module, "hir-lower")
    assert '"hir.for"' in str(module)
    got = hir.interpreter.run(module, [False, a, b], device="cpu")
    assert torch.equal(want[0], got[0])


def test_builder_if_fill_and_scalar_inputs():
    from hir.builder import Builder
    from hir.interpreter import run as run_module

    b = Builder()
    x = b.input([4])
    flag = b.scalar("i1")
    y, counts = b.alloc([4]), b.alloc([2], "i32")
    b.fill(counts, 7)
    with b.if_(flag) as branch:
        b.set(x, out=y)
        with branch.otherwise():
            b.fill(y, 2.5)
    b.output(y)
    b.output(counts)
    module = b.finish()
    assert "scf.if" in str(module) and "linalg.fill" in str(module)
    X = torch.randn(4)
    y_true, c = run_module(module, [X, True], device="cpu")
    y_false, _ = run_module(module, [X, False], device="cpu")
    assert torch.equal(y_true, X) and torch.equal(y_false, torch.full((4,), 2.5)) and c.tolist() == [7, 7]
