"""hir-p2p-pipeline's forms of a contraction + sum all-reduce (the tensor-parallel form):
``allreduce=rs-ag`` (a pipelined reduce-scatter of the rows + an all-gather), ``chunked`` (row
blocks) and ``auto``, and the ``overlap=auto`` rule of passes/p2p/cost.py on the TP MLP's
second matmul at the benchmark's sizes (benchmarks/tp_overlap.py: tokens 8192, d_model 4096,
hidden 16384, bf16). The programs run before and after in test_transforms_run_equal.py
(test/Transforms/p2p-allreduce.mlir) and on GPUs in test_p2p_matrix_gpu.py."""

import pytest

import hir
from hir.passes import overlap_pipeline

CONVERT = "hir-convert-to-communication{backend=cuda}"


def tp_matmul(world: int, tokens: int, d_model: int, hidden: int) -> str:
    """The row-parallel matmul of the TP MLP as hir.from_torch imports it: the activation
    [D, T, hidden / D] and the weight [D, hidden / D, d] split on the summed axis 0, the sum
    replicated."""
    mesh, k = ", ".join(str(r) for r in range(world)), hidden // world
    split, whole = f"#hir.shard<array<i64: {mesh}>, 0 : i64>", f"#hir.shard<array<i64: {mesh}>, -1 : i64>"
    a = f"memref<{world}x{tokens}x{k}xbf16, {split}>"
    w = f"memref<{world}x{k}x{d_model}xbf16, {split}>"
    p = f"memref<{world}x{tokens}x{d_model}xbf16, {split}>"
    o = f"memref<{tokens}x{d_model}xbf16, {whole}>"
    return f"""func.func @main(%a: {a}, %w: {w}) -> {o} {{
  %partial = memref.alloc() : {p}
  "hir.matmul"(%a, %w, %partial) : ({a}, {w}, {p}) -> ()
  %out = memref.alloc() : {o}
  "hir.reduction"(%partial, %out) {{axes = array<i64: 0>, kind = "sum"}} : ({p}, {o}) -> ()
  return %out : {o}
}}"""


def _form(text: str) -> str:
    """Which form a lowered module runs the pair in."""
    if '"hir.allreduce"' not in text:
        assert '"hir.shift"' in text and '"hir.allgather"' in text, text[:2000]
        return "rs-ag"
    return "chunked" if '"hir.alias_chunk"' in text else "whole"


def _lower(text: str, pipeline: str) -> str:
    module = hir.parse(text, "tp.mlir")
    hir.lower(module, pipeline)
    return str(module)


@pytest.mark.parametrize("world", [2, 4])
def test_overlap_auto_picks_rs_ag_at_the_benchmark_size(world):
    """The rule (cost.py): 2 ranks whole 911 us, rs-ag 839 us; 4 ranks whole 680 us, rs-ag
    592 us at the default copy-gbps / compute-tflops: hir-lower-overlap takes rs-ag, its
    reduce-scatter over copy engines (hir.shift with backend "cuda"), the chunks by the
    reduce-scatter's own rule."""
    text = _lower(tp_matmul(world, 8192, 4096, 16384), overlap_pipeline("auto"))
    assert _form(text) == "rs-ag"
    assert 'backend = "cuda"' in text and '"hir.allgather"' in text


@pytest.mark.parametrize(
    "world,tokens,options,expected",
    [
        (4, 64, "", "whole"),  # under a microsecond a step: the steps cost more than they hide
        (4, 8192, " step-us=200", "whole"),  # 3 * min(56, 86) = 168 us < 4 * 200 us
        (2, 8192, " copy-gbps=30000", "whole"),  # a 100x faster all-reduce leaves nothing to hide
        (8, 8192, "", "whole"),  # 7 * min(28, 21.5) = 150 us < 8 * 20 us: eight steps cost more than they hide
        (8, 16384, "", "rs-ag"),  # twice the tokens: 7 * min(56, 43) = 301 us > 160 us
    ],
)
def test_overlap_auto_rule(world, tokens, options, expected):
    """overlap=auto takes rs-ag exactly where (n - 1) * min(t_c, t_m / n) > n * step-us, and
    never the row blocks (their NCCL all-reduces take the matmul's SMs: cost.py)."""
    text = _lower(tp_matmul(world, tokens, 4096, 16384), f"{CONVERT},hir-p2p-pipeline{{overlap=auto{options}}}")
    assert _form(text) == expected


@pytest.mark.parametrize(
    "options,expected",
    [
        ("allreduce=rs-ag", "rs-ag"),
        ("", "rs-ag"),  # allreduce=auto, overlap=on: the rs-ag form where the rows split
        ("allreduce=chunked chunks=4", "chunked"),
        ("allreduce=chunked chunks=auto", "whole"),  # the rule never chunks
        ("allreduce=chunked overlap=auto chunks=4", "whole"),
        ("allreduce=rs-ag overlap=off", "whole"),
    ],
)
def test_forced_forms(options, expected):
    """allreduce=rs-ag|chunked names the form; overlap=on (default) forces it, auto asks the
    rule, off keeps the pair whole."""
    text = _lower(tp_matmul(4, 8192, 4096, 16384), f"{CONVERT},hir-p2p-pipeline{{{options}}}")
    assert _form(text) == expected


def test_rs_ag_takes_the_reduce_scatter_options():
    """The rs-ag form's reduce-scatter is built by the reduce-scatter pattern with the pass's
    options: accumulate=1 makes it the ring ({accumulate} matmuls, no slot reduction),
    comm-stream=1 a high-priority comm stream, transfer=push pushed shifts."""
    text = _lower(
        tp_matmul(4, 8192, 4096, 16384),
        f"{CONVERT},hir-p2p-pipeline{{allreduce=rs-ag accumulate=1 chunks=auto transfer=push comm-stream=1}}",
    )
    assert _form(text) == "rs-ag"
    assert "{accumulate}" in text and '"hir.reduction"' not in text and 'transfer = "push"' in text
    assert "hir.high_priority_streams" in text


def test_uneven_rows_stay_whole_under_rs_ag():
    """Rows that do not split evenly over the team have no rs-ag form: allreduce=rs-ag
    leaves the pair whole, auto falls back to the row blocks a fixed chunks asks for."""
    text = tp_matmul(4, 8190, 64, 256)
    assert _form(_lower(text, f"{CONVERT},hir-p2p-pipeline{{allreduce=rs-ag}}")) == "whole"
    assert _form(_lower(text, f"{CONVERT},hir-p2p-pipeline{{chunks=2}}")) == "chunked"


def test_bad_allreduce_value_names_the_all_reduce():
    """A bad allreduce= value fails at the all-reduce it would shape, naming the values."""
    module = hir.parse(tp_matmul(2, 8, 4, 4), "tp.mlir")
    with pytest.raises(hir.HirError) as info:
        hir.lower(module, f"{CONVERT},hir-p2p-pipeline{{allreduce=both}}", source_name="tp.mlir")
    assert str(info.value).startswith(
        "tp.mlir:5:3: error: hir-p2p-pipeline: allreduce 'both' is not one of auto, rs-ag, chunked"
    ), str(info.value)
