"""Which handler converts which op of a partitioned program (``hir-convert-shard-to-hir``):
handlers are registered by op, the way the interpreter's handlers are (``@impl``), one per
upstream op, each in the module of its op family:

    @converts(shard.AllGatherOp)
    def all_gather(s: ConversionState, op: ir.Operation) -> None:
        \"\"\"``hir.allgather`` + ``hir.wait`` (its operand split along the gathered dim).\"\"\"
        ...

A handler builds, at the state's insertion point (before ``op``), the host program for
``op`` and records what its results became (``s.buffers``, ``s.scalars``, producers to
clone); the walker erases ``op`` with the rest of the tensor program once every op is
converted. Raising ``fail(op, ...)`` reports at the op.

* ``@host_value(Op)``: ``Op`` is host index arithmetic on the device (``process_*_index``,
  ``neighbors_linear_indices``, ``shard_shape``); its results are materialized by the
  decorated function where the host program first reads them, so unread ones cost nothing.
* ``refuses(Op, reason)``: hir does not convert ``Op``; the error says why and lists what
  converts (:func:`converted`). ``refuses_prefix("shard.")`` covers ops no entry names.
* ``@converts_any``: the fallback for every other op (kernel segments, host arithmetic).

The walker (``convert_shard_to_hir.py``) calls, for each op of a function in program order,
the handler :func:`lookup` finds. docs/from-shard.md's table of converted and
refused ops is :func:`markdown` (test_shard_registry.py checks it;
``python -m hir.passes.shard.registry`` prints it).
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from torch_mlir import ir

from hir.passes.base import fail

# A handler's first argument is the conversion's state (hir.passes.shard.state.ConversionState,
# which reads this registry: naming it here would make the two import each other); each
# handler annotates it.
Handler = Callable[[Any, ir.Operation], None]
HostFunction = Callable[[Any, ir.Operation], list]  # -> the op's results in the host program


@dataclass(frozen=True)
class Entry:
    """How one op converts: ``handler``; ``summary`` for the docs (the handler's first
    docstring line, or the refusal's reason); ``refused`` when hir does not convert it."""

    handler: Handler
    summary: str
    refused: bool = False


CONVERSIONS: dict[str, Entry] = {}
PREFIXES: dict[str, Entry] = {}
HOST_FUNCTIONS: dict[str, HostFunction] = {}
_FALLBACK: list[Entry] = []


_Entry = TypeVar("_Entry")  # what a table holds: an Entry, or a HostFunction


def _name(op: Any) -> str:
    name = op if isinstance(op, str) else getattr(op, "OPERATION_NAME", None)
    if not isinstance(name, str):
        raise TypeError(f"expected an op class with OPERATION_NAME or an op name, got {op!r}")
    return name


def _register(table: dict[str, _Entry], key: str, entry: _Entry) -> None:
    if key in table:
        raise ValueError(f"shard bridge handler for '{key}' is registered twice")
    table[key] = entry


def _summary(fn: Callable) -> str:
    return (inspect.getdoc(fn) or "").split("\n\n")[0].replace("\n", " ")


def converts(*ops: Any) -> Callable[[Handler], Handler]:
    """Register the decorated handler for ``ops`` (op classes or names)."""

    def mark(fn: Handler) -> Handler:
        for op in ops:
            _register(CONVERSIONS, _name(op), Entry(fn, _summary(fn)))
        return fn

    return mark


def host_value(*ops: Any) -> Callable[[HostFunction], HostFunction]:
    """Register the decorated function as materializing ``ops``' results in the host program
    where they are first read; converting the op itself only records it."""

    def mark(fn: HostFunction) -> HostFunction:
        for op in ops:
            name = _name(op)
            _register(HOST_FUNCTIONS, name, fn)
            _register(CONVERSIONS, name, Entry(_defer_to_host, _summary(fn)))
        return fn

    return mark


def _defer_to_host(s: Any, op: ir.Operation) -> None:
    for result in op.results:
        s.host[result] = op


def refuses(op: Any, reason: str) -> None:
    """hir does not convert ``op``: its handler reports ``reason`` at the op."""
    _register(CONVERSIONS, _name(op), _refusal(reason))


def refuses_prefix(prefix: str, reason: str) -> None:
    """hir does not convert ops named ``prefix...`` that no entry names."""
    _register(PREFIXES, prefix, _refusal(reason))


def _refusal(reason: str) -> Entry:
    def refuse(s: Any, op: ir.Operation) -> None:
        raise fail(op, reason.format(converted=", ".join(converted("shard."))))

    return Entry(refuse, reason, refused=True)


def converts_any(fn: Handler) -> Handler:
    """Register the decorated handler for every op that no entry or prefix names."""
    if _FALLBACK:
        raise ValueError("the shard bridge's fallback handler is registered twice")
    _FALLBACK.append(Entry(fn, _summary(fn)))
    return fn


def lookup(name: str) -> Entry:
    """The entry converting ops named ``name``: exact, else the longest prefix, else the fallback."""
    if name in CONVERSIONS:
        return CONVERSIONS[name]
    prefixes = [p for p in PREFIXES if name.startswith(p)]
    return PREFIXES[max(prefixes, key=len)] if prefixes else _FALLBACK[0]


def host_function(name: str) -> HostFunction | None:
    return HOST_FUNCTIONS.get(name)


def converted(prefix: str = "") -> list[str]:
    """The converted ops named ``prefix...``, without the prefix, sorted."""
    return sorted(
        name[len(prefix) :] for name, entry in CONVERSIONS.items() if name.startswith(prefix) and not entry.refused
    )


def markdown() -> str:
    """The table of docs/from-shard.md: every registered op, how it converts or why not."""
    rows = ["| op | converts to |", "| --- | --- |"]
    rows += [f"| `{name}` | {entry.summary} |" for name, entry in sorted(CONVERSIONS.items()) if not entry.refused]
    rows += [f"| any other op | {_FALLBACK[0].summary} |"] if _FALLBACK else []
    rows += ["", "| op | refused because |", "| --- | --- |"]
    refused = sorted((n, e) for n, e in CONVERSIONS.items() if e.refused) + sorted(
        (p + "*", e) for p, e in PREFIXES.items() if e.refused
    )
    rows += [f"| `{name}` | {entry.summary.format(converted='the ops above')} |" for name, entry in refused]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    import hir.passes  # noqa: F401  (registers every handler)

    print(markdown(), end="")
