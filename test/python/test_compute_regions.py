"""Issue 22: compiled compute regions (:mod:`hir.interpreter.regions`). Which ops form a
region (maximal runs of hir compute ops and kernel segment calls, ended by stream, comm and
view ops and by ``hir.once`` calls), when regions run compiled, and that a program with
compiled regions computes what it computes op by op (inductor on CPU: ``compile_kernels=True``).
On GPU (marked ``gpu``): the imported block is one region, inductor finds its attention
(SDPA), and it replays as a CUDA graph equal to eager torch."""

import os
import runpy
import sys

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.interpreter import Program  # noqa: E402
from hir.interpreter.regions import compute_weight, region_mode_reason, region_spans  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = os.path.join(ROOT, "test", "Frontend", "Inputs", "prenorm_block.mlir")
T = "memref<8x64xf32>"
# Two regions split by a stream switch: region 1 = t = a * b, u = @two(t, a) (= t * a + t);
# region 2 = v = u + t, free t (a region input), o = v - u (an argument written), free u.
SPLIT = f"""func.func @main(%a: {T}, %b: {T}, %o: {T}) -> {T} {{
  %c1 = arith.constant 1 : index
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  %u = memref.alloc() : {T}
  func.call @two(%t, %a, %u) : ({T}, {T}, {T}) -> ()
  %s = "hir.get_stream"(%c1) : (index) -> !hir.stream
  "hir.set_current_stream"(%s) : (!hir.stream) -> ()
  %v = memref.alloc() : {T}
  "hir.binary"(%u, %t, %v) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  memref.dealloc %t : {T}
  "hir.binary"(%v, %u, %o) {{kind = "sub"}} : ({T}, {T}, {T}) -> ()
  memref.dealloc %u : {T}
  return %v : {T}
}}
func.func private @two(%a: {T}, %b: {T}, %out: {T}) attributes {{hir.kernel}} {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  "hir.binary"(%t, %a, %out) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  return
}}"""


def want_split(a, b):
    t = a * b
    u = t * a + t
    v = u + t
    return v, v - u


def functions(module) -> dict:
    return {op.attributes["sym_name"].value: op for op in (o.operation for o in module.body.operations)}


def body(funcs: dict, name: str = "main") -> list:
    return list(funcs[name].regions[0].blocks[0].operations)[:-1]


def test_regions_end_at_non_compute_ops():
    module = hir.parse(SPLIT)
    with module.context:
        funcs = functions(module)
        ops = body(funcs)
        names = [op.operation.name for op in ops]
        spans = region_spans(ops, funcs, 1)
        # The leading arith.constant stays outside; the stream switch ends region 1.
        assert spans == [(1, 5), (7, len(ops))], (spans, names)
        assert [compute_weight(op.operation, funcs) for op in ops[1:5]] == [0, 1, 0, 2]
        assert compute_weight(ops[5].operation, funcs) is None  # hir.get_stream
        assert region_spans(ops, funcs, 3) == [(1, 5)]  # "auto" skips regions of fewer compute ops


def test_whole_imported_block_is_one_region():
    module = hir.parse(open(BLOCK).read(), "prenorm_block.mlir")
    with module.context:
        funcs = functions(module)
        ops = body(funcs)
        assert region_spans(ops, funcs, 2) == [(0, len(ops))]


def test_once_calls_and_views_end_a_region():
    module = hir.parse(f"""func.func @main(%w: {T} {{hir.parameter}}, %x: {T}) -> {T} {{
  %c0 = arith.constant 0 : index
  %wt = memref.alloc() : {T}
  func.call @two(%w, %w, %wt) {{hir.once}} : ({T}, {T}, {T}) -> ()
  %y = memref.alloc() : {T}
  "hir.binary"(%x, %wt, %y) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  %r = "hir.alias_select"(%y, %c0) {{axis = 0 : i64}} : ({T}, index) -> memref<64xf32, strided<[1], offset: ?>>
  "hir.binary"(%y, %x, %y) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  return %y : {T}
}}
func.func private @two(%a: {T}, %b: {T}, %out: {T}) attributes {{hir.kernel}} {{
  "hir.binary"(%a, %b, %out) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  return
}}""")
    with module.context:
        funcs = functions(module)
        ops = body(funcs)
        # The alloc before the once call has no compute op: no region.
        assert region_spans(ops, funcs, 1) == [(3, 5), (6, 7)]


