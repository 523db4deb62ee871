"""hir eager's host cost (issue 22): ``Program(module, graph=False, compile_kernels=False)``
runs an imported block with exactly the torch ops eager PyTorch runs (compute ops return
their result into a fresh buffer instead of ``torch.empty`` + ``out=``, hir.linear's bias
is in the GEMM), fewer with fused projections (one GEMM for q, k and v), and its faster
steps still report failures at the failing op."""

import os
import runpy
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import hir
from hir.core import HirError
from hir.interpreter import Program
from test_destinations import FusedQKVBlock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TorchOps(TorchDispatchMode):
    """Counts the torch ops dispatched by name (views included), any overload: eager
    ``x / 2.0`` runs ``div.Tensor`` on a wrapped scalar, the import ``div.Scalar``."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def _ops(fn) -> Counter:
    with TorchOps() as seen:
        fn()
    return seen.ops


@pytest.mark.parametrize("name", ["prenorm", "llama"])
def test_imported_block_runs_the_ops_eager_torch_runs(name):
    pytest.importorskip("torch_mlir.fx")
    torch.manual_seed(0)
    if name == "llama":
        module = runpy.run_path(os.path.join(ROOT, "test", "Frontend", "Inputs", "llama_block.py"))["llama_block"](
            d=32, heads=4, kv_heads=2, hidden=64, seq=8
        )
    else:
        module = FusedQKVBlock().eval()  # benchmarks/block.py's pre-norm block
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        eager = _ops(lambda: module(x))
    for fused in (False, True):
        imported = hir.from_torch(module, (x,), fused_projections=fused)
        hir.lower(imported.module, "hir-lower")
        program = Program(imported.module, graph=False, compile_kernels=False, device="cpu")
        args = imported.arguments(imported.state(module), x)
        with torch.no_grad():
            want = module(x)
            program(args)  # parameter work, if any, is done once
            ops = _ops(lambda args=args, program=program: program(args))
            expected = eager
            if fused and name == "llama":  # q, k, v: one GEMM (t, mm, views), sliced; their weights concatenated once
                assert (ops["aten.mm"], ops["aten.slice"]) == (eager["aten.mm"] - 2, eager["aten.slice"] + 3), (
                    ops,
                    eager,
                )
                gemm = ("aten.mm", "aten.t", "aten.view", "aten._unsafe_view", "aten.slice")
                ops, expected = (Counter({k: v for k, v in c.items() if k not in gemm}) for c in (ops, eager))
            assert ops == expected
            torch.testing.assert_close(program(args)[0], want)


LINEAR_MATMUL_ADD = """func.func @main(%x: memref<2x4x8xf32>, %w: memref<6x8xf32>, %b: memref<6xf32>,
    %y: memref<6x3xf32>, %yt: memref<3x6xf32>) -> (memref<2x4x3xf32>, memref<3x6xf32>) {
  %h = memref.alloc() : memref<2x4x6xf32>
  "hir.linear"(%x, %w, %h, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 1>}
      : (memref<2x4x8xf32>, memref<6x8xf32>, memref<2x4x6xf32>, memref<6xf32>) -> ()
  %m = memref.alloc() : memref<2x4x3xf32>
  "hir.matmul"(%h, %y, %m) : (memref<2x4x6xf32>, memref<6x3xf32>, memref<2x4x3xf32>) -> ()
  memref.dealloc %h : memref<2x4x6xf32>
  %t = memref.alloc() : memref<3x6xf32>
  "hir.binary"(%yt, %yt, %t) {kind = "add"} : (memref<3x6xf32>, memref<3x6xf32>, memref<3x6xf32>) -> ()
  return %m, %t : memref<2x4x3xf32>, memref<3x6xf32>
}"""


def _linear_matmul_add(track_memory: bool = False) -> tuple[Program, list]:
    """The program and its inputs; the last is a transposed view, so adding it to itself
    gives a transposed (non-contiguous) result."""
    program = Program(hir.parse(LINEAR_MATMUL_ADD, "test.mlir"), graph=False, device="cpu", track_memory=track_memory)
    y = torch.randn(6, 3)
    return program, [torch.randn(2, 4, 8), torch.randn(6, 8), torch.randn(6), y, y.t()]


def test_compute_ops_return_their_result_into_fresh_buffers():
    """hir.linear / matmul / binary into fresh allocations: no alloc step, one torch op each
    (linear's bias in the GEMM), a returned result made contiguous; the tracker counts them."""
    program, args = _linear_matmul_add()
    x, w, b, y, _ = args
    steps = [s.hir_op.name for s in program.plan.steps]
    assert "memref.alloc" not in steps
    m, t = program(args)
    torch.testing.assert_close(m, F.linear(x, w, b) @ y)
    torch.testing.assert_close(t, 2 * y.t())
    assert t.is_contiguous()  # a returned buffer keeps its row-major layout
    ops = _ops(lambda: program(args))
    assert ops["aten.addmm"] == 1 and "aten.empty" not in ops and "aten.add_" not in ops
    tracked, args = _linear_matmul_add(track_memory=True)
    tracked(args)
    # %m and %t stay (returned), %h was freed
    assert tracked.memory.allocations == 3 and tracked.memory.current == (2 * 4 * 3 + 3 * 6) * 4


def test_written_or_read_allocation_keeps_its_buffer():
    """An allocation read before the op (here: the accumulating matmul adds into it) keeps
    its alloc step and is written in place."""
    text = """func.func @main(%a: memref<4x8xf32>, %b: memref<8x4xf32>) -> memref<4x4xf32> {
  %o = memref.alloc() : memref<4x4xf32>
  "hir.matmul"(%a, %b, %o) : (memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32>) -> ()
  "hir.matmul"(%a, %b, %o) {accumulate} : (memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32>) -> ()
  return %o : memref<4x4xf32>
}"""
    program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu", source_name="test.mlir")
    a, b = torch.randn(4, 8), torch.randn(8, 4)
    assert [s.hir_op.name for s in program.plan.steps] == [
        "hir.matmul",
        "hir.matmul",
    ]  # the first binds, the second adds
    torch.testing.assert_close(program([a, b])[0], 2 * (a @ b))


def test_failure_in_a_bound_compute_op_names_the_op():
    text = """func.func @main(%x: memref<?x8xf32>, %y: memref<?x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %a = memref.alloc(%n) : memref<?x8xf32>
  "hir.binary"(%x, %y, %a) {kind = "add"} : (memref<?x8xf32>, memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %a : memref<?x8xf32>
}"""
    program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu", source_name="test.mlir")
    assert "memref.alloc" not in [s.hir_op.name for s in program.plan.steps]
    with pytest.raises(
        HirError, match=r"test.mlir:5:3: error: 'hir.binary' failed: RuntimeError: .*size of tensor a \(3\)"
    ):
        program([torch.zeros(3, 8), torch.zeros(5, 8)])


def test_failure_in_a_segment_names_the_torch_op():
    """A torch op's generated step fails at its own location inside the segment."""
    text = """func.func @main(%x: memref<4xi64>, %w: memref<3x2xf32>) {
  %o = memref.alloc() : memref<4x2xf32>
  call @s(%x, %w, %o) : (memref<4xi64>, memref<3x2xf32>, memref<4x2xf32>) -> ()
  return
}
func.func private @s(%arg0: memref<4xi64>, %arg1: memref<3x2xf32>, %arg2: memref<4x2xf32>) attributes {hir.kernel} {
  %0 = bufferization.to_tensor %arg0 restrict : memref<4xi64> to tensor<4xi64>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<4xi64> to !torch.vtensor<[4],si64>
  %2 = bufferization.to_tensor %arg1 restrict : memref<3x2xf32> to tensor<3x2xf32>
  %3 = builtin.unrealized_conversion_cast %2 : tensor<3x2xf32> to !torch.vtensor<[3,2],f32>
  %int-1 = torch.constant.int -1
  %false = torch.constant.bool false
  %4 = torch.aten.embedding %3, %1, %int-1, %false, %false
      : !torch.vtensor<[3,2],f32>, !torch.vtensor<[4],si64>, !torch.int, !torch.bool,
      !torch.bool -> !torch.vtensor<[4,2],f32>
  %5 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[4,2],f32> to tensor<4x2xf32>
  bufferization.materialize_in_destination %5 in restrict writable %arg2 : (tensor<4x2xf32>, memref<4x2xf32>) -> ()
  return
}"""
    program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu", source_name="test.mlir")
    assert "torch.aten.embedding" in [s.hir_op.name for s in program.plan.steps]  # inlined into @main
    program([torch.tensor([0, 1, 2, 0]), torch.randn(3, 2)])
    with pytest.raises(
        HirError, match=r"test.mlir:13:8: error: 'torch.aten.embedding' failed: IndexError: index out of range"
    ):
        program([torch.tensor([0, 1, 2, 9]), torch.randn(3, 2)])


def test_host_block_plan_is_one_flat_list_of_steps():
    """The imported pre-norm block run eagerly is ONE plan: its kernel segments' steps are
    inlined into @main's (no segment plan, no call step, no nested env per call), and its
    slot moves (deallocations, segment results bound to their buffers) are folded into the
    torch calls before them."""
    pytest.importorskip("torch_mlir.fx")
    torch.manual_seed(0)
    module, x = FusedQKVBlock().eval(), torch.randn(2, 8, 32)
    imported = hir.from_torch(module, (x,))
    hir.lower(imported.module, "hir-lower")
    program = Program(imported.module, graph=False, compile_kernels=False, device="cpu")
    assert list(program.compiler.plans) == ["main"]
    steps = program.plan.steps
    # 24 torch calls (the segments' 14 and 10 compute ops) and the unpack of split's list
    assert Counter(s.__name__ for s in steps) == {"torch_step": 24, "unpack": 1}
    folded = [line for s in steps if hasattr(s, "hir_code") for line in s.hir_code[0][1:]]
    assert sum(line.endswith("= DEAD") for line in folded) == 17  # the memref.dealloc ops
    assert sum(line.startswith("env[") and line.endswith("]") for line in folded) == 9  # binds
    with torch.no_grad():
        torch.testing.assert_close(program(imported.arguments(imported.state(module), x))[0], module(x))


NEG_TWICE = """func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  call @neg(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %b = memref.alloc() : memref<4xf32>
  call @neg(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %a : memref<4xf32>
  return %b : memref<4xf32>
}
func.func private @neg(%arg0: memref<4xf32>, %arg1: memref<4xf32>) attributes {hir.kernel} {
  %0 = bufferization.to_tensor %arg0 restrict : memref<4xf32> to tensor<4xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<4xf32> to !torch.vtensor<[4],f32>
  %2 = torch.aten.neg %1 : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>
  %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4],f32> to tensor<4xf32>
  bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}"""


def test_a_segment_called_twice_is_inlined_at_each_call():
    program = Program(hir.parse(NEG_TWICE, "test.mlir"), graph=False, device="cpu")
    assert [s.hir_op.name for s in program.plan.steps].count("torch.aten.neg") == 2
    x = torch.randn(4)
    torch.testing.assert_close(program([x])[0], x)


def test_an_inlined_segment_reading_a_freed_buffer_names_its_op():
    """The caller frees %a before the second call: the segment's op reports the use."""
    text = NEG_TWICE.replace("  memref.dealloc %a : memref<4xf32>\n", "").replace(
        "  %b = memref.alloc()", "  memref.dealloc %a : memref<4xf32>\n  %b = memref.alloc()"
    )
    program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu", source_name="test.mlir")
    with pytest.raises(
        HirError, match=r"test.mlir:12:8: error: 'torch.aten.neg' operand #0 \(%1\) is used after memref.dealloc"
    ):
        program([torch.randn(4)])


def test_tracked_segment_calls_stay_calls_and_count_their_buffers():
    """Under track_memory a segment call is its own step, counting the buffer it binds."""
    program = Program(hir.parse(NEG_TWICE, "test.mlir"), graph=False, device="cpu", track_memory=True)
    assert [s.hir_op.name for s in program.plan.steps] == ["func.call", "func.call", "memref.dealloc"]
    program([torch.randn(4)])
    assert program.memory.allocations == 2 and program.memory.current == 4 * 4  # %b returned, %a freed


def test_linear_into_an_argument_is_one_gemm():
    """A 3-D hir.linear writing a buffer it cannot bind (an argument) folds its rows into one
    addmm with the bias, as F.linear does, instead of a matmul and an add_."""
    text = """func.func @main(%x: memref<2x4x8xf32>, %w: memref<6x8xf32>, %b: memref<6xf32>, %out: memref<2x4x6xf32>) {
  "hir.linear"(%x, %w, %out, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 1>}
      : (memref<2x4x8xf32>, memref<6x8xf32>, memref<2x4x6xf32>, memref<6xf32>) -> ()
  return
}"""
    program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu")
    x, w, b, out = torch.randn(2, 4, 8), torch.randn(6, 8), torch.randn(6), torch.zeros(2, 4, 6)
    ops = _ops(lambda: program([x, w, b, out]))
    assert ops["aten.addmm"] == 1 and "aten.add_" not in ops
    torch.testing.assert_close(out, F.linear(x, w, b))
