"""hir-p2p-pipeline's newer options on the IR: ``chunks=auto`` (the documented rule, on the
benchmark sizes and on 2, 4 and 8 ranks), ``transfer=push`` and ``comm-stream=1``. The
programs run before and after in test/python/ops/test_p2p.py (2, 4 and 8 Gloo ranks)."""

import pytest

import hir

P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline"


def _mesh(world: int) -> str:
    return ", ".join(str(r) for r in range(world))


def ag_matmul(world: int, M: int, K: int, N: int) -> str:
    """The P2P-form AG+matmul of benchmarks/overlap.py (bf16, N split over the ranks)."""
    mesh, m = _mesh(world), M // world
    a = f"memref<{world}x{m}x{K}xbf16, #hir.shard<array<i64: {mesh}>, 0 : i64>>"
    t = f"memref<{world}x{m}x{K}xbf16, #hir.shard<array<i64: {mesh}>, -1 : i64>>"
    b = f"memref<{K}x{N // world}xbf16, #hir.shard<array<i64: {mesh}>, -1 : i64>>"
    o = f"memref<{world}x{m}x{N // world}xbf16, #hir.shard<array<i64: {mesh}>, -1 : i64>>"
    return f"""func.func @main(%a: {a}, %b: {b}) -> {o} {{
  %tmp = memref.alloc() : {t}
  %out = memref.alloc() : {o}
  "hir.set"(%a, %tmp) {{stream_axis = 0 : i64}} : ({a}, {t}) -> ()
  "hir.matmul"(%tmp, %b, %out) {{stream_axis = 0 : i64}} : ({t}, {b}, {o}) -> ()
  return %out : {o}
}}"""


def matmul_rs(world: int, m: int, k: int, n: int) -> str:
    mesh = _mesh(world)
    a = f"memref<{world}x{world}x{m}x{k}xbf16, #hir.shard<array<i64: {mesh}>, 1 : i64>>"
    w = f"memref<1x{world}x{k}x{n}xbf16, #hir.shard<array<i64: {mesh}>, 1 : i64>>"
    p = f"memref<{world}x{world}x{m}x{n}xbf16, #hir.shard<array<i64: {mesh}>, 1 : i64>>"
    o = f"memref<{world}x{m}x{n}xbf16, #hir.shard<array<i64: {mesh}>, 0 : i64>>"
    return f"""func.func @main(%a: {a}, %w: {w}) -> {o} {{
  %partial = memref.alloc() : {p}
  "hir.matmul"(%a, %w, %partial) {{stream_axis = 0 : i64}} : ({a}, {w}, {p}) -> ()
  %out = memref.alloc() : {o}
  "hir.reduction"(%partial, %out) {{axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64}} : ({p}, {o}) -> ()
  return %out : {o}
}}"""


def _chunk_count(text: str) -> int:
    """The chunks the lowered module uses: the ``chunks`` of its alias_chunk ops, else 1."""
    found = {int(part.split(":")[0]) for part in text.split("chunks = ")[1:]}
    assert len(found) <= 1, found
    return found.pop() if found else 1


@pytest.mark.parametrize(
    "world,M,options,expected",
    [
        (4, 8192, "", 1),  # t_c 112 us, t_m 86 us a step: chunking costs more than it hides
        (4, 16384, "", 2),  # t_m 172 us: two chunks (cost 176 us against 217 us)
        (4, 16384, " chunk-us=1", 8),  # cheap chunks: as many as the rule allows
        (2, 16384, "", 4),  # two ranks: one long peer step (t_c 447 us, t_m 687 us)
        (8, 16384, "", 1),  # eight ranks: short steps (t_m 43 us), seven pay the overhead
        (4, 16384, " compute-tflops=8000", 1),  # a 10x faster matmul leaves little to hide
    ],
)
def test_auto_chunks_rule(world, M, options, expected):
    module = hir.parse(ag_matmul(world, M, 8192, 8192), "ag.mlir")
    hir.lower(module, P2P + "{chunks=auto" + options + "}")
    assert _chunk_count(str(module)) == expected


def test_auto_chunks_divides_the_axis():
    """A slice of 3 rows cannot be halved: auto keeps to the counts that divide it."""
    module = hir.parse(ag_matmul(4, 12, 1 << 20, 1 << 16), "ag.mlir")
    hir.lower(module, P2P + "{chunks=auto chunk-us=0.001}")
    assert _chunk_count(str(module)) == 1


def test_push_reduce_scatter_and_comm_stream():
    """transfer=push: the owner's %received is the symmetric buffer, the shifts push, and
    each wait runs on the receiver stream; comm-stream=1 issues the shifts on a pool stream
    the module marks high priority."""
    module = hir.parse(matmul_rs(4, 2, 4, 3), "rs.mlir")
    hir.lower(module, P2P + "{transfer=push comm-stream=1}")
    text = str(module)
    assert "hir.high_priority_streams = array<i64: 2>" in text and "hir.num_streams = 4" in text, text
    lines = [line.strip() for line in text.splitlines()]
    allocs = [line for line in lines if "memref.alloc()" in line]
    assert sum("hir.symmetric" in line for line in allocs) == 1, allocs
    shift = next(i for i, line in enumerate(lines) if '"hir.shift"' in line)
    assert 'transfer = "push"' in lines[shift], lines[shift]
    assert lines[shift + 1].startswith('"hir.set_current_stream"') and lines[shift + 2].startswith('"hir.wait"'), lines[
        shift : shift + 3
    ]


