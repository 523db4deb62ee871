"""hir-opt's passes on the command line, as mlir-opt has them: ``--list-passes`` (laid out
like ``mlir-opt --help`` lists passes) and pass flags (``hir-opt --hir-lower --canonicalize``:
each registered hir pass, pipeline and upstream pass as a flag, applied in order; options as
``--hir-stream-lowering=chunks=2``). The flags are turned into the same pipeline text
``--pass-pipeline`` takes (``builtin.module(hir-lower,canonicalize)``), which one pipeline
driver runs either way."""

import dataclasses
import re
import types
import typing
from collections.abc import Sequence

_FLAG = re.compile(r"--(?P<name>[A-Za-z][\w.-]*)(?:=(?P<options>.*))?", re.S)


def _option_value_name(field: dataclasses.Field) -> str:
    """An option's value as ``mlir-opt --help`` names it: ``<int>``, ``<number>``, ``<string>``."""
    hint = field.type
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # T | None: T, unset by default
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    name = hint.__name__ if isinstance(hint, type) else str(hint)
    return {"int": "<int>", "float": "<number>", "bool": "<true|false>"}.get(name, "<string>")


def _default_text(field: dataclasses.Field) -> str:
    """The default as it would be written in a pipeline (``4``, ``false``, ``nccl``), or
    ``unset`` where the pass decides (an Optional option without a value)."""
    if field.default is dataclasses.MISSING:
        return "required" if field.default_factory is dataclasses.MISSING else "computed"
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if value == "":
        return '""'
    return str(value)


def list_passes() -> str:
    """Every hir pass with its options, then the pipelines, in aligned columns."""
    from hir.passes import PIPELINES, REGISTRY  # the passes load only when a pipeline runs or is listed

    rows: list[tuple[str, str]] = [("Available Passes:", "")]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        rows.append((f"  --{name}", cls.description))
        for field in cls.options():
            option = field.name.replace("_", "-")
            rows.append((f"      {option}={_option_value_name(field)}", f"default: {_default_text(field)}"))
    rows.append(("Available Pass Pipelines:", ""))
    for name, text in sorted(PIPELINES.items()):
        rows.append((f"  --{name}", text))
    width = max(len(left) for left, right in rows if right) + 2
    # mlir-opt --help's layout: descriptions in one column after "-   " (passes) or "- " (options)
    lines = [
        left if not right else f"{left:<{width}}{'- ' if left.startswith('      ') else '-   '}{right}"
        for left, right in rows
    ]
    lines.append("Upstream MLIR passes (canonicalize, cse, ...; torch-mlir-opt --help lists them) are flags too.")
    lines.append(
        "Options of a pass flag: --hir-stream-lowering=chunks=2 (pipeline text: hir-stream-lowering{chunks=2})."
    )
    return "\n".join(lines) + "\n"


def is_pass(name: str) -> bool:
    """Whether ``name`` names an hir pass or pipeline, or an upstream pass."""
    from hir.passes import PIPELINES, REGISTRY, parse_pipeline  # the passes load only when a pipeline runs or is listed

    if name in REGISTRY or name in PIPELINES:
        return True
    try:
        parse_pipeline(name)  # an upstream pass: MLIR's pass registry knows it
    except ValueError:
        return False
    return True


def pass_flags(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split the arguments argparse did not know into pipeline elements (pass flags, in
    order) and the rest (left for argparse to refuse)."""
    elements: list[str] = []
    rest: list[str] = []
    for argument in arguments:
        m = _FLAG.fullmatch(argument)
        if m and is_pass(m["name"]):
            elements.append(m["name"] + (f"{{{m['options']}}}" if m["options"] else ""))
        else:
            rest.append(argument)
    return elements, rest


def flags_pipeline(elements: Sequence[str]) -> str | None:
    """The pipeline text of the pass flags (None when there are none)."""
    return f"builtin.module({','.join(elements)})" if elements else None
