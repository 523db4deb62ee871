"""hir-p2p-pipeline is rewrite patterns (passes/p2p/): one rooted on each source collective
and one on each compute op kind (run whole beside a collective that does), none on
builtin.module or func.func; a failure raised in a pattern comes back at the op's
location through hir-opt (exit status 1, no traceback); a module holding no source
collective is left exactly as it was."""

import subprocess
import sys

import hir
from hir.dialect import OP_CLASSES, AllgatherOp, AllreduceOp, ComputeOp, MatmulOp, ReduceScatterOp
from hir.passes.p2p.analysis import PipelineAnalysis
from hir.passes.p2p.pipeline import P2PPipeline, populate_p2p_pipeline_patterns
from hir.passes.patterns import GuardedRewritePatternSet

M4 = "array<i64: 0, 1, 2, 3>"
SPLIT, FULL = f"#hir.shard<{M4}, 0 : i64>", f"#hir.shard<{M4}, -1 : i64>"


def _ag_matmul(rows: int) -> str:
    """An all-gather + matmul program in nvFuser's P2P form: A [rows, 2, 8] split on axis 0,
    gathered and multiplied slice by slice (the set on line 3)."""
    a, t, b, o = (
        f"memref<{rows}x2x8xf32, {SPLIT}>",
        f"memref<{rows}x2x8xf32, {FULL}>",
        f"memref<8x5xf32, {FULL}>",
        f"memref<{rows}x2x5xf32, {FULL}>",
    )
    return (
        f"func.func @main(%a: {a}, %b: {b}) -> {o} {{\n"
        f"  %t = memref.alloc() : {t}\n"
        f'  "hir.set"(%a, %t) {{stream_axis = 0 : i64}} : ({a}, {t}) -> ()\n'
        f"  %out = memref.alloc() : {o}\n"
        f'  "hir.matmul"(%t, %b, %out) {{stream_axis = 0 : i64}} : ({t}, {b}, {o}) -> ()\n'
        f"  return %out : {o}\n}}\n"
    )


def test_patterns_are_rooted_on_the_source_collectives():
    with hir.parse(_ag_matmul(4)).context as ctx:
        patterns = GuardedRewritePatternSet(ctx)
        populate_p2p_pipeline_patterns(patterns, PipelineAnalysis(P2PPipeline()))
    collectives = [AllgatherOp.OPERATION_NAME, ReduceScatterOp.OPERATION_NAME, AllreduceOp.OPERATION_NAME]
    compute = sorted(
        name for name, cls in OP_CLASSES.items() if issubclass(cls, ComputeOp)
    )  # the ops that may run whole
    assert (
        patterns.roots[:3] == collectives
        and sorted(patterns.roots[3:]) == compute
        and MatmulOp.OPERATION_NAME in compute
    )
    assert not {"builtin.module", "func.func"} & set(patterns.roots)


def test_the_pipeline_replaces_its_source_ops():
    module = hir.lower(hir.parse(_ag_matmul(4)), "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline")
    text = str(module)
    assert '"hir.allgather"' not in text and '"hir.wait"(%' in text and text.count('"hir.shift"') == 1, text
    assert text.count('"hir.matmul"') == 2  # step 0 on the own shard, the loop of peer steps


def test_a_failure_in_a_pattern_is_located_through_hir_opt(tmp_path):
    """The all-gather pattern refuses 8 rows over 4 devices (one shard per device needed):
    hir-opt reports it at the set that became the all-gather, line 3, with status 1."""
    program, out = tmp_path / "prog.mlir", tmp_path / "out.mlir"
    program.write_text(_ag_matmul(8))
    out.write_text("kept\n")
    pipeline = "--pass-pipeline=builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline)"
    result = subprocess.run(
        [sys.executable, "-m", "hir.tools.opt", str(program), pipeline, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert out.read_text() == "kept\n"  # a failing run leaves its output untouched
    assert result.stderr.startswith(
        f"{program}:3:3: error: 'hir.allgather' op gathers axis 0 of extent "
        "8 over 4 devices; hir-p2p-pipeline needs one shard per device"
    ), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_module_without_source_collectives_is_left_as_it_was():
    """No collective for a pattern: the greedy driver does not run, so an unused constant
    and allocation of the input stay (the driver would erase them)."""
    text = (
        "func.func @main(%a: memref<4xf32>) -> memref<4xf32> {\n"
        "  %c7 = arith.constant 7 : index\n"
        "  %unused = memref.alloc() : memref<4xf32>\n"
        "  return %a : memref<4xf32>\n}\n"
    )
    module = hir.parse(text)
    before = str(module)
    hir.lower(module, "hir-p2p-pipeline")
    assert str(module) == before


def test_overlap_auto_keeps_compute_chunked_for_another_collective():
    """overlap=auto runs a seed-form NCCL all-gather whole; its consumer matmul also produces
    a copy-engine reduce-scatter chunked on streams, so it keeps its stream axis (which that
    collective's chunks need). With an NCCL reduce-scatter both run whole and so does the
    matmul (test/Transforms/p2p-overlap-auto-whole.mlir has the program-level case)."""
    shard, whole = "#hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>", "#hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>"
    a, full, w = f"memref<2x4x4x8xf32, {shard}>", f"memref<2x4x4x8xf32, {whole}>", "memref<8x4xf32>"
    partial, out = f"memref<2x4x4x4xf32, {shard}>", f"memref<2x4x4xf32, {shard}>"
    team = "team = array<i64: 0, 1, 2, 3>"

    def program(rs_backend: str) -> str:
        return f"""func.func @shared(%a: {a}, %w: {w}) -> {out} {{
  %full = memref.alloc() : {full}
  %g = "hir.allgather"(%a, %full) {{axis = 1 : i64, backend = "nccl", stream_axis = 0 : i64, {team}}}
      : ({a}, {full}) -> !hir.work
  "hir.wait"(%g) : (!hir.work) -> ()
  %partial = memref.alloc() : {partial}
  "hir.matmul"(%full, %w, %partial) {{stream_axis = 0 : i64}} : ({full}, {w}, {partial}) -> ()
  %out = memref.alloc() : {out}
  %r = "hir.reduce_scatter"(%partial, %out) {{axis = 1 : i64, backend = "{rs_backend}", reduction = "sum",
      scatter_axis = 2 : i64, stream_axis = 0 : i64, {team}}} : ({partial}, {out}) -> !hir.work
  "hir.wait"(%r) : (!hir.work) -> ()
  return %out : {out}
}}"""

    def stream_axes(rs_backend: str) -> dict:
        module = hir.parse(program(rs_backend), "shared.mlir")
        hir.lower(module, "hir-p2p-pipeline{overlap=auto}")
        ops = module.body.operations[0].regions[0].blocks[0].operations
        return {
            op.name: "stream_axis" in op.attributes
            for op in ops
            if op.name in ("hir.allgather", "hir.matmul", "hir.reduce_scatter")
        }

    assert stream_axes("cuda") == {"hir.allgather": False, "hir.matmul": True, "hir.reduce_scatter": True}
    assert stream_axes("nccl") == {"hir.allgather": False, "hir.matmul": False, "hir.reduce_scatter": False}
