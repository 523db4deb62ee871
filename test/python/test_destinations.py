"""Destination passing (issue 22, hir/interpreter/destinations.py): a kernel segment's
result becomes its fresh destination buffer instead of being copied into it. The imported
pre-norm block and MLP run with no activation copy left in their plans, equal to eager
torch; hand-written programs check each case where the copy must stay."""

import math
import os
import runpy

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import hir
from hir.interpreter import Program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MATERIALIZE = "bufferization.materialize_in_destination"
COPIES = ("copy_into", "set_step")  # the steps that copy a buffer


class FusedQKVBlock(torch.nn.Module):
    """The pre-norm block of benchmarks/block.py: one QKV linear split into heads."""

    def __init__(self, d: int = 32, heads: int = 4, hidden: int = 128, seq: int = 8) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads) + self.mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def step_functions(program: Program, text: str) -> list[tuple[str, object]]:
    """(function, step) of every step of the program's plans, named by the function whose
    text holds the step's op (an eager kernel segment's steps are inlined into its caller's
    plan)."""
    starts = [
        (n, line.split("@")[1].split("(")[0]) for n, line in enumerate(text.splitlines(), 1) if "func.func" in line
    ]
    found = []
    for plan in program.compiler.plans.values():
        for step in plan.steps:
            line = int(step.hir_op.location.split(":")[1])
            found.append((next(name for start, name in reversed(starts) if start <= line), step))
    return found


def copies(program: Program, text: str) -> list[str]:
    """The copy steps of the program: a segment result copied into its destination, or an
    hir.set / memref.copy the IR asks for, each named by its function."""
    return sorted(
        f"{function}: {step.hir_op.name}" for function, step in step_functions(program, text) if step.__name__ in COPIES
    )


def steps_in(program: Program, text: str, function: str) -> list[str]:
    """The names of the steps of ``function``'s ops."""
    return [step.__name__ for name, step in step_functions(program, text) if name == function]


def torch_ops(program: Program, inputs: list) -> list[str]:
    """The torch ops (with overload) one call of ``program`` dispatches."""
    ops = []

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with Seen():
        program(inputs)
    return ops


def imported(module: torch.nn.Module, x: torch.Tensor) -> tuple[Program, list]:
    program = hir.from_torch(module, (x,))
    hir.lower(program.module, "hir-lower")
    return Program(program.module, graph=False, device="cpu"), program.arguments(program.state(module), x)


@pytest.mark.parametrize("name", ["block", "mlp"])
def test_imported_programs_copy_no_activation(name):
    pytest.importorskip("torch_mlir.fx")
    if name == "block":
        torch.manual_seed(0)
        module, x = FusedQKVBlock().eval(), torch.randn(2, 8, 32)
    else:
        inputs = runpy.run_path(os.path.join(ROOT, "test", "Frontend", "Inputs", "mlp.py"))
        module, (x,) = inputs["module"].eval(), inputs["example_args"]
    program, args = imported(module, x)
    steps = [s for p in program.compiler.plans.values() for s in p.steps]
    assert any("hir.kernel" in f.operation.attributes for f in program.compiler.functions.values()), (
        "the imported program has kernel segments"
    )
    assert [s.hir_op.name for s in steps if s.__name__ in COPIES] == []
    with torch.no_grad():
        want = module(x)
    for _ in range(2):
        (out,) = program(args)
        torch.testing.assert_close(out, want)


SEGMENT_T = """
func.func private @t(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>) attributes {hir.kernel} {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32> to tensor<4x8xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>
  %2 = torch.aten.OP %1 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
  %3 = torch.aten.transpose.int %2, %int0, %int1
      : !torch.vtensor<[4,8],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,4],f32>
  %4 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[8,4],f32> to tensor<8x4xf32>
  bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<8x4xf32>, memref<8x4xf32>) -> ()
  return
}
"""


def transposer(op: str) -> str:
    """@t(in, out): out = OP(in).T (``detach``: a view of the input; ``relu``: fresh)."""
    return SEGMENT_T.replace("OP", op)


def run_main(main: str, segment: str, x: torch.Tensor) -> tuple[Program, list]:
    program = Program(hir.parse(main + segment, "test.mlir"), graph=False, device="cpu")
    return program, program([x])