# hir-hoist-parameter-work's shape: @main calls a pure-compute function of its parameters
# once (a region of 2 compute ops when compiled); the step's own work is one more region.
ONCE = f"""func.func @main(%w: {T} {{hir.parameter}}, %x: {T}) -> {T} {{
  %wt = func.call @main_parameter_work(%w) {{hir.once}} : ({T}) -> {T}
  %y = memref.alloc() : {T}
  "hir.binary"(%x, %wt, %y) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  "hir.binary"(%y, %x, %y) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  return %y : {T}
}}
func.func private @two(%a: {T}, %b: {T}, %out: {T}) attributes {{hir.kernel}} {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  "hir.binary"(%t, %a, %out) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  return
}}
func.func private @main_parameter_work(%w: {T}) -> {T} {{
  %wt = memref.alloc() : {T}
  func.call @two(%w, %w, %wt) : ({T}, {T}, {T}) -> ()
  return %wt : {T}
}}"""


def test_parameter_work_is_not_compiled():
    """A ``hir.once`` callee runs once per set of parameters: compiling it (an inductor
    compile, seconds, issue 34's first call) would cost more than running it, so it runs
    op by op, kernel segments inside it too; only @main's region is compiled."""
    torch.manual_seed(0)
    w, x = torch.randn(8, 64), torch.randn(8, 64)
    program = Program(hir.parse(ONCE), device="cpu", compile_kernels=True)
    stats = program.kernel_compile
    assert (stats.regions, stats.segments) == (1, 1), stats.summary()
    for _ in range(2):
        (y,) = program([w, x])
        torch.testing.assert_close(y, x * (w * w + w) + x)
    assert (stats.compiles, stats.fallbacks) == (1, 0), stats.summary()


def test_when_regions_compile():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert region_mode_reason("auto", cuda, False) is None and region_mode_reason(True, cpu, False) is None
    assert "CUDA only" in region_mode_reason("auto", cpu, False)
    assert "op by op" in region_mode_reason(False, cuda, False)
    assert "track_memory" in region_mode_reason(True, cuda, True)
    program = Program(hir.parse(SPLIT), device="cpu")  # the default: auto, nothing compiled on CPU
    stats = program.kernel_compile
    assert (stats.regions, stats.segments) == (0, 0) and "CUDA only" in stats.regions_reason


def test_compiled_regions_equal_op_by_op():
    """compile_kernels=True on CPU: two regions compiled (the kernel segment inside one is
    not compiled on its own), results and the written argument equal the op-by-op run and
    the formula; the second call reuses the compiled regions."""
    torch.manual_seed(0)
    a, b = torch.randn(8, 64), torch.randn(8, 64)
    eager, o_eager = Program(hir.parse(SPLIT), device="cpu", compile_kernels=False), torch.empty(8, 64)
    (v_eager,) = eager([a, b, o_eager])
    program = Program(hir.parse(SPLIT), device="cpu", compile_kernels=True)
    stats = program.kernel_compile
    assert (stats.regions, stats.segments) == (2, 2)
    for _ in range(2):
        o = torch.empty(8, 64)
        (v,) = program([a, b, o])
        torch.testing.assert_close(v, v_eager)
        torch.testing.assert_close(o, o_eager)
        want_v, want_o = want_split(a, b)
        torch.testing.assert_close(v, want_v)
        torch.testing.assert_close(o, want_o)
    assert (stats.compiles, stats.fallbacks) == (2, 0), stats
    assert "2 compiled region(s), 0 kernel segment(s) compiled alone" in stats.summary()


