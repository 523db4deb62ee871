"""Compute regions compiled by inductor from hir's own functional trace
(:mod:`hir.interpreter.inductor_graph`), without AOT autograd's second trace: on CPU
(inductor's C++ backend), AOT autograd does not run for a region (torch's
``counters["aot_autograd"]["total"]`` counts its runs), the results and written arguments equal
eager torch, inductor's FX graph cache still answers for the same region in another program,
and the graphs that path cannot take go through ``compile_fx`` (AOT autograd) with equal
results."""

import logging

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.interpreter import Program  # noqa: E402
from hir.interpreter.inductor_graph import compile_graph  # noqa: E402

T = "memref<8x64xf32>"
# One region: t = a * b, o = t + a (an argument written), v = t - b (the result).
REGION = f"""func.func @main(%a: {T}, %b: {T}, %o: {T}) -> {T} {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()
  "hir.binary"(%t, %a, %o) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  %v = memref.alloc() : {T}
  "hir.binary"(%t, %b, %v) {{kind = "sub"}} : ({T}, {T}, {T}) -> ()
  memref.dealloc %t : {T}
  return %v : {T}
}}"""
OPTIONS = {"triton.cudagraphs": False}


def _counters():
    from torch._dynamo.utils import counters

    return counters


def test_region_compiles_without_aot_autograd_and_hits_the_fx_graph_cache():
    counters = _counters()
    torch.manual_seed(0)
    a, b = torch.randn(8, 64), torch.randn(8, 64)
    aot, cached = counters["aot_autograd"]["total"], counters["inductor"]["fxgraph_cache_hit"]
    looked_up = cached + counters["inductor"]["fxgraph_cache_miss"]
    program = Program(hir.parse(REGION), device="cpu", compile_kernels=True)
    o = torch.empty(8, 64)
    (v,) = program([a, b, o])
    torch.testing.assert_close(o, a * b + a)
    torch.testing.assert_close(v, a * b - b)
    stats = program.kernel_compile
    assert (stats.regions, stats.compiles, stats.fallbacks) == (1, 1, 0), stats.summary()
    assert counters["aot_autograd"]["total"] == aot, "AOT autograd traced the region again"
    hit = counters["inductor"]["fxgraph_cache_hit"]
    assert hit + counters["inductor"]["fxgraph_cache_miss"] == looked_up + 1, "inductor's FX graph cache was bypassed"
    again = Program(hir.parse(REGION), device="cpu", compile_kernels=True)
    o2 = torch.empty(8, 64)
    (v2,) = again([a, b, o2])
    assert torch.equal(v2, v) and torch.equal(o2, o)
    assert counters["inductor"]["fxgraph_cache_hit"] == hit + 1, "the same region was not found in the FX graph cache"
    assert counters["aot_autograd"]["total"] == aot


def _write_slice(x, out):  # a write into a view of an argument
    out[1].copy_(x[0] * 5)
    return [x.sum(0)]


def _update_and_view(x, acc):  # an in-place update, and a view of an argument it does not write
    acc.add_(x)
    return [x.view(-1), acc * 2]


_CONSTANT = torch.arange(16.0).reshape(4, 4)


def _constant(x):  # a real tensor captured by the function (a program constant)
    return [torch.ops.aten.mul.Scalar(x + _CONSTANT, 0.5)]


def _returns_written(x):  # an output that aliases the argument it writes: AOT autograd's case
    x.mul_(3)
    return [x]


def _transposes_in_place(x):  # an argument's metadata mutated: AOT autograd's case
    x.t_()
    return [x * 2]


def _run(fn, make):
    """``fn`` compiled (compile_graph) and eager on equal arguments: (outputs, arguments) of both."""
    torch.manual_seed(0)
    args = make()
    compiled, _ = compile_graph(fn, [t.clone() for t in args], OPTIONS)
    mine = [t.clone() for t in args]
    got = list(compiled(list(mine)))
    want = fn(*args)
    return got, mine, want, args


@pytest.mark.parametrize(
    "fn, make",
    [
        (_write_slice, lambda: [torch.randn(4, 4), torch.zeros(4, 4)]),
        (_update_and_view, lambda: [torch.randn(4, 4), torch.randn(4, 4)]),
        (_constant, lambda: [torch.randn(4, 4)]),
    ],
)
def test_functional_graphs_skip_aot_autograd(fn, make):
    counters = _counters()
    aot = counters["aot_autograd"]["total"]
    got, mine, want, args = _run(fn, make)
    assert counters["aot_autograd"]["total"] == aot
    for g, w in zip(got + mine, want + args):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    if fn is _update_and_view:  # inductor returns the view of the argument as a view
        assert got[0].untyped_storage().data_ptr() == mine[0].untyped_storage().data_ptr()


@pytest.mark.parametrize("fn, why", [(_returns_written, "aliases input"), (_transposes_in_place, "mutation is left")])
def test_other_graphs_go_through_aot_autograd(fn, why, caplog):
    counters = _counters()
    aot = counters["aot_autograd"]["total"]
    with caplog.at_level(logging.DEBUG, logger="hir.compile"):
        got, mine, want, args = _run(fn, lambda: [torch.randn(4, 3)])
    assert counters["aot_autograd"]["total"] == aot + 1
    assert any("through AOT autograd" in r.message and why in r.message for r in caplog.records), caplog.text
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    torch.testing.assert_close(mine[0], args[0], rtol=0, atol=0)
    if fn is _returns_written:  # the output is the argument's memory, as in eager torch
        assert got[0].untyped_storage().data_ptr() == mine[0].untyped_storage().data_ptr()


def test_a_compiled_call_lets_go_of_its_inputs():
    """Boxed calls, as AOT autograd calls inductor: a compiled segment empties the list it is
    given, so an input that only the list holds is freed inside the graph, at its last use
    there, not after the call (a training step's backward frees its saved activations as it
    goes)."""
    import weakref

    from hir.interpreter.kernels import KernelCompileStats, compiled_segment

    segment = compiled_segment(
        lambda args: [args[0].sin() * 2], "a test segment", "here", KernelCompileStats(mode=True)
    )
    for seed in range(2):  # the first call compiles; the second runs what was compiled
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(seed))
        expected, alive, args = x.sin() * 2, weakref.ref(x), [x]
        del x
        (y,) = segment(args)
        assert args == [] and alive() is None
        torch.testing.assert_close(y, expected)
