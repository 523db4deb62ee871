"""Checking every ``#hir.shard`` placement of a module where it is written (``hir-opt``,
``hir.parse``, ``Program``): one located error line per invalid placement."""

import re

from torch_mlir import ir

from hir.dialect.base import VerifyError
from hir.dialect.locations import format_location
from hir.dialect.sharding import sharding_of

# Brackets up to 3 deep inside; an arrow (an inline affine map's "->") closes none.
_MEMREF = re.compile(r"memref<(?:->|[^<>]|<(?:->|[^<>]|<(?:->|[^<>])*>)*>)*>")
_LAYOUTS = ("strided<", "affine_map<")


def may_hold_placements(text: str) -> bool:
    """Whether MLIR ``text`` may give a memref a memory space (an ``#hir.shard`` placement or
    another), which :func:`check_placements` checks. It walks every op in Python (seconds on a
    module of hundreds of thousands of ops); the text's distinct memref types, found by a
    C-level scan, tell when no type has one. Any doubt (a type nested deeper than the
    pattern reads, a layout or space written as an alias) answers True."""
    found = _MEMREF.findall(text)
    if len(found) != text.count("memref<"):
        return True
    return any(_may_have_memory_space(t) for t in set(found))


def _may_have_memory_space(memref: str) -> bool:
    """Whether the memref type ``memref`` (text) has a parameter after its shape and element
    type other than an inline layout."""
    parts, depth, start = [], 0, len("memref<")
    for i in range(start, len(memref) - 1):
        c = memref[i]
        if c in "<[({":
            depth += 1
        elif c in ">])}" and memref[i - 1 : i + 1] != "->":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(memref[start:i].strip())
            start = i + 1
    parts.append(memref[start:-1].strip())
    return any(not part.startswith(_LAYOUTS) for part in parts[1:])


def check_placements(op: ir.Operation, source_name: str | None = None, world_size: int | None = None) -> list[str]:
    """Every ``#hir.shard`` placement in ``op`` (op results, block arguments such as a
    function's), checked where it is written: one ``file:line:col: error: ...`` line per
    invalid placement (a split that does not divide, a malformed mesh) and, given
    ``world_size``, per placement naming a device that has no rank in the run. Each distinct
    type is checked once; the first place it appears is reported."""
    checked: dict = {}
    errors: list[str] = []

    def check(t: ir.Type, loc: ir.Location, what: str) -> None:
        if t in checked or not isinstance(t, ir.MemRefType) or t.memory_space is None:
            return
        checked[t] = True
        try:
            sharding = sharding_of(t, what)
        except VerifyError as err:
            errors.append(f"{format_location(loc, source_name)}: error: {err} (in {t})")
            return
        if sharding is not None and world_size is not None and max(sharding.mesh) >= world_size:
            errors.append(
                f"{format_location(loc, source_name)}: error: {what} is placed on devices {list(sharding.mesh)} but "
                f"the run has {world_size} rank(s): device {max(sharding.mesh)} has no rank to compute its part "
                f"(run with at least {max(sharding.mesh) + 1} ranks: hir-run --nproc N, torchrun --nproc_per_node N)"
            )

    def visit(inner: ir.Operation) -> ir.WalkResult:
        for i, result in enumerate(inner.results):
            check(result.type, inner.location, f"result #{i} of '{inner.name}'")
        for region in inner.regions:
            for block in region.blocks:
                for i, arg in enumerate(block.arguments):
                    check(arg.type, arg.location, f"argument #{i} of '{inner.name}'")
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return errors