def test_compiled_block_region_equals_op_by_op():
    """The imported pre-norm block as one compiled region on CPU (one inductor compile), in
    which inductor replaces the softmax attention by SDPA (torch-mlir's ``div.Scalar`` is
    rewritten to the overload its pattern expects)."""
    from torch._dynamo.utils import counters
    from torch._inductor import config

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    source = runpy.run_path(os.path.join(ROOT, "benchmarks", "block.py"))
    torch.manual_seed(0)
    model = source["Block"](d_model=128, heads=4, hidden=512, seq=64).eval()
    x = torch.randn(2, 64, 128)
    weights = list(model.state_dict().values())
    program = Program(hir.parse(open(BLOCK).read(), "prenorm_block.mlir"), device="cpu", compile_kernels=True)
    before = counters["inductor"]["fuse_attention"]
    with torch.no_grad(), config.patch(fx_graph_cache=False):  # a cache hit runs no pattern pass
        (got,) = program(weights + [x])
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)
    stats = program.kernel_compile
    assert (stats.regions, stats.segments, stats.compiles, stats.fallbacks) == (1, 1, 1, 0), stats
    assert counters["inductor"]["fuse_attention"] == before + 1, "inductor did not replace the attention by SDPA"


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@needs_cuda
def test_block_region_fuses_attention_and_replays_on_cuda():
    """graph="auto", compile_kernels="auto" (the defaults) on CUDA: the block is one region,
    inductor replaces its softmax attention by SDPA, and the region compiled at the first
    call is captured and replayed, equal to eager torch with new inputs between calls."""
    from torch._dynamo.utils import counters
    from torch._inductor import config

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    source = runpy.run_path(os.path.join(ROOT, "benchmarks", "block.py"))
    torch.manual_seed(0)
    model = source["Block"](d_model=128, heads=4, hidden=512, seq=64).eval().cuda()
    weights = [t.cuda() for t in model.state_dict().values()]
    program = Program(hir.parse(open(BLOCK).read(), "prenorm_block.mlir"), device="cuda")
    before = counters["inductor"]["fuse_attention"]
    # Inductor matches f32 attention to SDPA only where TF32 matmuls are allowed (it warns
    # and skips the pattern otherwise); both sides then compute in TF32.
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        with torch.no_grad(), config.patch(fx_graph_cache=False):  # a cache hit runs no pattern pass
            for _ in range(5):
                x = torch.randn(2, 64, 128, device="cuda")
                (got,) = program(weights + [x])
                torch.testing.assert_close(got, model(x), rtol=2e-2, atol=2e-2)
    finally:
        torch.set_float32_matmul_precision(precision)
    stats = program.kernel_compile
    assert (stats.regions, stats.segments, stats.compiles, stats.fallbacks) == (1, 1, 1, 0), stats
    assert counters["inductor"]["fuse_attention"] > before, "inductor did not replace the attention by SDPA"
    assert program.graph_state.replays >= 2, program.graph_state


def test_host_scalars_used_outside_end_a_region():
    """A region returns tensors only: host arithmetic whose value an op after the region
    uses (here a loop bound) is not part of it, and the program runs the same compiled."""
    module = f"""func.func @main(%a: {T}, %o: {T}) {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %a, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 3 : index
  "hir.binary"(%t, %a, %o) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  "hir.for"(%c0, %n, %c1) ({{
  ^bb0(%i: index):
    "hir.binary"(%o, %a, %o) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""
    parsed = hir.parse(module)
    with parsed.context:
        funcs = functions(parsed)
        assert region_spans(body(funcs), funcs, 1) == [(0, 2), (5, 6)]
    a = torch.randn(8, 64)
    o = torch.empty(8, 64)
    program = Program(hir.parse(module), device="cpu", compile_kernels=True)
    program([a, o])
    torch.testing.assert_close(o, a * a + 4 * a)
    assert program.kernel_compile.regions == 2
