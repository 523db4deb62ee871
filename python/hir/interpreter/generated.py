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
of the call is named at it, and a move raises only its own located :class:`HirError`.
"""

from collections.abc import Callable
from itertools import count
from keyword import iskeyword
from typing import Any

import torch

Step = Callable[[list], None]


def torch_call_step(
    fn: Callable, positional: list, keywords: dict, fill: list, fill_kw: list, results: list[int]
) -> Step:
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
    step = _generate("torch_step", lines, names)
    step.hir_code = (lines, names)
    return step


def slot_moves_step(name: str, lines: list[str], names: dict[str, Any]) -> Step:
    """A step that only moves values between slots (a segment's result bound to its buffer, a
    deallocation), generated from ``lines`` (Python statements on ``env``; ``names`` bound as
    globals, each one shared by all steps or made by :func:`unique_name`). When it follows a
    torch call's step in a block, :meth:`hir.interpreter.plan.Compiler.steps` folds its lines
    into that step, which saves a step per move. Its lines may raise an :class:`HirError`
    (named at its own op) but nothing else."""
    step = _generate(name, lines, names)
    step.hir_moves = (lines, names)
    return step


_generated = count()  # numbers the names of generated steps, so folded steps never clash


def unique_name(prefix: str) -> str:
    """A global name for a generated step that no other step uses."""
    return f"{prefix}{next(_generated)}"


def _generate(name: str, lines: list[str], names: dict[str, Any]) -> Step:
    scope = dict(names)
    body = "".join(f"    {line}\n" for line in lines)
    exec(f"def {name}(env):\n{body}", scope)  # noqa: S102 - text built from slots and names only
    return scope[name]


def folds(step: Step, moves: Step) -> bool:
    """Whether ``moves`` (the next step of a block) folds into ``step``."""
    return hasattr(moves, "hir_moves") and hasattr(step, "hir_code")


def fold(step: Step, moves: Step) -> Step:
    """``step`` (a torch call's) followed by ``moves``' slot moves, as one step tagged as
    ``step``: a failure of the call is still its op's, and the moves run only after it."""
    lines, names = step.hir_code
    more, more_names = moves.hir_moves
    folded = _generate("torch_step", lines + more, {**names, **more_names})
    folded.hir_code = (lines + more, {**names, **more_names})
    folded.hir_op = step.hir_op
    return folded
