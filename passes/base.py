"""The pass framework (nvFuser's OptimizationPass, xDSL's ModulePass): a pass is a
dataclass with a registry ``name``, a ``description``, options as typed fields (set from
``name{key=value ...}``; dashes in keys map to underscores) and ``run(module)``.

    @register_pass
    @dataclass
    class MyPass(ModulePass):
        name = "hir-my-pass"
        description = "What it does."
        num_streams: int = 4          # option: hir-my-pass{num-streams=8}

        def run(self, module: ir.Module) -> None:
            ...
            raise PassFailure("why", op.location)   # reported as file:line:col: error: why

A pass whose work is a plain walk over each function (an analysis of the whole body, then
edits anywhere in it: upstream's ``shard-partition`` is one) derives :class:`FunctionPass`
and implements ``run_on_function(fn)``, instead of dressing the walk up as patterns.

Passes can be switched off for a scope (``with disabled("hir-fuse-loops"): ...``) or a
whole process (``HIR_DISABLE_PASSES=hir-fuse-loops,...``); a disabled pass is skipped.
"""

import dataclasses
import os
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from torch_mlir import ir


class PassFailure(Exception):
    """Raised by a pass; the driver reports ``message`` at ``location``."""

    def __init__(self, message: str, location: ir.Location | None = None):
        super().__init__(message)
        self.message = message
        self.location = location


def fail(op: ir.Operation, message: str) -> PassFailure:
    """A failure at ``op``'s location, naming the op (``raise fail(op, "...")``)."""
    return PassFailure(f"'{op.name}' op {message}", op.location)


@dataclasses.dataclass
class ModulePass:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def run(self, module: ir.Module) -> None:  # pragma: no cover - overridden
        """Rewrite ``module`` in place (raise :class:`PassFailure` to fail). The PassManager
        running the pass verifies the module after it under verify-each."""
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "ModulePass":
        """Instantiate from textual ``{key=value}`` options, converting to the field types."""
        fields = {f.name.replace("_", "-"): f for f in cls.options()}
        kwargs: dict[str, Any] = {}
        for key, text in options.items():
            field = fields.get(key) or fields.get(key.replace("_", "-"))
            if field is None:
                known = ", ".join(sorted(fields)) or "none"
                raise ValueError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
            kwargs[field.name] = _convert(cls.name, key, text, field)
        return cls(**kwargs)


@dataclasses.dataclass
class FunctionPass(ModulePass):
    """A pass that rewrites each ``func.func`` of the module on its own, by a plain walk
    over its body: ``run`` calls :meth:`run_on_function` for the functions the module holds
    when it starts (those it adds are not visited), in order."""

    def run(self, module: ir.Module) -> None:
        for fn in [op.operation for op in module.body.operations if op.operation.name == "func.func"]:
            self.run_on_function(fn)

    def run_on_function(self, fn: ir.Operation) -> None:  # pragma: no cover - overridden
        """Rewrite ``fn`` in place (raise :class:`PassFailure` to fail)."""
        raise NotImplementedError


def _convert(pass_name: str, key: str, text: str, field: dataclasses.Field) -> Any:
    hint = field.type
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # T | None: None (unset) by default
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    kind = (
        hint if isinstance(hint, type) else {"int": int, "bool": bool, "str": str, "float": float}.get(str(hint), str)
    )
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return text.lower() in ("true", "1")
        return kind(text)
    except ValueError:
        raise ValueError(f"pass '{pass_name}' option '{key}' expects {kind.__name__}, got '{text}'") from None


REGISTRY: dict[str, type[ModulePass]] = {}


def register_pass(cls: type[ModulePass]) -> type[ModulePass]:
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"pass name '{cls.name}' is empty or already registered")
    REGISTRY[cls.name] = cls
    return cls


_disabled_scopes: list[frozenset[str]] = []


DISABLE_ENV = "HIR_DISABLE_PASSES"


def _env_disabled() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}


def check_disabled_env() -> None:
    """$HIR_DISABLE_PASSES must name hir passes: a typo would silently disable nothing."""
    unknown = sorted(_env_disabled() - set(REGISTRY))
    if unknown:
        raise ValueError(f"${DISABLE_ENV}: no hir pass named {', '.join(unknown)} (see hir-opt --list-passes)")


def is_disabled(name: str) -> bool:
    return name in _env_disabled() or any(name in scope for scope in _disabled_scopes)


@contextmanager
def disabled(*names: str) -> Iterator[None]:
    """Skip the named passes inside this scope (nvFuser's OptimizationPassGuard)."""
    _disabled_scopes.append(frozenset(names))
    try:
        yield
    finally:
        _disabled_scopes.pop()
