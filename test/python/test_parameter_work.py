"""Parameter work once (issue 22): hir-hoist-parameter-work moves work that reads only
``hir.parameter`` arguments into a ``hir.once`` call, which the interpreter runs once per
set of parameter tensors. A parameter changed in place, or a new tensor passed, gives the
new result (eagerly on CPU, and under ``graph="auto"`` on CUDA)."""

import pytest
import torch

import hir
from hir.interpreter import Program

# @main(w, v, x) = x @ relu(w.T * v): w.T and w.T * v read only parameters.
PROGRAM = """func.func @main(%w: memref<32x16xf32> {hir.parameter}, %v: memref<32xf32> {hir.parameter},
    %x: memref<8x16xf32>) -> memref<8x32xf32> {
  %wt = memref.alloc() : memref<16x32xf32>
  call @t(%w, %v, %wt) : (memref<32x16xf32>, memref<32xf32>, memref<16x32xf32>) -> ()
  %y = memref.alloc() : memref<8x32xf32>
  "hir.matmul"(%x, %wt, %y) : (memref<8x16xf32>, memref<16x32xf32>, memref<8x32xf32>) -> ()
  return %y : memref<8x32xf32>
}
func.func private @t(%arg0: memref<32x16xf32>, %arg1: memref<32xf32>,
    %arg2: memref<16x32xf32>) attributes {hir.kernel} {
  %0 = bufferization.to_tensor %arg0 restrict : memref<32x16xf32> to tensor<32x16xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<32x16xf32> to !torch.vtensor<[32,16],f32>
  %2 = bufferization.to_tensor %arg1 restrict : memref<32xf32> to tensor<32xf32>
  %3 = builtin.unrealized_conversion_cast %2 : tensor<32xf32> to !torch.vtensor<[32],f32>
  %4 = torch.aten.t %1 : !torch.vtensor<[32,16],f32> -> !torch.vtensor<[16,32],f32>
  %5 = torch.aten.mul.Tensor %4, %3
      : !torch.vtensor<[16,32],f32>, !torch.vtensor<[32],f32> -> !torch.vtensor<[16,32],f32>
  %6 = torch.aten.relu %5 : !torch.vtensor<[16,32],f32> -> !torch.vtensor<[16,32],f32>
  %7 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[16,32],f32> to tensor<16x32xf32>
  bufferization.materialize_in_destination %7 in restrict writable %arg2 : (tensor<16x32xf32>, memref<16x32xf32>) -> ()
  return
}
"""


def want(w, v, x):
    return x @ (w.t() * v).relu()


def lowered() -> object:
    module = hir.parse(PROGRAM, "params.mlir")
    hir.lower(module)
    assert "hir.once" in str(module), "hir-lower hoists the parameter work"
    return module


def check_changes(program: Program, device: str, calls: int = 1) -> None:
    """Run ``calls`` times per state: unchanged, w changed in place, a new v tensor."""
    torch.manual_seed(0)
    w, v, x = (torch.randn(*s, device=device) for s in ((32, 16), (32,), (8, 16)))
    for step in range(3):
        if step == 1:
            with torch.no_grad():
                w.mul_(-2)  # in place: the version counter moves
        if step == 2:
            v = torch.randn(32, device=device)  # a new tensor
        for _ in range(calls):
            (out,) = program([w.detach(), v, x])
            torch.testing.assert_close(out, want(w, v, x))


def test_hir_lower_hoists_and_a_changed_parameter_recomputes():
    check_changes(Program(lowered(), graph=False, device="cpu"), "cpu")


def test_unchanged_parameters_are_not_recomputed():
    """The work runs once: a write torch does not count (through ``.data``, documented)
    leaves the cached result in use, which shows the forward does not recompute it."""
    program = Program(lowered(), graph=False, device="cpu")
    w, v, x = torch.randn(32, 16), torch.randn(32), torch.randn(8, 16)
    (first,) = program([w, v, x])
    w.data.mul_(3)
    (again,) = program([w, v, x])
    torch.testing.assert_close(again, first)
    w.mul_(1)  # a counted write: recomputed
    (now,) = program([w, v, x])
    torch.testing.assert_close(now, want(w, v, x))


def test_from_torch_marks_state_as_parameters():
    pytest.importorskip("torch_mlir.fx")

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(32, 16))
            self.v = torch.nn.Parameter(torch.randn(32))

        def forward(self, x):
            return x @ (self.w.t() * self.v).relu()

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(8, 16)
    program = hir.from_torch(m, (x,))
    assert str(program.module).count("{hir.parameter}") == 2
    hir.lower(program.module)
    assert "hir.once" in str(program.module)
    compiled = Program(program.module, graph=False, device="cpu")
    for scale in (1.0, -3.0):
        with torch.no_grad():
            m.w.mul_(scale)
        (out,) = compiled(program.arguments(program.state(m), x))
        with torch.no_grad():
            torch.testing.assert_close(out, m(x))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_graph_auto_recomputes_changed_parameters_on_cuda():
    """Under graph="auto" a graph bound to the parameters reads the cached work, redone
    before a replay when a parameter changed: replays after a change give the new result
    (3 calls per state: eager, capture, replay)."""
    program = Program(lowered(), device="cuda")
    check_changes(program, "cuda", calls=3)
    assert program.graph_state.replays > 0
    # the first bound graph reads the cached results (refreshed before each replay) instead
    # of recomputing them in the graph (the one bound after a new v is captured before the
    # cache holds v's results, and records the work)
    assert any(entry.refreshes for entry in program.graph._bound.values())


def test_graph_replays_copy_no_parameter_back():
    """A replay on static buffers copies back only the arguments the program writes: the
    parameters go to the hir.once call, whose callee only reads them, so none is copied
    back (a copy would move their version counter and make hir.once recompute)."""
    from hir.interpreter.graph_checks import written_arguments

    module = lowered()
    with module.context:
        funcs = {op.attributes["sym_name"].value: op for op in (o.operation for o in module.body.operations)}
        assert written_arguments(funcs["main"].regions[0].blocks[0], funcs) == frozenset()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_static_graph_replays_leave_parameters_untouched_on_cuda():
    """New activation buffers every call: the static graph replays, and the parameters'
    version counters never move (nothing is copied back into them)."""
    program = Program(lowered(), device="cuda")
    torch.manual_seed(0)
    w, v = torch.randn(32, 16, device="cuda"), torch.randn(32, device="cuda")
    versions = (w._version, v._version)
    for _ in range(4):
        x = torch.randn(8, 16, device="cuda")
        (out,) = program([w, v, x])
        torch.testing.assert_close(out, want(w, v, x))
    assert program.graph_state.last == "replay", program.graph_state
    assert (w._version, v._version) == versions
