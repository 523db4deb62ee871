"""Steps generated as Python source: a torch op's call with its constants bound as globals
(:func:`torch_call_step`), and slot moves (:func:`slot_moves_step`) that are folded into the
torch call's step before them, so a block of the imported model runs one Python frame per
torch call and none per move::

    def torch_step(env):
        env[7] = fn3(env[2], c3_1, env[5])         # the op (a compute op or a segment's torch op)
        env[9] = env[7]                            # its segment result bound to its buffer
        if env[4] is DEAD:                         # memref.dealloc %alloc_2
            raise HirError(dealloc_message8)
        env[4] = DEAD

The folded step is tagged with the torch op (:class:`hir.interpreter.plan.OpInfo`): a failure
of the call is named at it, and a move raises only its own located :class:`HirError`. Steps
are generated as :class:`Code` and compiled when their block is done (:func:`compile_steps`):
after the folds, and once per distinct template of slots and globals, not once per op and
again per fold.
"""

import builtins
import re
from collections.abc import Callable
from functools import lru_cache
from itertools import count
from keyword import iskeyword
from types import CodeType, FunctionType
from typing import Any

import torch

Step = Callable[[list], None]


class Code:
    """A generated step before it is compiled: its name, its lines (Python statements on
    ``env``) and the globals they read. :func:`compile_steps` compiles a block's codes
    after the moves have been folded into the calls before them (compiling each step, and
    again each fold, cost more than the rest of a plan's build); a code still called
    directly compiles itself first."""

    __slots__ = ("name", "lines", "names", "call", "hir_op", "_step")

    def __init__(self, name: str, lines: list[str], names: dict[str, Any], call: bool) -> None:
        self.name, self.lines, self.names, self.call = name, lines, names, call
        self._step: Step | None = None

    def __call__(self, env: list) -> None:
        if self._step is None:
            self._step = _compiled(self)
        self._step(env)


def torch_call_step(
    fn: Callable, positional: list, keywords: dict, fill: list, fill_kw: list, results: list[int]
) -> Code:
    """The step ``env[r] = fn(c0, env[3], out=env[5])`` of an op that is one torch call, as
    one generated function with ``fn`` and the constants bound as globals: one Python frame
    per op and no argument list built per call (torch.fx's generated code does the same).
    ``positional`` / ``keywords`` hold the constant arguments, ``fill`` / ``fill_kw`` the
    (position or name, slot) of the run-time ones; the call's results go to ``results``.
    An ``OpOverload`` runs through its C++ entry (its ``__call__`` is a Python frame).
    Slot moves that follow it are folded into it (:func:`slot_moves_step`)."""
    n = next(_generated)
    names: dict[str, Any] = {f"fn{n}": fn._op if isinstance(fn, torch._ops.OpOverload) else fn, f"results{n}": results}
    runtime = dict(fill)
    args = []
    for index, value in enumerate(positional):
        if index in runtime:
            args.append(f"env[{runtime[index]}]")
        else:
            names[f"c{n}_{index}"] = value
            args.append(f"c{n}_{index}")
    runtime_kw = dict(fill_kw)
    constant_kw = {k: v for k, v in keywords.items() if k not in runtime_kw}
    if constant_kw:
        names[f"kw{n}"] = constant_kw
        args.append(f"**kw{n}")
    for key, slot in runtime_kw.items():  # a schema name that is a Python keyword goes by dict
        args.append(
            f"{key}=env[{slot}]" if key.isidentifier() and not iskeyword(key) else f"**{{{key!r}: env[{slot}]}}"
        )
    call = f"fn{n}({', '.join(args)})"
    if not results:  # checks such as _assert_tensor_metadata
        lines = [call]
    elif len(results) == 1:
        lines = [f"env[{results[0]}] = {call}"]
    else:
        lines = [f"for slot, value in zip(results{n}, {call}):", "    env[slot] = value"]
    return Code("torch_step", lines, names, call=True)