def test_a_view_of_a_buffer_written_later_is_copied():
    """@t's result views %b, which is written after the call: binding %a to it would make
    %c read the new %b; the copy stays."""
    main = """func.func @main(%x: memref<4x8xf32>) -> memref<8x4xf32> {
  %b = memref.alloc() : memref<4x8xf32>
  "hir.set"(%x, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %a = memref.alloc() : memref<8x4xf32>
  call @t(%b, %a) : (memref<4x8xf32>, memref<8x4xf32>) -> ()
  "hir.binary"(%x, %x, %b) {kind = "add"} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  %c = memref.alloc() : memref<8x4xf32>
  "hir.binary"(%a, %a, %c) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  return %c : memref<8x4xf32>
}"""
    x = torch.randn(4, 8)
    program, (c,) = run_main(main, transposer("detach"), x)
    torch.testing.assert_close(c, 2 * x.t())
    assert copies(program, main + transposer("detach")) == ["main: hir.set", "t: " + MATERIALIZE]
    # without the later write, %a is a view of %b: no copy
    later = main.replace('  "hir.binary"(%x, %x, %b)', '  // "hir.binary"(%x, %x, %b)')
    program, (c,) = run_main(later, transposer("detach"), x)
    torch.testing.assert_close(c, 2 * x.t())
    assert copies(program, later + transposer("detach")) == ["main: hir.set"]


def test_a_returned_buffer_stays_contiguous():
    """A fresh but transposed result bound to a returned buffer is made contiguous (the
    buffer keeps its row-major layout); read only by compute ops it is bound as it is."""
    returned = """func.func @main(%x: memref<4x8xf32>) -> memref<8x4xf32> {
  %a = memref.alloc() : memref<8x4xf32>
  call @t(%x, %a) : (memref<4x8xf32>, memref<8x4xf32>) -> ()
  return %a : memref<8x4xf32>
}"""
    x = torch.randn(4, 8)
    program, (a,) = run_main(returned, transposer("relu"), x)
    assert a.is_contiguous() and copies(program, returned + transposer("relu")) == []
    torch.testing.assert_close(a, x.relu().t())
    assert "bind_contiguous" in steps_in(program, returned + transposer("relu"), "t")
    read = returned.replace(
        "  return %a",
        """  %c = memref.alloc() : memref<8x4xf32>
  "hir.binary"(%a, %a, %c) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  return %c""",
    )
    program, (c,) = run_main(read, transposer("relu"), x)
    torch.testing.assert_close(c, 2 * x.relu().t())
    # the relu step binds it too: the slot move is folded into the torch call's step
    assert steps_in(program, read + transposer("relu"), "t") == ["torch_step", "torch_step"]  # relu, transpose


@pytest.mark.parametrize(
    "main",
    [
        # the destination is an argument: the caller's buffer is written
        """func.func @main(%x: memref<4x8xf32>, %a: memref<8x4xf32>) -> memref<8x4xf32> {
  call @t(%x, %a) : (memref<4x8xf32>, memref<8x4xf32>) -> ()
  return %a : memref<8x4xf32>
}""",
        # the destination is read before the call
        """func.func @main(%x: memref<4x8xf32>, %y: memref<8x4xf32>) -> memref<8x4xf32> {
  %a = memref.alloc() : memref<8x4xf32>
  "hir.set"(%y, %a) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  %c = memref.alloc() : memref<8x4xf32>
  "hir.binary"(%a, %a, %c) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  call @t(%x, %a) : (memref<4x8xf32>, memref<8x4xf32>) -> ()
  return %a : memref<8x4xf32>
}""",
    ],
    ids=["argument", "used-before"],
)
def test_destinations_that_are_not_fresh_are_written(main):
    x, y = torch.randn(4, 8), torch.randn(8, 4)
    program = Program(hir.parse(main + transposer("relu"), "test.mlir"), graph=False, device="cpu")
    a = torch.zeros(8, 4)
    (out,) = program([x, a] if "%a: memref" in main else [x, y])
    torch.testing.assert_close(out, x.relu().t())
    assert "t: " + MATERIALIZE in copies(program, main + transposer("relu"))
    if "%a: memref" in main:
        assert out is a


def relu_segment(name: str, type_: str, shape: str) -> str:
    return f"""
func.func private @{name}(%arg0: {type_}, %arg1: {type_}) attributes {{hir.kernel}} {{
  %0 = bufferization.to_tensor %arg0 restrict : {type_} to tensor<{shape.replace(",", "x")}xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<{shape.replace(",", "x")}xf32> to !torch.vtensor<[{shape}],f32>
  %2 = torch.aten.relu %1 : !torch.vtensor<[{shape}],f32> -> !torch.vtensor<[{shape}],f32>
  %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[{shape}],f32> to tensor<{shape.replace(",", "x")}xf32>
  bufferization.materialize_in_destination %3 in restrict writable %arg1
      : (tensor<{shape.replace(",", "x")}xf32>, {type_}) -> ()
  return
}}
"""


