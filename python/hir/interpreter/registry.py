"""Which handler compiles which op: handlers are keyed by op class and registered per op
group, like xDSL's ``@impl(Op)`` in ``@register_impls`` classes.

    @register_impls
    class StreamImpls:
        @impl(GetStreamOp)
        def get_stream(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
            ...

        @impl(arith.AddIOp, arith.SubIOp)     # one handler for several op classes
        def binary(self, c: Compiler, op: ir.OpView) -> Optional[Step]:
            ...

An op class is an hir op class (``hir.dialect``) or an upstream OpView class
(``torch_mlir.dialects.arith.ConstantOp``). A handler gets the :class:`Compiler` and the op
at compile time and returns the op's step ``step(env) -> None`` (None: no run-time work), or a
list of steps already tagged with their ops (a call inlined into its caller's plan).
``@impl`` on a module-level function registers it at once (the same contract, no class).
``@impl_prefix("torch.aten.")`` registers one handler for a whole family of ops by name
prefix; exact registrations win, then the longest matching prefix. Lookups happen at compile
time only. ``local=False``: the op decides itself what a rank does (communications); other
ops are skipped on ranks that do not hold one of their buffers.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Handler = Callable[..., Any]  # (Compiler, op) -> Optional[Step] | list[Step]


@dataclass(frozen=True)
class HandlerEntry:
    fn: Handler
    local: bool  # skipped on ranks that do not hold one of its buffers (nvFuser semantics)


HANDLERS: dict[str, HandlerEntry] = {}
PREFIX_HANDLERS: dict[str, HandlerEntry] = {}
_MARK = "_hir_impls"


def _register(table: dict, key: str, entry: HandlerEntry) -> None:
    if key in table:
        raise ValueError(
            f"interpreter handler for '{key}' is registered twice "
            f"({table[key].fn.__qualname__}, {entry.fn.__qualname__})"
        )
    table[key] = entry


def _in_class(fn: Callable) -> bool:
    """Whether ``fn`` is being defined in a class body (a method to bind later)."""
    owner = fn.__qualname__.rpartition(".")[0]
    return bool(owner) and not owner.endswith("<locals>")


def _decorator(table: dict, keys: list[str], local: bool) -> Callable[[Handler], Handler]:
    def mark(fn: Handler) -> Handler:
        if _in_class(fn):
            if not hasattr(fn, _MARK):
                setattr(fn, _MARK, [])
            getattr(fn, _MARK).extend((table, key, local) for key in keys)
        else:
            for key in keys:
                _register(table, key, HandlerEntry(fn, local))
        return fn

    return mark


def impl(*op_classes: type, local: bool = True) -> Callable[[Handler], Handler]:
    """The handler of ``op_classes`` (hir op classes or upstream OpView classes)."""
    names: list = [getattr(cls, "OPERATION_NAME", None) for cls in op_classes]
    if not names or not all(isinstance(name, str) for name in names):
        raise TypeError(f"@impl expects op classes with OPERATION_NAME, got {op_classes!r}")
    return _decorator(HANDLERS, names, local)


def impl_prefix(prefix: str, *, local: bool = True) -> Callable[[Handler], Handler]:
    """The handler of every op whose name starts with ``prefix`` and has no exact handler."""
    return _decorator(PREFIX_HANDLERS, [prefix], local)


def register_impls(cls: type) -> type:
    """Register the ``@impl`` / ``@impl_prefix`` methods of ``cls``, bound to one instance."""
    instance = cls()
    for attr, value in vars(cls).items():
        for table, key, local in getattr(value, _MARK, ()):
            _register(table, key, HandlerEntry(getattr(instance, attr), local))
    return cls


def lookup(name: str) -> HandlerEntry | None:
    """The handler of op ``name``: exact match, else the longest matching prefix."""
    entry = HANDLERS.get(name)
    if entry is not None:
        return entry
    best = max((p for p in PREFIX_HANDLERS if name.startswith(p)), key=len, default=None)
    return PREFIX_HANDLERS[best] if best is not None else None
