"""Issue 22: compiled kernel segments (``compile_kernels``) and CUDA graphs composing. On CPU:
the option and its "auto" decision, compiling once per signature, hir-run's flag. On GPU
(marked ``gpu``): the imported pre-norm block compiled and replayed as a CUDA graph equals
eager torch, with new inputs between replays."""

import os
import runpy
import sys

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.core import HirError  # noqa: E402
from hir.interpreter import Program  # noqa: E402
from hir.interpreter.kernels import AUTO_MIN_OPS, compute_ops, wants_compile  # noqa: E402
from hir.tools.run_cli import parser  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = os.path.join(ROOT, "test", "Frontend", "Inputs", "prenorm_block.mlir")
T = "memref<8x64xf32>"
# @two: t = a * b, out = t + a (two compute ops); @one: out = a + b.
SEGMENTS = f"""func.func private @two(%a: {T}, %b: {T}, %out: {T}) attributes {{hir.kernel}} {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  "hir.binary"(%t, %a, %out) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  return
}}
func.func @main(%a: {T}, %b: {T}, %out: {T}) {{
  func.call @two(%a, %b, %out) : ({T}, {T}, {T}) -> ()
  return
}}"""


def test_auto_compiles_segments_of_several_ops_on_cuda_only():
    module = hir.parse(open(BLOCK).read(), "prenorm_block.mlir")
    with module.context:
        funcs = {op.attributes["sym_name"].value: op for op in (o.operation for o in module.body.operations)}
        counts = {name: compute_ops(op) for name, op in funcs.items() if name.startswith("segment_")}
        assert counts["segment_0"] == 1  # one layer_norm
        assert max(counts.values()) >= AUTO_MIN_OPS
        for name, count in counts.items():
            op = funcs[name]
            assert wants_compile("auto", torch.device("cuda"), op) == (count >= AUTO_MIN_OPS), name
            assert not wants_compile("auto", torch.device("cpu"), op)
            assert wants_compile(True, torch.device("cpu"), op) and not wants_compile(False, torch.device("cuda"), op)


def test_default_is_auto_and_compiles_nothing_on_cpu():
    program = Program(hir.parse(SEGMENTS), device="cpu")
    a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.empty(8, 64)
    program([a, b, out])
    assert torch.equal(out, a * b + a)
    stats = program.kernel_compile
    assert (stats.mode, stats.segments, stats.compiles, stats.seconds) == ("auto", 0, 0, 0.0)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_bad_mode_is_an_error(bad):
    with pytest.raises(HirError, match="compile_kernels must be True, False or 'auto'"):
        Program(hir.parse(SEGMENTS), device="cpu", compile_kernels=bad)


def test_cli_flag():
    assert parser().parse_args(["f.mlir"]).compile_kernels is None  # -> "auto"
    assert parser().parse_args(["f.mlir", "--compile-kernels"]).compile_kernels is True
    assert parser().parse_args(["f.mlir", "--no-compile-kernels"]).compile_kernels is False


def test_compiled_once_per_signature():
    """compile_kernels=True on CPU (inductor's C++ backend): the second call reuses the
    compiled segment; a call with aliased buffers runs op by op (the trace assumed distinct
    buffers) and is still right."""
    program = Program(hir.parse(SEGMENTS), device="cpu", compile_kernels=True, graph=False)
    a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.empty(8, 64)
    program([a, b, out])
    assert torch.allclose(out, a * b + a)
    a2 = torch.randn(8, 64)
    program([a2, b, out])
    assert torch.allclose(out, a2 * b + a2)
    stats = program.kernel_compile
    assert (stats.segments, stats.compiles, stats.fallbacks) == (1, 1, 0) and stats.seconds > 0
    x = torch.randn(8, 64)
    want = x * x + x
    program([x, x, x])  # out aliases a and b
    assert torch.allclose(x, want)
    assert (stats.compiles, stats.fallbacks) == (1, 1)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@needs_cuda
def test_compiled_block_under_cuda_graph_equals_torch():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    source = runpy.run_path(os.path.join(ROOT, "benchmarks", "block.py"))
    torch.manual_seed(0)
    model = source["Block"](d_model=128, heads=4, hidden=512, seq=64).eval().cuda()
    x = torch.randn(2, 64, 128).cuda()
    weights = [t.cuda() for t in model.state_dict().values()]
    program = Program(hir.parse(open(BLOCK).read(), "prenorm_block.mlir"), device="cuda")
    stats = program.kernel_compile
    assert stats.segments >= 1
    with torch.no_grad():
        for call in range(3):  # eager (compiles), capture, replay
            (got,) = program(weights + [x])
            assert torch.allclose(got, model(x), rtol=1e-4, atol=1e-5), call
        x2 = torch.randn(2, 64, 128, device="cuda")
        for call in range(3):  # new inputs: another buffer, then new values in the same one
            if call:
                x2.normal_()
            (got,) = program(weights + [x2])
            assert torch.allclose(got, model(x2), rtol=1e-4, atol=1e-5), call
    assert program.graph_state.replays >= 2, program.graph_state
    assert stats.compiles == stats.segments and stats.fallbacks == 0, stats


def test_scalar_overloads_renamed_with_the_same_values():
    """torch-mlir's ``aten.*.Scalar`` calls become the ``.Tensor`` overloads inductor's
    patterns expect (``alpha`` moved to its keyword), computing the same values, integer
    tensors included."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from hir.interpreter.inductor_graph import canonical_scalar_overloads

    aten = torch.ops.aten

    def f(x, i):
        return aten.add.Scalar(x, 2.0, 3) * aten.sub.Scalar(x, 1.0, 2) + aten.div.Scalar(i, 2) + aten.mul.Scalar(x, 0.5)

    x, i = torch.randn(5), torch.arange(5)
    graph = make_fx(f)(x, i)
    canonical_scalar_overloads(graph)
    targets = {str(n.target) for n in graph.graph.nodes if n.op == "call_function"}
    assert not any(t.endswith(".Scalar") for t in targets), targets
    assert torch.equal(graph(x, i), f(x, i))