def test_a_destination_in_use_is_written_with_out():
    """A destination read before the call (so not fresh) is written by relu.out itself."""
    main = """func.func @main(%x: memref<4x8xf32>, %y: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  "hir.set"(%y, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %c = memref.alloc() : memref<4x8xf32>
  "hir.binary"(%a, %a, %c) {kind = "add"} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  call @r(%x, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  return %a, %c : memref<4x8xf32>, memref<4x8xf32>
}"""
    program = Program(
        hir.parse(main + relu_segment("r", "memref<4x8xf32>", "4,8"), "test.mlir"), graph=False, device="cpu"
    )
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    a, c = program([x, y])
    torch.testing.assert_close(a, x.relu())
    torch.testing.assert_close(c, 2 * y)
    text = main + relu_segment("r", "memref<4x8xf32>", "4,8")
    assert copies(program, text) == ["main: hir.set"]
    assert "aten.relu.out" in torch_ops(program, [x, y])


def test_stream_slices_are_written_with_out():
    """In a stream loop the segment writes slice %i of the output buffer with out=."""
    view = "memref<8xf32, strided<[1], offset: ?>>"
    main = f"""func.func @main(%x: memref<2x8xf32>) -> memref<2x8xf32> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<2x8xf32>
  "hir.for"(%c0, %c2, %c1) ({{
  ^bb0(%i: index):
    %xs = "hir.alias_select"(%x, %i) {{axis = 0 : i64}} : (memref<2x8xf32>, index) -> {view}
    %as = "hir.alias_select"(%a, %i) {{axis = 0 : i64}} : (memref<2x8xf32>, index) -> {view}
    call @r(%xs, %as) : ({view}, {view}) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return %a : memref<2x8xf32>
}}"""
    program = Program(hir.parse(main + relu_segment("r", view, "8"), "test.mlir"), graph=False, device="cpu")
    x = torch.randn(2, 8)
    (a,) = program([x])
    torch.testing.assert_close(a, x.relu())
    assert "aten.relu.out" in torch_ops(program, [x]) and "aten.copy_.default" not in torch_ops(program, [x])


SEGMENT_TWO = """
func.func private @two(%arg0: memref<4x8xf32>, %arg1: memref<4x8xf32>, %arg2: memref<8x4xf32>) attributes {hir.kernel} {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32> to tensor<4x8xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>
  %2 = torch.aten.relu %1 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>
  %3 = torch.aten.transpose.int %2, %int0, %int1
      : !torch.vtensor<[4,8],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,4],f32>
  %4 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,8],f32> to tensor<4x8xf32>
  bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  %5 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[8,4],f32> to tensor<8x4xf32>
  bufferization.materialize_in_destination %5 in restrict writable %arg2 : (tensor<8x4xf32>, memref<8x4xf32>) -> ()
  return
}
"""


def test_results_viewing_one_tensor_are_bound_unless_one_is_written_later():
    """@two writes relu(x) and its transpose (what autograd saves for a backward): both
    destinations become views of the one relu result, with no copy; when %a is written
    after the call, %b must not see that write: both are copied."""
    main = """func.func @main(%x: memref<4x8xf32>) -> (memref<4x8xf32>, memref<8x4xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<8x4xf32>
  call @two(%x, %a, %b) : (memref<4x8xf32>, memref<4x8xf32>, memref<8x4xf32>) -> ()
  WRITE
  %c = memref.alloc() : memref<4x8xf32>
  "hir.binary"(%a, %a, %c) {kind = "add"} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  %d = memref.alloc() : memref<8x4xf32>
  "hir.binary"(%b, %b, %d) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  return %c, %d : memref<4x8xf32>, memref<8x4xf32>
}"""
    write = '"hir.binary"(%x, %x, %a) {kind = "add"} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()'
    x = torch.randn(4, 8)
    for later, a, copied in [("", x.relu(), []), (write, 2 * x, ["two: " + MATERIALIZE] * 2)]:
        text = main.replace("WRITE", later) + SEGMENT_TWO
        program = Program(hir.parse(text, "test.mlir"), graph=False, device="cpu")
        for _ in range(2):
            c, d = program([x])
            torch.testing.assert_close(c, 2 * a)
            torch.testing.assert_close(d, 2 * x.relu().t())
        assert copies(program, text) == copied
