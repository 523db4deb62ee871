"""Issue 16: ``Program(graph="auto")`` (CUDA graphs for repeated runs). On CPU: the fallback
decisions, ``graph_state``, option validation, the analyses behind the replay contract
(written arguments, signatures, aliasing, outputs living in inputs) and hir-run's choice. On
GPU (marked ``gpu``): inputs changed between replays, new shapes, host scalars, copied and
static outputs, preallocated outputs, non-capturable programs."""

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.core import HirError  # noqa: E402
from hir.interpreter import Program  # noqa: E402
from hir.interpreter.graph import _source, share_memory, signature  # noqa: E402
from hir.interpreter.graph_checks import graph_blockers, written_arguments  # noqa: E402
from hir.tools.run_cli import graph_mode, main, parser  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
CUDA = torch.device("cuda")

# o = a + a (o preallocated), t = o * a returned; a is only read.
ADD_MUL = """func.func @main(%a: memref<?x4xf32>, %o: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>) -> ()
  %t = memref.alloc(%n) : memref<?x4xf32>
  "hir.binary"(%o, %a, %t) {kind = "mul"} : (memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>) -> ()
  return %t : memref<?x4xf32>
}"""

# o += a, %n times (a host scalar trip count); returns o itself and a view of row 1 of o.
ACCUMULATE = """func.func @main(%a: memref<2x4xf32>, %o: memref<2x4xf32>, %n: index) -> (memref<2x4xf32>,
    memref<4xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "hir.for"(%c0, %n, %c1) ({
  ^bb0(%i: index):
    "hir.binary"(%o, %a, %o) {kind = "add"} : (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %row = "hir.alias_select"(%o, %c1) {axis = 0 : i64}
      : (memref<2x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
  return %o, %row : memref<2x4xf32>, memref<4xf32, strided<[1], offset: ?>>
}"""

GLOO = """func.func @main(%l: memref<2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %out: memref<8xf32>) {
  %w = "hir.allreduce"(%l, %out) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
      : (memref<2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}"""


# ----- CPU: decisions, state, validation ------------------------------------------------


def test_auto_is_the_default_and_cpu_runs_eagerly():
    module = hir.parse(ADD_MUL)
    program = Program(module, device="cpu")
    state = program.graph_state
    assert state.mode == "auto" and not state.active and "CUDA device" in state.reason
    a, o = torch.arange(8.0).reshape(2, 4), torch.zeros(2, 4)
    for _ in range(3):
        (t,) = program([a, o])
        torch.testing.assert_close(t, (a + a) * a)
        torch.testing.assert_close(o, a + a)
    assert program.graph is None and program.graph_state.last == "eager" and program.graph_state.captures == 0


