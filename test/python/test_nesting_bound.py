"""The fast path of the parser's nesting guard (hir.dialect.context.check_nesting): its bound,
computed with C-level string passes so that a big module costs no Python step per bracket,
is never below the depth the exact scan measures; deep input is still refused."""

import random

import pytest

from hir.core import HirError
from hir.dialect.context import _NESTING_TOKENS, _nesting_bound, check_nesting


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


@pytest.mark.parametrize("text,depth", [
    ('a "{{{" {b}', 1),  # brackets in strings do not count
    ("// {{{\n{", 1),  # nor in comments
    ('(-> >) {"x\\"{"}', 1),  # nor arrows; escaped quotes stay inside the string
    ("( -> ( ( ) ) )", 3),  # an arrow's '>' closes nothing
    ("}}}{{{", 3),
    ("{<[(])>}", 4),
])
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
