"""The run-time side of a compiled plan (:mod:`hir.interpreter.plan` builds it): the
sentinels a slot may hold, a compiled function, and the loop running a block's steps, which
turns a failure inside a step into a ``file:line:col: error:`` message naming its op."""

from collections.abc import Iterable
from dataclasses import dataclass, field

from torch_mlir import ir

from hir.dialect.context import HirError
from hir.interpreter.generated import Step


class _Marker:
    """A named sentinel held in a slot instead of a value."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"


UNSET = _Marker("unset")  # slot not yet written (SSA makes this unreachable in verified IR)
DEAD = _Marker("deallocated")  # buffer released by memref.dealloc
WAITED = _Marker("waited")  # work token already consumed by hir.wait


@dataclass(frozen=True)
class OpInfo:
    """What an error message needs about the op a step came from."""

    name: str
    location: str
    operands: tuple[tuple[int, str], ...]  # (slot, "%name") of each operand


@dataclass
class FunctionPlan:
    """A compiled function: run ``steps`` on ``env(args)``. Its arguments hold the first
    slots (``arg_slots`` is 0, 1, ...: they are defined first)."""

    name: str
    location: str
    steps: list[Step]
    template: list
    arg_slots: list[int]
    result_slots: list[int]
    arg_types: list[ir.Type] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rest = self.template[len(self.arg_slots) :]  # the slots after the arguments

    def env(self, args: list) -> list:
        """A fresh env for one run with ``args`` (a list, one per argument) bound: one list
        concatenation, no per-argument store."""
        return args + self._rest

    def call(self, args: list) -> list:
        env = self.env(args)
        run_steps(self.steps, env)
        return [env[slot] for slot in self.result_slots]


_ONCE = (None,)


def run_steps(steps: list[Step], env: list, iv: int | None = None, indices: Iterable = _ONCE) -> None:
    """Run a block's steps, once or (a loop body) once per index in ``indices`` with the
    index in slot ``iv``; a failure becomes an :class:`HirError` at the failing op. A loop
    runs under one ``try``: a stream loop runs ~10 small steps an iteration, and a call and
    a ``try`` per iteration are a measurable part of them."""
    step = None
    try:
        for index in indices:
            if iv is not None:
                env[iv] = index
            for step in steps:
                step(env)
    except HirError:
        raise
    except Exception as err:
        raise runtime_error(step, env, err) from err


def runtime_error(step: Step | None, env: list, err: Exception) -> HirError:
    info: OpInfo | None = getattr(step, "hir_op", None)
    if info is None:  # pragma: no cover - every step is tagged by the compiler
        return HirError(f"error: {type(err).__name__}: {err}")
    for index, (slot, name) in enumerate(info.operands):
        if env[slot] is DEAD:
            return HirError(
                f"{info.location}: error: '{info.name}' operand #{index} ({name}) is used after memref.dealloc"
            )
    return HirError(f"{info.location}: error: '{info.name}' failed: {type(err).__name__}: {err}")