def test_graph_false_state():
    state = Program(hir.parse(ADD_MUL), device="cpu", graph=False).graph_state
    assert state.mode is False and not state.active and state.reason == "graph=False"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"graph": "yes"}, "graph must be True, False or 'auto', got 'yes'"),
        ({"graph": 1}, "graph must be True, False or 'auto', got 1"),
        ({"graph_cache_size": 0}, "graph_cache_size must be >= 1, got 0"),
        ({"graph": False, "static_outputs": True}, "static_outputs=True needs graph=True or graph='auto'"),
        ({"graph": True}, "--cuda-graph (graph=True): needs a CUDA device; this program runs on cpu"),
        ({"graph": True, "device": "cpu", "track_memory": True}, "needs a CUDA device"),
    ],
)
def test_options_validation(options, message):
    options = {"device": "cpu", **options}
    with pytest.raises(HirError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Program(hir.parse(ADD_MUL), **options)


def test_blockers_name_each_reason():
    """What keeps a program eager on a CUDA device (decided before anything runs)."""
    module = hir.parse(ADD_MUL)
    with module.context:
        assert graph_blockers(module, CUDA, None, False, False) == []
        assert graph_blockers(module, CUDA, "nccl", True, False) == []
        (memory,) = graph_blockers(module, CUDA, None, False, True)
        assert "track_memory=True" in memory
        (backend,) = graph_blockers(module, CUDA, "gloo", True, False)
        assert "'gloo' backend" in backend
    gloo = hir.parse(GLOO)
    with gloo.context:
        (op,) = graph_blockers(gloo, CUDA, None, True, False)
    assert "Gloo collectives" in op and "'hir.allreduce' uses the gloo backend" in op and ":2:" in op


def test_written_arguments_follow_views_roles_and_callees():
    """Replays copy back only the inputs the program may write: o (directly), and in
    ACCUMULATE o through the loop; a is read only; a call writes what its callee writes
    (@k: nothing; @w: what it materializes into), an unknown callee every operand."""
    for text, written in ((ADD_MUL, {1}), (ACCUMULATE, {1})):
        module = hir.parse(text)
        with module.context:
            block = next(iter(module.body.operations)).regions[0].blocks[0]
            assert written_arguments(block) == written
    viewed = hir.parse("""func.func @main(%a: memref<2x4xf32>, %b: memref<2x4xf32>, %c: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = "hir.alias_select"(%b, %c0) {axis = 0 : i64} : (memref<2x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
  %r = "hir.alias_select"(%a, %c0) {axis = 0 : i64} : (memref<2x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
  "hir.set"(%r, %v) : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
  func.call @k(%a) : (memref<2x4xf32>) -> ()
  func.call @w(%a, %c) : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  return
}
func.func private @k(%x: memref<2x4xf32>) {
  return
}
func.func private @w(%x: memref<2x4xf32>, %y: memref<2x4xf32>) attributes {hir.kernel} {
  %0 = bufferization.to_tensor %x restrict : memref<2x4xf32> to tensor<2x4xf32>
  bufferization.materialize_in_destination %0 in restrict writable %y : (tensor<2x4xf32>, memref<2x4xf32>) -> ()
  return
}""")
    with viewed.context:
        funcs = {op.attributes["sym_name"].value: op for op in (o.operation for o in viewed.body.operations)}
        block = funcs["main"].regions[0].blocks[0]
        assert written_arguments(block, funcs) == {1, 2}  # b through its view, c by @w; a only read
        assert written_arguments(block) == {0, 1, 2}  # callees unknown: every operand written


def test_signature_and_aliasing():
    a, b = torch.zeros(2, 4), torch.zeros(2, 4)
    assert signature([a, 3]) == signature([b, 3])
    assert signature([a, 3]) != signature([a, 4])  # another host scalar: another graph
    assert signature([a]) != signature([torch.zeros(3, 4)])
    assert signature([a]) != signature([torch.zeros(4, 2).t()])  # same shape, other strides
    assert signature([a]) != signature([torch.zeros(2, 4, dtype=torch.float64)])
    assert not share_memory([a, b, 3, None])
    assert share_memory([a, a[1]])  # a view of another input
    assert not share_memory([torch.zeros(0), torch.zeros(0)])


def test_outputs_living_in_inputs_are_mapped_back():
    static = [torch.zeros(2, 4), 5, torch.zeros(3)]
    assert _source(static[0], static) == (0, ((2, 4), (4, 1), 0))
    assert _source(static[0][1], static) == (0, ((4,), (1,), 4))
    assert _source(torch.zeros(2, 4), static) is None
    assert _source(7, static) is None


def test_hir_run_graph_choice(tmp_path, capsys):
    p = parser()
    assert graph_mode(p.parse_args(["f.mlir"])) is False  # one run: nothing to gain
    assert graph_mode(p.parse_args(["f.mlir", "--warmup", "2"])) == "auto"
    assert graph_mode(p.parse_args(["f.mlir", "--warmup", "2", "--no-cuda-graph"])) is False
    assert graph_mode(p.parse_args(["f.mlir", "--cuda-graph"])) is True
    with pytest.raises(SystemExit):
        p.parse_args(["f.mlir", "--cuda-graph", "--no-cuda-graph"])
    capsys.readouterr()
    prog = tmp_path / "p.mlir"
    prog.write_text(ADD_MUL)
    assert (
        main([str(prog), "--device", "cpu", "--warmup", "2", "--input", "ones:2x4", "--input", "zeros:2x4", "--print"])
        == 0
    )
    assert "[[2, 2, 2, 2]," in capsys.readouterr().out  # (1 + 1) * 1, eager on CPU


# ----- GPU -------------------------------------------------------------------------------


def _calls(program, args_list):
    return [(program(args), program.graph_state.last) for args in args_list]


@pytest.mark.gpu
@needs_cuda
def test_auto_replays_with_new_inputs_each_call():
    module = hir.parse(ADD_MUL)
    auto, eager = Program(module, device="cuda"), Program(module, device="cuda", graph=False)
    lasts, alive = [], []  # alive: no two calls get buffers at the same addresses
    for seed in range(5):
        a = torch.randn(8, 4, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        o_auto, o_eager = torch.zeros(8, 4, device="cuda"), torch.zeros(8, 4, device="cuda")
        alive += [a, o_auto]
        (got,) = auto([a, o_auto])
        lasts.append(auto.graph_state.last)
        (want,) = eager([a, o_eager])
        torch.cuda.synchronize()
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(o_auto, o_eager)  # the preallocated output is written back
    assert lasts == ["eager (first call of this signature)", "capture", "replay", "replay", "replay"]
    state = auto.graph_state
    assert state.active and state.captures == 1 and state.replays == 4 and state.graphs == 1


@pytest.mark.gpu
@needs_cuda
def test_auto_new_shapes_capture_again_lru():
    program = Program(hir.parse(ADD_MUL), device="cuda", graph_cache_size=2)
    shapes = [2, 2, 3, 3, 2, 5, 5, 3]
    alive = []  # fresh buffers every call: graphs on static buffers, none bound
    for rows in shapes:
        a = torch.randn(rows, 4, device="cuda")
        alive += [a, torch.empty(rows, 4, device="cuda")]
        (t,) = program(alive[-2:])
        torch.cuda.synchronize()
        torch.testing.assert_close(t, (a + a) * a)
    state = program.graph_state
    # 2 and 3 captured (each after one eager call); 2 replayed; 5 captured, evicting 3; 3 seen
    # before, so captured again at once, evicting 2
    assert state.captures == 4 and state.graphs == 2
    assert [s[0][0] for s in state.signatures] == [(5, 4), (3, 4)]


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("mode", ["auto", True])
def test_host_scalar_change_recaptures(mode):
    program = Program(hir.parse(ACCUMULATE), device="cuda", graph=mode)
    a = torch.arange(8.0, device="cuda").reshape(2, 4)
    alive = []
    for n in (2, 2, 2, 3, 3, 3, 2):
        o = torch.ones(2, 4, device="cuda")
        alive.append(o)
        whole, row = program([a, o, n])
        torch.cuda.synchronize()
        torch.testing.assert_close(o, 1 + n * a)
        assert whole is o  # an output that is an input is the caller's tensor
        assert row.data_ptr() == o[1].data_ptr()  # and a view of it, the same view
    assert program.graph_state.captures == 2


@pytest.mark.gpu
@needs_cuda
def test_outputs_copied_by_default_static_on_request():
    module = hir.parse(ADD_MUL)
    a1, a2 = torch.ones(4, 4, device="cuda"), torch.full((4, 4), 2.0, device="cuda")
    copied = Program(module, device="cuda")
    outs = [copied([a, torch.empty(4, 4, device="cuda")])[0] for a in (a1, a1, a1, a2)]
    torch.cuda.synchronize()
    torch.testing.assert_close(outs[2], torch.full((4, 4), 2.0, device="cuda"))  # not overwritten by the a2 call
    torch.testing.assert_close(outs[3], torch.full((4, 4), 8.0, device="cuda"))
    assert outs[2].data_ptr() != outs[3].data_ptr()
    static = Program(module, device="cuda", static_outputs=True)
    a, o = torch.empty(4, 4, device="cuda"), torch.empty(4, 4, device="cuda")
    outs = [static([a.copy_(x), o])[0] for x in (a1, a1, a1, a2)]  # the same buffers: one graph
    torch.cuda.synchronize()
    assert static.graph_state.last == "replay (bound)"
    assert outs[2].data_ptr() == outs[3].data_ptr()  # the graph's buffer, overwritten by the next call
    torch.testing.assert_close(outs[2], torch.full((4, 4), 8.0, device="cuda"))


@pytest.mark.gpu
@needs_cuda
def test_non_capturable_and_aliased_inputs_run_eagerly():
    module = hir.parse(ADD_MUL)
    tracked = Program(module, device="cuda", track_memory=True)
    assert not tracked.graph_state.active and "track_memory" in tracked.graph_state.reason
    for _ in range(3):
        tracked([torch.ones(2, 4, device="cuda"), torch.empty(2, 4, device="cuda")])
    assert tracked.memory.allocations == 3  # every call really ran its alloc step
    with pytest.raises(HirError, match="track_memory"):
        Program(module, device="cuda", graph=True, track_memory=True)
    program, eager = Program(module, device="cuda"), Program(module, device="cuda", graph=False)
    alive = []
    for call in range(3):  # a and o are the same tensor (o = a + a, then t = o * a), new each call
        buf = torch.ones(2, 4, device="cuda")
        alive.append(buf)
        (t,) = program([buf, buf])
        assert program.graph_state.last == (
            "eager (first call of this signature)" if call == 0 else "eager (tensor inputs share memory)"
        )
    torch.cuda.synchronize()
    assert program.graph_state.captures == 0
    # the same shared buffer every call: a graph bound to it keeps the aliasing exactly
    buf, ref = torch.ones(2, 4, device="cuda"), torch.ones(2, 4, device="cuda")
    for _ in range(4):
        (t,) = program([buf, buf])
        (want,) = eager([ref, ref])
        torch.cuda.synchronize()
        torch.testing.assert_close(t, want)
        torch.testing.assert_close(buf, ref)
    assert program.graph_state.last == "replay (bound)" and program.graph_state.bound == 1


@pytest.mark.gpu
@needs_cuda
def test_auto_binds_a_graph_to_buffers_passed_again():
    """The same buffers on two calls in a row: the graph reads and writes them directly (no
    copies), so in-place changes between calls are seen; other buffers get a static graph."""
    module = hir.parse(ADD_MUL)
    auto, eager = Program(module, device="cuda"), Program(module, device="cuda", graph=False)
    a, o = torch.randn(8, 4, device="cuda"), torch.zeros(8, 4, device="cuda")
    a2, o2 = torch.randn(8, 4, device="cuda"), torch.zeros(8, 4, device="cuda")
    lasts, outs = [], []
    for step, (x, out) in enumerate([(a, o), (a, o), (a, o), (a2, o2), (a, o), (a2, o2), (a, o)]):
        x.add_(step)  # the caller changes its input in place between calls
        (got,) = auto([x, out])
        lasts.append(auto.graph_state.last)
        ref_out = torch.zeros(8, 4, device="cuda")
        (want,) = eager([x.clone(), ref_out])
        torch.cuda.synchronize()
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(out, ref_out)  # the preallocated output is the caller's buffer
        outs.append(got)
    # (a2, o2) twice in a row (calls 4 and 6, call 5 served by a's bound graph) binds too
    assert lasts == [
        "eager (first call of this signature)",
        "capture (bound)",
        "replay (bound)",
        "capture",
        "replay (bound)",
        "capture (bound)",
        "replay (bound)",
    ]
    state = auto.graph_state
    assert state.captures == 3 and state.graphs == 3 and state.bound == 2
    assert len({t.data_ptr() for t in outs}) == len(outs)  # copied out: earlier results stay intact


@pytest.mark.gpu
@needs_cuda
def test_no_garbage_collection_inside_a_capture():
    """Python's cyclic collector stays off while a graph is captured: a collection there can
    free an earlier program's symmetric-memory buffer, a CUDA call that aborts a capturing
    process (the 4-GPU option matrix did, issue 39's run 8). With the threshold at 1 a
    collection would start at almost every allocation the capture makes."""
    import gc

    seen = []

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(torch.cuda.is_current_stream_capturing())

    threshold = gc.get_threshold()
    gc.callbacks.append(record)
    gc.set_threshold(1, 1, 1)
    try:
        program = Program(hir.parse(ADD_MUL), device="cuda", graph=True)
        a, o = torch.randn(8, 4, device="cuda"), torch.zeros(8, 4, device="cuda")
        for _ in range(3):
            (t,) = program([a, o])
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*threshold)
    torch.testing.assert_close(t, (a + a) * a)
    assert program.graph_state.captures == 1
    assert seen and not any(seen), f"{sum(seen)} collections started during the capture"
