"""Regional compilation: a compute region cut at its repeats, so that a model's identical
layers (of the forward, of the backward, of a decode step) are traced and compiled once
and every other layer runs that compiled function on its own arguments.

A whole training step or decode step is one compute region (``hir.flash_attention`` and
the kernel segments are compute), and inductor's time grows with the graph it is given:
one region compiled each of a transformer's layers anew (its kernels are shared by source;
its tracing, lowering, scheduling and code generation are not).

Where the cuts go is decided on the IR, before anything is traced. Each op gets a key
(:class:`OpKeys`: its name, attributes and types; a call its callee's body, since each layer
calls its own copy of a segment), and :func:`repeated_units` finds the runs of keys that
repeat back to back (a tandem repeat: ``[a, a + p)`` equal to ``[a + p, a + 2p)`` ...), the
runs covering most ops first, then the shortest period. Each unit and each stretch between
units is one piece (:func:`pieces`); a region without repeats stays whole. Allocations
belong to the piece of their first user (an allocation the partition hoisted above the
previous layer's last op still lands in its own layer). Regions with host arithmetic
(dynamic shapes: values a compiled piece could not return) are not cut.

Two pieces share one compiled function when their :func:`piece_key` is equal: their ops'
keys, how values flow between them (each operand an input of the piece by position, or a
result of an earlier op of it), which values they return, and the plan's decisions at each
op (destinations bound to a result, written with ``out=`` or in place: ``Compiler.site``).
Equal keys trace to equal graphs, so the second piece is neither traced nor compiled
(:func:`hir.interpreter.kernels.compiled_segment`, ``KernelCompileStats.repeats``).
"""

import bisect
from collections import Counter

from torch_mlir import ir
from torch_mlir.dialects import func, memref

MIN_UNIT = 4  # compute ops in a repeated unit (a segment counts its ops): below, more pieces than compiles saved
CANDIDATES = 64  # periods tried: the most frequent distances between two ops of one key

_CALL = func.CallOp.OPERATION_NAME
_ALLOC = memref.AllocOp.OPERATION_NAME


def repeated_units(keys: list, weights: list[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of non-overlapping units of ``keys`` that repeat back to back (at
    least two in a row, each of at least :data:`MIN_UNIT` compute ops: ``weights[i]`` is
    key ``i``'s), sorted."""
    last: dict = {}
    distances: Counter = Counter()
    for i, key in enumerate(keys):
        if key in last:
            distances[i - last[key]] += 1
        last[key] = i
    prefix = [0]
    for w in weights:
        prefix.append(prefix[-1] + w)
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
            if count >= 2 and prefix[start + period] - prefix[start] >= MIN_UNIT:
                runs.append((count * period, -period, start, count))
    taken: list[tuple[int, int]] = []
    for _, minus_period, start, count in sorted(runs, reverse=True):
        period = -minus_period
        units = [(start + k * period, start + (k + 1) * period) for k in range(count)]
        free = [u for u in units if not any(s < u[1] and u[0] < e for s, e in taken)]
        if len(free) >= 2:
            taken += free
    return sorted(taken)


class OpKeys:
    """What makes two ops the same step: name, attributes, operand and result types; a
    call's callee by its body with its name left out (each layer calls its own copy of a
    segment); an op with regions by its text. Callee bodies are printed once each."""

    def __init__(self, functions: dict) -> None:
        self.functions = functions
        self.bodies: dict[str, str] = {}

    def __call__(self, op: ir.Operation) -> tuple:
        attributes = tuple(sorted((a, str(op.attributes[a])) for a in op.attributes if a != "callee"))
        key = (op.name, attributes, tuple(str(v.type) for v in op.operands), tuple(str(r.type) for r in op.results))
        if op.name == _CALL:
            name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if name not in self.bodies:
                self.bodies[name] = _text(self.functions[name].operation).replace(f"@{name}(", "@(", 1)
            key += (self.bodies[name],)
        elif len(op.regions):
            key += (_text(op),)
        return key


def _text(op: ir.Operation) -> str:
    """``op`` printed on its own: no verification (``str`` runs the verifiers first) and no
    names from the rest of the module."""
    return op.get_asm(use_local_scope=True, assume_verified=True)


def pieces(ops: list, keys: OpKeys, host_scalar, weight) -> list[list]:
    """``ops`` (one compute region, in block order) cut at its repeats; each piece in block
    order, the pieces in the order they run. ``host_scalar(op)``: arithmetic on the host;
    ``weight(op)``: its compute ops."""
    if any(host_scalar(op.operation) for op in ops):
        return [ops]
    positions = [i for i, op in enumerate(ops) if op.operation.name != _ALLOC]
    units = repeated_units([keys(ops[i].operation) for i in positions], [weight(ops[i].operation) for i in positions])
    if not units:
        return [ops]
    cuts = sorted({c for unit in units for c in unit})
    piece_of = {i: bisect.bisect_right(cuts, n) for n, i in enumerate(positions)}
    index = {op.operation: i for i, op in enumerate(ops)}
    for i, op in enumerate(ops):
        if i in piece_of:
            continue
        users = [index[u.owner.operation] for r in op.operation.results for u in r.uses if u.owner.operation in index]
        after = bisect.bisect_right(positions, i)  # else the piece of the next op that is no allocation
        piece_of[i] = (
            piece_of[min(users)] if users else piece_of[positions[after]] if after < len(positions) else len(cuts)
        )
    grouped: dict = {}
    for i, op in enumerate(ops):
        grouped.setdefault(piece_of[i], []).append(op)
    return [grouped[k] for k in sorted(grouped)]


def piece_key(ops: list, inputs: list, outputs: list, keys: OpKeys, site) -> tuple:
    """What a piece (``ops``, taking ``inputs`` and returning ``outputs``) traces to: its
    ops' keys, each operand as an input position, an earlier op's result or a destination an
    earlier op binds (a recomputed write's, :mod:`hir.interpreter.rematerialize`), the values
    it returns, and ``site(op)``: the plan's decisions at each op (``[0]``: the bound
    destinations, ``(index, contiguous)``)."""
    refs: dict = {v: ("in", i) for i, v in enumerate(inputs)}
    body = []
    for p, op in enumerate(ops):
        op = op.operation
        decisions = site(op)
        body.append((keys(op), tuple(refs.get(v) for v in op.operands), decisions))
        refs.update({r: (p, n) for n, r in enumerate(op.results)})
        for i, _ in decisions[0]:  # a destination bound to its result, allocated outside the piece
            refs.setdefault(op.operands[i], (p, "bound", i))
    return tuple(body), tuple(refs.get(v) for v in outputs), len(inputs)