def slot_moves_step(name: str, lines: list[str], names: dict[str, Any]) -> Code:
    """A step that only moves values between slots (a segment's result bound to its buffer, a
    deallocation), generated from ``lines`` (Python statements on ``env``; ``names`` bound as
    globals, each one shared by all steps or made by :func:`unique_name`). When it follows a
    torch call's step in a block, :meth:`hir.interpreter.plan.Compiler.steps` folds its lines
    into that step, which saves a step per move. Its lines may raise an :class:`HirError`
    (named at its own op) but nothing else."""
    return Code(name, lines, names, call=False)


_generated = count()  # numbers the names of generated steps, so folded steps never clash


def unique_name(prefix: str) -> str:
    """A global name for a generated step that no other step uses."""
    return f"{prefix}{next(_generated)}"


def folds(step: Step, moves: Step) -> bool:
    """Whether ``moves`` (the next step of a block) folds into ``step``: a torch call's step
    followed by moves alone (either one generated, or compiled already: an inlined body's)."""
    first, then = _parts(step), _parts(moves)
    return first is not None and first[2] and then is not None and not then[2]


def fold(step: Any, moves: Step) -> Code:
    """``step`` (a torch call's) followed by ``moves``' slot moves, as one step tagged as
    ``step``: a failure of the call is still its op's, and the moves run only after it."""
    first, then = _parts(step), _parts(moves)
    assert first is not None and then is not None, "fold only what folds() accepts"
    folded = Code("torch_step", first[0] + then[0], {**first[1], **then[1]}, call=True)
    folded.hir_op = step.hir_op
    return folded


def _parts(step: Step) -> tuple[list[str], dict[str, Any], bool] | None:
    """(lines, globals, whether a torch call) of a generated step, None for another step."""
    if isinstance(step, Code):
        return step.lines, step.names, step.call
    code = getattr(step, "hir_code", None)
    if code is not None:
        return code[0], code[1], True
    moves = getattr(step, "hir_moves", None)
    return None if moves is None else (moves[0], moves[1], False)


def compile_steps(steps: list[Step]) -> list[Step]:
    """``steps`` with each :class:`Code` compiled. A compiled step keeps its name, its tag
    and its code: ``hir_code`` (lines, globals) for a torch call, ``hir_moves`` for moves
    alone. Steps differ mostly in their slots and globals (a model's layers repeat the same
    calls): each code is compiled as its template, with the slots as placeholder constants
    and the globals renamed in order, once per template (:func:`_template`); a step is the
    template's code with its slots put in as constants and its own globals, the same
    bytecode as its text compiled alone."""
    return [_compiled(step) if isinstance(step, Code) else step for step in steps]


_TOKEN = re.compile(r"\benv\[(\d+)\]|\b[A-Za-z_]\w*\b")
_PLACEHOLDER = 1 << 40  # slot k of a template is this constant plus k (no env has that many slots)


def _compiled(code: Code) -> Step:
    slots: list[int] = []
    renamed: dict[str, str] = {}
    globals_: dict[str, Any] = {"__builtins__": builtins}

    def canonical(match: re.Match) -> str:
        token = match.group(0)
        if match.group(1) is not None:
            slots.append(int(match.group(1)))
            return f"env[{_PLACEHOLDER + len(slots) - 1}]"
        if token not in code.names:
            return token
        if token not in renamed:
            renamed[token] = f"g{len(renamed)}"
            globals_[renamed[token]] = code.names[token]
        return renamed[token]

    text = "".join(f"    {_TOKEN.sub(canonical, line)}\n" for line in code.lines)
    template = _template(f"def {code.name}(env):\n{text}")
    consts = tuple(slots[c - _PLACEHOLDER] if type(c) is int and c >= _PLACEHOLDER else c for c in template.co_consts)
    fn: Any = FunctionType(template.replace(co_consts=consts), globals_, code.name)
    if code.call:
        fn.hir_code = (code.lines, code.names)
    else:
        fn.hir_moves = (code.lines, code.names)
    if hasattr(code, "hir_op"):
        fn.hir_op = code.hir_op
    return fn


@lru_cache(maxsize=4096)
def _template(source: str) -> CodeType:
    """The code of the one function that ``source`` defines (text built from slots and
    names only)."""
    scope: dict[str, Any] = {}
    exec(source, scope)  # noqa: S102
    (fn,) = (value for key, value in scope.items() if key != "__builtins__")
    return fn.__code__
