"""Issue 5, items 3-5: stream buffer reuse (hir-reuse-stream-buffers: same results, fewer
bytes), CUDA graph capture of a lowered multi-stream program (replay == eager on new
inputs; GPU only) and ``hir-run --trace`` (a Chrome trace, also on CPU)."""

import json

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.core import HirError  # noqa: E402
from hir.interpreter import Program  # noqa: E402
from hir.tools.run_cli import main  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def mlp(chunks: int = 8, rows: int = 4, k: int = 16, n: int = 24, dt: str = "f32") -> str:
    """h = x @ w1 ; g = h * h ; out = g @ w2 on [chunks, rows, k] with stream-parallel chunks."""
    X, W1, H, W2 = (
        f"memref<{chunks}x{rows}x{k}x{dt}>",
        f"memref<{k}x{n}x{dt}>",
        f"memref<{chunks}x{rows}x{n}x{dt}>",
        f"memref<{n}x{k}x{dt}>",
    )
    return f"""func.func @main(%x: {X}, %w1: {W1}, %w2: {W2}) -> {X} {{
  %h = memref.alloc() : {H}
  "hir.matmul"(%x, %w1, %h) {{stream_axis = 0 : i64}} : ({X}, {W1}, {H}) -> ()
  %g = memref.alloc() : {H}
  "hir.binary"(%h, %h, %g) {{kind = "mul", stream_axis = 0 : i64}} : ({H}, {H}, {H}) -> ()
  %out = memref.alloc() : {X}
  "hir.matmul"(%g, %w2, %out) {{stream_axis = 0 : i64}} : ({H}, {W2}, {X}) -> ()
  return %out : {X}
}}"""


def lowered(text: str, pipeline: str):
    module = hir.parse(text)
    hir.lower(module, pipeline)
    return module


def inputs(seed: int, chunks: int = 8, rows: int = 4, k: int = 16, n: int = 24, device: str = "cpu") -> list:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(chunks, rows, k), (k, n), (n, k)]
    return [torch.randn(s, generator=gen).to(device) for s in shapes]


# ----- stream buffer reuse --------------------------------------------------------------


@pytest.mark.parametrize("pool", [1, 2, 4, 8])
def test_reuse_same_results_fewer_bytes(pool):
    """Equal outputs with and without reuse (any pool size: the loop's stream follows the
    slot), and the intermediates shrink from 8 chunks to 4 slots."""
    text = mlp()
    args = inputs(0)
    plain = Program(lowered(text, "hir-lower"), device="cpu", num_streams=pool, track_memory=True)
    reuse = Program(lowered(text, "hir-lower-reuse"), device="cpu", num_streams=pool, track_memory=True)
    (want,), (got,) = plain(args), reuse(args)
    torch.testing.assert_close(got, want)
    chunk_bytes = 4 * 24 * 4  # one [4, 24] f32 slice of h or g
    assert plain.memory.peak - reuse.memory.peak == 2 * (8 - 4) * chunk_bytes
    assert reuse.memory.current == 8 * 4 * 16 * 4  # only the output is left


def test_reuse_pipeline_peak_close_to_unpipelined():
    """The issue's goal on a 64-chunk program: pipelined + reuse within 5% of unpipelined
    (plain pipelining holds every intermediate at full size: 1.5x)."""
    text = mlp(chunks=64, rows=2, k=16, n=16)
    args = inputs(1, chunks=64, rows=2, k=16, n=16)
    peaks = {}
    for pipeline in ("hir-insert-deallocations", "hir-lower", "hir-lower-reuse"):
        program = Program(lowered(text, pipeline), device="cpu", track_memory=True)
        program(args)
        peaks[pipeline] = program.memory.peak
    base = peaks["hir-insert-deallocations"]
    assert peaks["hir-lower"] == pytest.approx(1.5 * base)
    assert peaks["hir-lower-reuse"] <= 1.05 * base


def test_reuse_pass_options_and_idempotence():
    module = lowered(mlp(), "hir-lower-reuse")
    text = str(module)
    assert text.count("arith.remui") == 1 and "memref<4x4x24xf32>" in text
    hir.lower(module, "hir-reuse-stream-buffers")
    assert str(module) == text  # nothing left to rewrite
    two = str(lowered(mlp(), "hir-stream-lowering,hir-fuse-loops,hir-reuse-stream-buffers{num-streams=2}"))
    assert "memref<2x4x24xf32>" in two
    with pytest.raises(HirError, match="num-streams must be >= 1"):
        lowered(mlp(), "hir-stream-lowering,hir-reuse-stream-buffers{num-streams=0}")


def test_reuse_keeps_outputs_and_few_chunks():
    assert "arith.remui" not in str(lowered(mlp(chunks=4), "hir-lower-reuse"))  # 4 chunks <= 4 slots


# ----- CUDA graphs ------------------------------------------------------------------------


def test_graph_needs_cuda():
    with pytest.raises(HirError, match="needs a CUDA device"):
        Program(lowered(mlp(), "hir-lower"), device="cpu", graph=True)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("pipeline", ["hir-lower", "hir-lower-reuse"])
def test_graph_replay_matches_eager(pipeline):
    """A lowered program on 4 pool streams, captured once, replayed on new inputs: the same
    results as eager interpretation; outputs come from the graph's static buffers."""
    module = lowered(mlp(chunks=16, rows=32, k=64, n=96), pipeline)
    eager = Program(module, device="cuda", num_streams=4, graph=False)
    graphed = Program(module, device="cuda", num_streams=4, graph=True, static_outputs=True)
    assert graphed.graph is not None
    first = None
    for seed in range(4):
        args = inputs(seed, chunks=16, rows=32, k=64, n=96, device="cuda")
        (want,) = eager(args)
        (got,) = graphed(args)
        torch.cuda.synchronize()
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        if first is None:
            first = got.data_ptr()
        assert got.data_ptr() == first  # the same static output buffer every replay
    assert len(graphed.streams.live()) == 4


# Host scalars, new shapes, copied outputs and graph='auto': test_graph_auto.py.


# ----- hir-run --trace -------------------------------------------------------------------


def test_trace_cpu(tmp_path):
    prog = tmp_path / "p.mlir"
    prog.write_text(str(lowered(mlp(), "hir-lower-reuse")))
    out = tmp_path / "trace.json"
    assert main([str(prog), "--device", "cpu", "--warmup", "1", "--trace", str(out)]) == 0
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    assert any("matmul" in str(e.get("name", "")) for e in events)


def test_cuda_graph_flag_on_cpu_is_an_error(tmp_path, capsys):
    prog = tmp_path / "p.mlir"
    prog.write_text(str(lowered(mlp(), "hir-lower")))
    assert main([str(prog), "--device", "cpu", "--cuda-graph"]) == 1
    assert "needs a CUDA device" in capsys.readouterr().err
