"""The fast paths that keep a big module's parse free of per-op Python work are sound: the
nesting guard's bound (hir.dialect.context.check_nesting), computed with C-level string
passes, is never below the depth the exact scan measures, and the placement walk is skipped
(hir.dialect.placement_checks.may_hold_placements) only for text whose memref types have no
memory space."""

import random

import pytest

from hir.core import HirError
from hir.dialect.context import _NESTING_TOKENS, _nesting_bound, check_nesting, parse
from hir.dialect.placement_checks import may_hold_placements


def exact_depth(text: str) -> int:
    """The deepest nesting as check_nesting's exact scan counts it."""
    depth = deepest = 0
    for m in _NESTING_TOKENS.finditer(text):
        c = m.group()
        if c in "{([<":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "})]>":
            depth = max(0, depth - 1)
    return deepest


@pytest.mark.parametrize(
    "text,depth",
    [
        ('a "{{{" {b}', 1),  # brackets in strings do not count
        ("// {{{\n{", 1),  # nor in comments
        ('(-> >) {"x\\"{"}', 1),  # nor arrows; escaped quotes stay inside the string
        ("( -> ( ( ) ) )", 3),  # an arrow's '>' closes nothing
        ("}}}{{{", 3),
        ("{<[(])>}", 4),
    ],
)
def test_bound_of_known_texts(text, depth):
    assert exact_depth(text) == depth
    assert _nesting_bound(text, 512) >= depth


def test_bound_is_never_below_the_exact_depth():
    rng = random.Random(0)
    for _ in range(5000):
        text = "".join(rng.choice('{}()[]<>"/-\\\nxé') for _ in range(rng.randint(1, 40)))
        assert _nesting_bound(text, 512) >= exact_depth(text), text


def test_deep_text_is_still_refused_where_it_goes_too_deep():
    text = "func.func @f() {\n" + "(" * 600 + ")" * 600 + "\n}\n"
    with pytest.raises(HirError, match=r"^f.mlir:2:512: error: nesting deeper than 512 levels"):
        check_nesting(text, "f.mlir")
    check_nesting("{" * 300 + "}" * 300 + "(" * 300 + ")" * 300, "ok.mlir")  # 300 deep, 1200 brackets: fine


@pytest.mark.parametrize(
    "text,walk",
    [
        ("memref<4xf32>", False),
        ("memref<4x?xf32, strided<[?, 1], offset: ?>>", False),
        ("memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>", False),
        ("memref<4xvector<4xf32>>", False),
        ("memref<4xf32, 1>", True),
        ("memref<*xf32, 1>", True),
        ("memref<4xf32, strided<[1], offset: ?>, #hir.shard<[0, 1], 0>>", True),
        ("memref<4xf32, affine_map<(d0) -> (d0)>, 1>", True),  # the map's arrow closes nothing
        ("memref<4xf32, #map>", True),  # an alias may name a memory space
        ("memref<4xf32, #a<b<c<d>>>>", True),  # deeper than the pattern reads
        ('"memref<"', True),
    ],
)
def test_placement_walk_is_skipped_only_without_memory_spaces(text, walk):
    assert may_hold_placements(text) == walk


def test_memory_spaces_are_still_refused():
    text = "func.func @f(%a: memref<4xf32, 1>) {\n  return\n}\n"
    with pytest.raises(HirError, match="hir buffers use #hir.shard"):
        parse(text, "f.mlir")
