"""A compute region cut at its repeats: a model's identical layers, their backward and their
optimizer update, each one compiled region, so that inductor compiles one of them and every
other reuses that compile (:func:`hir.interpreter.kernels.compiled_segment` keys its compiles
by the traced graph).

A whole training step is one compute region (``hir.flash_attention`` and the kernel
segments are compute); inductor's time grows with the graph it is given, and it compiled
each of a transformer's layers anew (its kernels are shared by source, its lowering,
scheduling and code generation are not). The ops of a region repeat with the layers: each
op gets a key (its name, attributes and types; a call its callee's body) and
:func:`repeated_units` finds the runs of keys that repeat back to back (a tandem repeat:
``[a, a + p)`` equal to ``[a + p, a + 2p)`` ...), the runs covering most ops first, then
the shortest period. Each unit and each stretch between units is one piece.

Allocations belong to the piece of their first user (an allocation the partition hoisted
above the previous layer's last op still lands in its own layer), so that no piece returns
an allocation whose value a later piece's call binds. Regions with host arithmetic
(dynamic shapes: values a compiled region could not return) are not cut.

Whether two units are the same function is decided on their traced graphs, not here: a cut
that does not repeat only costs compiles, never a wrong result.
"""

import bisect
from collections import Counter

from torch_mlir import ir
from torch_mlir.dialects import func, memref

MIN_UNIT = 8  # ops (allocations left out) in a repeated unit: below, more regions than compiles saved
CANDIDATES = 16  # periods tried: the most frequent distances between two ops of one key

_CALL = func.CallOp.OPERATION_NAME
_ALLOC = memref.AllocOp.OPERATION_NAME


def repeated_units(keys: list) -> list[tuple[int, int]]:
    """``(start, end)`` of non-overlapping units of ``keys`` that repeat back to back (at
    least two in a row, each of at least :data:`MIN_UNIT` keys), sorted."""
    last: dict = {}
    distances: Counter = Counter()
    for i, key in enumerate(keys):
        if key in last and i - last[key] >= MIN_UNIT:
            distances[i - last[key]] += 1
        last[key] = i
    runs = []  # (keys covered, -period, start, units)
    for period, _ in distances.most_common(CANDIDATES):
        i = 0
        while i + period < len(keys):
            if keys[i] != keys[i + period]:
                i += 1
                continue
            start = i
            while i + period < len(keys) and keys[i] == keys[i + period]:
                i += 1
            count = (i - start) // period + 1  # unit k equals unit k + 1 while (k + 1) * period <= i - start
            if count >= 2:
                runs.append((count * period, -period, start, count))
    taken: list[tuple[int, int]] = []
    for _, minus_period, start, count in sorted(runs, reverse=True):
        period = -minus_period
        units = [(start + k * period, start + (k + 1) * period) for k in range(count)]
        free = [u for u in units if not any(s < u[1] and u[0] < e for s, e in taken)]
        if len(free) >= 2:
            taken += free
    return sorted(taken)


def op_key(op: ir.Operation, functions: dict, bodies: dict) -> tuple:
    """What makes two ops of a region the same step: name, attributes, operand and result
    types; a call's callee by its body (each layer calls its own copy of a segment)."""
    attributes = tuple(sorted((a, str(op.attributes[a])) for a in op.attributes if a != "callee"))
    key = (op.name, attributes, tuple(str(v.type) for v in op.operands), tuple(str(r.type) for r in op.results))
    if op.name == _CALL:
        name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if name not in bodies:
            callee = functions[name].operation
            bodies[name] = str(callee).replace(f"@{name}(", "@(", 1)
        key += (bodies[name],)
    return key


def pieces(ops: list, functions: dict, host_scalar) -> list[list]:
    """``ops`` (one compute region, in block order) cut at its repeats; each piece in block
    order, the pieces in the order they run. ``host_scalar(op)``: arithmetic on the host."""
    if any(host_scalar(op.operation) for op in ops):
        return [ops]
    positions = [i for i, op in enumerate(ops) if op.operation.name != _ALLOC]
    bodies: dict = {}
    units = repeated_units([op_key(ops[i].operation, functions, bodies) for i in positions])
    if not units:
        return [ops]
    cuts = sorted({c for unit in units for c in unit})
    piece_of = {}
    for n, i in enumerate(positions):
        piece_of[i] = bisect.bisect_right(cuts, n)
    index = {op.operation: i for i, op in enumerate(ops)}
    for i, op in enumerate(ops):
        if i in piece_of:
            continue
        users = [index[u.owner.operation] for r in op.operation.results for u in r.uses if u.owner.operation in index]
        after = bisect.bisect_right(positions, i)  # else the piece of the next op that is no allocation
        piece_of[i] = piece_of[min(users)] if users else piece_of[positions[after]] if after < len(positions) else len(cuts)
    grouped: dict = {}
    for i, op in enumerate(ops):
        grouped.setdefault(piece_of[i], []).append(op)
    return [grouped[k] for k in sorted(grouped)]
