"""Pattern callbacks under MLIR's drivers (passes/rewriting.py): an exception raised in a
pattern comes back after the driver returned, with the IR consistent, and no pattern runs
after it; the conversion passes built on it keep that promise."""

import gc

import pytest
from torch_mlir import ir, rewrite

import hir
from hir.core import HirError
from hir.dialect import SetOp
from hir.passes import PassFailure
from hir.passes.base import fail
from hir.passes.rewriting import PatternGuard

# Two sets: the first is rewritten, the second refused.
TWO_SETS = """func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  "hir.set"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  "hir.set"(%b, %c) {refuse} : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
"""


def _same_type(t: ir.Type) -> ir.Type:
    return t


def _convert_sets(module: ir.Module, guard: PatternGuard, seen: list) -> None:
    """A dialect conversion of hir.set: a set becomes a binary (x + x); one marked refuse fails."""

    def set_to_binary(op, adaptor, converter, rewriter):
        seen.append(op.operation.name)
        if "refuse" in op.attributes:
            raise fail(op.operation, "is refused")
        src, dst = adaptor.operands
        with rewriter.ip:
            ir.Operation.create("hir.binary", operands=[src, src, dst], attributes={"kind": ir.StringAttr.get("add")}, loc=op.location)
        rewriter.erase_op(op)
        return False

    target = rewrite.ConversionTarget(module.context)
    target.add_legal_op("hir.binary")
    converter = rewrite.TypeConverter()
    converter.add_conversion(_same_type)
    patterns = rewrite.RewritePatternSet(module.context)
    patterns.add_conversion(SetOp.OPERATION_NAME, guard(set_to_binary), converter)
    rewrite.apply_partial_conversion(module.operation, target, patterns.freeze())


def test_failure_comes_back_after_the_conversion():
    module = hir.parse(TWO_SETS)
    guard, seen = PatternGuard(), []
    with module.context:
        _convert_sets(module, guard, seen)
        with pytest.raises(PassFailure, match="'hir.set' op is refused") as info:
            guard.finish()
    assert str(info.value.location).endswith(":3:3)")  # the refused op, line 3
    gc.collect()
    module.operation.verify()  # consistent: the first set converted, the refused one intact
    text = str(module)
    assert text.count('"hir.binary"') == 1 and text.count('"hir.set"') == 1, text
    assert seen == ["hir.set", "hir.set"]


def test_no_pattern_runs_after_a_failure():
    module = hir.parse(TWO_SETS.replace('"hir.set"(%a, %b)', '"hir.set"(%a, %b) {refuse}'))
    guard, seen = PatternGuard(), []
    with module.context:
        _convert_sets(module, guard, seen)
    assert seen == ["hir.set"]  # the second set was never given to the pattern
    with pytest.raises(PassFailure):
        guard.finish()
    assert str(module).count('"hir.set"') == 2


def test_a_bug_in_a_pattern_keeps_its_type_and_traceback():
    module = hir.parse(TWO_SETS)
    guard = PatternGuard()

    def broken(op, rewriter):
        return {}["missing"]

    patterns = rewrite.RewritePatternSet(module.context)
    patterns.add(SetOp.OPERATION_NAME, guard(broken))
    rewrite.walk_and_apply_patterns(module.operation, patterns.freeze())
    with pytest.raises(KeyError) as info:
        guard.finish()
    assert info.traceback[-1].name == "broken"


def test_finish_says_whether_a_pattern_matched():
    module = hir.parse(TWO_SETS)
    for answer, changed in ((True, False), (False, True)):
        guard = PatternGuard()
        patterns = rewrite.RewritePatternSet(module.context)
        patterns.add(SetOp.OPERATION_NAME, guard(lambda op, rewriter: answer))
        rewrite.walk_and_apply_patterns(module.operation, patterns.freeze())
        assert guard.finish() is changed


def test_refused_resharding_after_a_lowered_one_leaves_valid_ir():
    """hir-convert-to-communication: the first set becomes an allgather, the binary after it
    reshards and is refused at its location; the module stays valid."""
    split, full = "memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>", "memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>"
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
