"""The stream passes are rewrite patterns (passes/streams/): rooted on the ops they rewrite,
and combinable with other patterns and with upstream folding in one greedy driver run;
buffer reuse, whose rewrites reach around its loop, is a function pass."""

import pytest
import torch

import hir
from hir.dialect import OP_CLASSES
from hir.passes import PassFailure
from hir.passes.base import FunctionPass
from hir.passes.patterns import GuardedRewritePatternSet, exact_greedy_config
from hir.passes.streams.expand_stream_loops import populate_expand_stream_loops_patterns
from hir.passes.streams.fuse_loops import populate_fuse_loops_patterns
from hir.passes.streams.reuse_stream_buffers import ReuseStreamBuffers
from hir.passes.streams.stream_lowering import populate_stream_lowering_patterns

# Two stream-parallel ops whose output sizes are arith expressions (2 + 2 and 2 * 2): the
# passes alone see different extents and an arith.muli between the loops, so they keep two
# loops; with upstream folding in the same greedy run both sizes fold to the constant 4,
# memref.dim of each buffer folds to it, and the loops fuse.
PROGRAM = """func.func @main(%arg0: memref<?x8xf32>) -> memref<?x8xf32> {
  %c2 = arith.constant 2 : index
  %n = arith.addi %c2, %c2 : index
  %t = memref.alloc(%n) : memref<?x8xf32>
  "hir.set"(%arg0, %t) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  %m = arith.muli %c2, %c2 : index
  %out = memref.alloc(%m) : memref<?x8xf32>
  "hir.binary"(%t, %t, %out) {kind = "add", stream_axis = 0 : i64}
      : (memref<?x8xf32>, memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %out : memref<?x8xf32>
}
"""


def test_stream_patterns_mix_with_upstream_folding_in_one_greedy_run():
    x = torch.randn(4, 8)
    (expected,) = hir.run(hir.parse(PROGRAM), [x], device="cpu")

    passes = hir.lower(hir.parse(PROGRAM), "hir-stream-lowering,hir-fuse-loops")
    assert str(passes).count('"hir.stream_for"') == 2  # two loops: not fusable without folding

    module = hir.parse(PROGRAM)
    with module.context:
        patterns = GuardedRewritePatternSet()
        populate_stream_lowering_patterns(patterns)
        populate_fuse_loops_patterns(patterns)
        config = exact_greedy_config()
        config.enable_folding = True  # upstream's folders (arith, memref.dim of an alloc)
        config.enable_constant_cse = True
        patterns.apply_greedily(module, config)
    text = str(module)
    assert "arith.addi" not in text and "arith.muli" not in text, text
    assert text.count('"hir.stream_for"') == 1 and text.count('"hir.get_current_stream"') == 1, text
    assert text.count("memref.alloc(%c4) : memref<?x8xf32>") == 2, (
        text
    )  # folded sizes, types kept (no canonicalization pattern ran)
    module.operation.verify()
    (got,) = hir.run(module, [x], device="cpu")
    assert torch.equal(got, expected)


def test_pattern_failure_surfaces_after_the_driver():
    module = hir.parse("""func.func @main(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %out = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %out) {stream_axis = 0 : i64} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  return %out : memref<4x8xf32>
}
""")
    with module.context:
        patterns = GuardedRewritePatternSet()
        populate_stream_lowering_patterns(patterns, chunks=3)
        with pytest.raises(
            PassFailure, match="has stream axis 0 of extent 4, which does not split into 3 stream chunks"
        ):
            patterns.apply_greedily(module, exact_greedy_config())


@pytest.mark.parametrize(
    "populate",
    [
        populate_stream_lowering_patterns,
        populate_fuse_loops_patterns,
        populate_expand_stream_loops_patterns,
    ],
)
def test_patterns_are_rooted_on_the_ops_they_rewrite(populate):
    with hir.new_context():
        patterns = GuardedRewritePatternSet()
        populate(patterns)
    assert patterns.roots and all(root in OP_CLASSES for root in patterns.roots), patterns.roots
    assert not {"builtin.module", "func.func"} & set(patterns.roots)


def test_stream_lowering_has_a_pattern_per_streamable_op_kind():
    with hir.new_context():
        patterns = GuardedRewritePatternSet()
        populate_stream_lowering_patterns(patterns)
    streamable = [name for name, cls in OP_CLASSES.items() if cls.STREAMABLE]
    assert set(streamable) <= set(patterns.roots) and len(patterns.roots) == len(set(patterns.roots))


def test_buffer_reuse_is_a_function_pass():
    """A rewrite replaces the allocation before its loop and memref.dim ops anywhere: whole-
    function work, so a plain walk over each function, not a pattern on the loop."""
    assert issubclass(ReuseStreamBuffers, FunctionPass)