@pytest.mark.parametrize(
    "world,M,expected",
    [
        (4, 8192, 2),  # t_c 112 us > t_m 21 us a step: two parts already hide the matmul
        (4, 65536, 2),  # t_m 172 us > t_c 112 us: still two ((t_m + t_c) / 2 < t_m)
        (2, 16384, 2),
    ],
)
def test_accumulate_auto_chunks_and_form(world, M, expected):
    """accumulate=1: a ring of n - 1 shifts with offset 1, the matmuls accumulate (no
    hir.reduction), one pool stream per part; chunks=auto takes two parts (one serializes
    copy and matmul) on the benchmark's matmul+RS (K = N = 8192)."""
    m = M // world
    module = hir.parse(matmul_rs(world, m, 8192 // world, 8192), "rs.mlir")
    hir.lower(module, P2P + "{accumulate=1 chunks=auto}")
    text = str(module)
    assert _chunk_count(text) == expected
    assert "hir.reduction" not in text and text.count("{accumulate}") == (2 if world > 2 else 1), text
    assert f"hir.num_streams = {max(4, expected)}" in text, text


def test_accumulate_keeps_the_slot_form_without_an_accumulating_producer():
    """A reduce-scatter whose input an op with no accumulating form writes (hir.binary)
    keeps the slot form (one hir.reduction) under accumulate=1."""
    p = "memref<2x2x2x3xbf16, #hir.shard<array<i64: 0, 1>, 1 : i64>>"
    o = "memref<2x2x3xbf16, #hir.shard<array<i64: 0, 1>, 0 : i64>>"
    module = hir.parse(
        f"""func.func @main(%x: {p}) -> {o} {{
  %partial = memref.alloc() : {p}
  "hir.binary"(%x, %x, %partial) {{kind = "add", stream_axis = 0 : i64}} : ({p}, {p}, {p}) -> ()
  %out = memref.alloc() : {o}
  "hir.reduction"(%partial, %out) {{axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64}} : ({p}, {o}) -> ()
  return %out : {o}
}}""",
        "rs.mlir",
    )
    hir.lower(module, P2P + "{accumulate=1}")
    lowered = str(module)
    assert "hir.shift" in lowered and "hir.reduction" in lowered and "{accumulate}" not in lowered, lowered


@pytest.mark.parametrize(
    "world,M,program,pipelined",
    [
        (4, 8192, "ag", True),  # 3 * min(112, 86) = 258 us hidden > 80 us of steps
        (4, 64, "ag", False),  # under a microsecond a step: the collective runs whole
        (8, 16384, "ag", True),
        (2, 1024, "ag", False),  # min(t_c, t_m) = min(28, 43) us < 2 * 20 us
        (4, 8192, "rs", True),
        (4, 64, "rs", False),
    ],
)
def test_overlap_auto_rule(world, M, program, pipelined):
    """overlap=auto pipelines a P2P-form collective when (n-1)·min(t_c, t_m) > n·step-us;
    otherwise hir-lower keeps it whole (overlap=off: never; on: always)."""
    text = ag_matmul(world, M, 8192, 8192) if program == "ag" else matmul_rs(world, M // world, 8192 // world, 8192)
    for overlap, expected in (("auto", pipelined), ("on", True), ("off", False)):
        module = hir.parse(text, "p.mlir")
        hir.lower(module, P2P + "{overlap=" + overlap + "}")
        lowered = str(module)
        assert ("hir.shift" in lowered) == expected and (
            "hir.allgather" in lowered or "hir.reduce_scatter" in lowered
        ) != expected, (overlap, lowered[:400])


def test_hir_lower_overlap_pipeline():
    """The named pipeline is hir-lower with hir-p2p-pipeline{overlap=auto} first; its
    expansion parses, and a bad overlap value is an error naming the option."""
    from hir.passes import PIPELINES, overlap_pipeline, parse_pipeline

    assert PIPELINES["hir-lower-overlap"] == overlap_pipeline("auto")
    names = [e.hir_pass.name for e in parse_pipeline("hir-lower-overlap") if e.hir_pass]
    assert names[:3] == ["hir-insert-reshardings", "hir-convert-to-communication", "hir-p2p-pipeline"]
    module = hir.parse(ag_matmul(4, 8192, 8192, 8192), "ag.mlir")
    with pytest.raises(hir.HirError, match="overlap 'sometimes' is not one of on, auto, off"):
        hir.lower(module, P2P + "{overlap=sometimes}")
