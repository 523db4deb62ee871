"""Pattern callbacks under MLIR's drivers (passes/patterns.py, GuardedRewritePatternSet): an
exception raised in a pattern comes back after the driver returned, with the IR consistent,
and no pattern runs after it; the conversion passes built on it keep that promise."""

import gc

import pytest
from torch_mlir import ir, rewrite

import hir
from hir.core import HirError
from hir.dialect import SetOp
from hir.passes import PassFailure
from hir.passes.base import fail
from hir.passes.patterns import GuardedRewritePatternSet, same_types

# Two sets: the first is rewritten, the second refused.
TWO_SETS = """func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  "hir.set"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  "hir.set"(%b, %c) {refuse} : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
"""


def _convert_sets(module: ir.Module, seen: list) -> None:
    """A dialect conversion of hir.set: a set becomes a binary (x + x); one marked refuse fails."""

    def set_to_binary(op, adaptor, converter, rewriter):
        seen.append(op.operation.name)
        if "refuse" in op.attributes:
            raise fail(op.operation, "is refused")
        src, dst = adaptor.operands
        with rewriter.ip:
            ir.Operation.create(
                "hir.binary", operands=[src, src, dst], attributes={"kind": ir.StringAttr.get("add")}, loc=op.location
            )
        rewriter.erase_op(op)
        return False

    target = rewrite.ConversionTarget(module.context)
    target.add_legal_op("hir.binary")
    patterns = GuardedRewritePatternSet(module.context)
    patterns.add_conversion(SetOp, set_to_binary, same_types())
    assert patterns.roots == ["hir.set"]
    patterns.apply_partial_conversion(module, target)


def test_failure_comes_back_after_the_conversion():
    module = hir.parse(TWO_SETS)
    seen = []
    with module.context:
        with pytest.raises(PassFailure, match="'hir.set' op is refused") as info:
            _convert_sets(module, seen)
    assert str(info.value.location).endswith(":3:3)")  # the refused op, line 3
    gc.collect()
    module.operation.verify()  # consistent: the first set converted, the refused one intact
    text = str(module)
    assert text.count('"hir.binary"') == 1 and text.count('"hir.set"') == 1, text
    assert seen == ["hir.set", "hir.set"]


def test_no_pattern_runs_after_a_failure():
    module = hir.parse(TWO_SETS.replace('"hir.set"(%a, %b)', '"hir.set"(%a, %b) {refuse}'))
    seen = []
    with module.context:
        with pytest.raises(PassFailure):
            _convert_sets(module, seen)
    assert seen == ["hir.set"]  # the second set was never given to the pattern
    assert str(module).count('"hir.set"') == 2


@pytest.mark.parametrize("driver", ["walk", "greedy"])
def test_a_bug_in_a_pattern_keeps_its_type_and_traceback(driver):
    from hir.passes.patterns import exact_greedy_config

    module = hir.parse(TWO_SETS)

    def broken(op, rewriter):
        return {}["missing"]

    patterns = GuardedRewritePatternSet(module.context)
    patterns.add(SetOp, broken)
    with pytest.raises(KeyError) as info:
        if driver == "walk":
            patterns.walk(module)
        else:
            patterns.apply_greedily(module, exact_greedy_config())
    assert info.traceback[-1].name == "broken"
    assert str(module).count('"hir.set"') == 2


def test_refused_resharding_after_a_lowered_one_leaves_valid_ir():
    """hir-convert-to-communication: the first set becomes an allgather, the binary after it
    reshards and is refused at its location; the module stays valid."""
    split, full = (
        "memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>",
        "memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>",
    )
    text = (
        f"func.func @main(%a: {split}, %b: {split}) -> {full} {{\n"
        f"  %g = memref.alloc() : {full}\n"
        f'  "hir.set"(%a, %g) : ({split}, {full}) -> ()\n'
        f"  %out = memref.alloc() : {full}\n"
        f'  "hir.binary"(%g, %b, %out) {{kind = "add"}} : ({full}, {split}, {full}) -> ()\n'
        f"  return %out : {full}\n}}\n"
    )
    module = hir.parse(text, "prog.mlir")
    with pytest.raises(HirError, match=r"prog.mlir:5:3: error: 'hir.binary' op is resharding"):
        hir.lower(module, "hir-convert-to-communication", source_name="prog.mlir")
    gc.collect()
    module.operation.verify()
    assert '"hir.allgather"' in str(module) and '"hir.binary"' in str(module)
