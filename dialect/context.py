"""Contexts, parsing and diagnostics: the bottom layer that passes, the interpreter and the
CLIs share (no torch import). Public as :mod:`hir.core`."""

import re
import sys
from typing import Optional

from torch_mlir import ir

from hir.dialect.base import load
from hir.dialect.gc_stress import checkpoint
from hir.dialect.sharding import check_placements


class HirError(Exception):
    """A user-facing error: ``str(err)`` is ``file:line:col: error: message`` lines."""


def new_context() -> ir.Context:
    """A context with the hir dialect loaded (upstream dialects are available by default)."""
    ctx = ir.Context()
    # hir pipelines run module-level passes from Python, so MLIR's thread pool buys nothing;
    # its worker threads also outlive torch.distributed's at exit and abort the process.
    ctx.enable_multithreading(False)
    load(ctx)
    return ctx


_LOC = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')


def format_location(loc: ir.Location, source_name: Optional[str] = None) -> str:
    """``file:line:col`` for a file location, else MLIR's own spelling. Text parsed from a
    string is located in file "-"; ``source_name`` names it."""
    text = str(loc)
    m = _LOC.match(text) or re.search(r'"(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)', text)
    if not m:
        return text
    name = source_name if m["file"] == "-" and source_name else m["file"]
    return f"{name}:{m['line']}:{m['col']}"


def format_diagnostic(diag: "ir.Diagnostic", source_name: Optional[str] = None) -> str:
    severity = {
        ir.DiagnosticSeverity.ERROR: "error",
        ir.DiagnosticSeverity.WARNING: "warning",
        ir.DiagnosticSeverity.NOTE: "note",
        ir.DiagnosticSeverity.REMARK: "remark",
    }[diag.severity]
    lines = [f"{format_location(diag.location, source_name)}: {severity}: {diag.message}"]
    lines += [format_diagnostic(note, source_name) for note in diag.notes]
    return "\n".join(lines)


MAX_NESTING = 512
"""The deepest nesting of brackets (regions ``{``, ``(``, ``[``, ``<``) that :func:`parse`
and hir-opt accept. MLIR's parser recurses once per level and overflows the C stack (a
SIGSEGV, no message) a few thousand levels down; real programs stay under a few dozen."""

_NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[{}()\[\]<>]')


def check_nesting(text: str, filename: str, limit: int = MAX_NESTING) -> None:
    """Raise :class:`HirError` at the first bracket nested deeper than ``limit`` (strings and
    comments skipped), before the parser recurses into it."""
    if sum(text.count(c) for c in "{([<") <= limit:
        return
    depth = 0
    for m in _NESTING_TOKENS.finditer(text):
        c = m.group()
        if c in "{([<":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                raise HirError(f"{filename}:{line}:{col}: error: nesting deeper than {limit} levels; hir refuses it "
                               "(MLIR's parser would overflow its stack)")
        elif c in "})]>":
            depth = max(0, depth - 1)


@checkpoint
def parse(text: str, filename: str = "<string>", context: Optional[ir.Context] = None) -> ir.Module:
    """Parse and verify an hir module (placements included: every ``#hir.shard`` must divide
    its buffer); errors raise :class:`HirError` with locations reported against ``filename``."""
    if not isinstance(text, str):
        raise HirError(f"error: hir.parse: expected MLIR text (a str), got {type(text).__name__}")
    check_nesting(text, filename)
    ctx = context or new_context()
    with ctx:
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as err:
            located = None if err.error_diagnostics else locate_custom_syntax(text, filename)
            raise HirError(located or format_mlir_error(err, filename)) from None
        errors = check_placements(module.operation, filename)
        if errors:
            raise HirError("\n".join(errors))
        return module


def format_mlir_error(err: "ir.MLIRError", source_name: Optional[str] = None) -> str:
    """The diagnostics an MLIRError carries, one ``file:line:col: error: ...`` each."""
    lines = [format_diagnostic(d, source_name) for d in err.error_diagnostics]
    return "\n".join(lines) or f"{source_name or '<input>'}: error: {err.message}"


def read_source(path: str) -> tuple[str, str]:
    """``(display name, text)`` of an MLIR source file (``-``: stdin), read as UTF-8.
    Unreadable files and bytes that are not UTF-8 raise :class:`HirError` naming the file
    (and, for bad bytes, ``file:line:col`` as mlir-opt reports an unexpected character)."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as err:
        raise HirError(f"{name}: error: cannot read: {err.strerror}") from None
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        line = before.count(b"\n") + 1
        col = err.start - (before.rfind(b"\n") + 1) + 1
        byte = data[err.start]
        raise HirError(f"{name}:{line}:{col}: error: unexpected character: byte 0x{byte:02x} is not UTF-8 text") from None


# An hir op written in custom (pretty) form: at the start of a line or after "%x = ".
_CUSTOM_HIR_OP = re.compile(r"^(?P<lead>\s*(?:%[\w#:, %]*=\s*)?)(?P<op>hir\.\w+)\b", re.M)


def locate_custom_syntax(text: str, source_name: str) -> Optional[str]:
    """MLIR reports nothing (no location) when an op of a dialect defined at run time is
    written in custom form; find the first such hir op so the error can point at it."""
    m = _CUSTOM_HIR_OP.search(text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    col = len(m["lead"]) + 1
    return (
        f"{source_name}:{line}:{col}: error: '{m['op']}' is written in custom form; hir ops parse in "
        f"MLIR's generic form only: \"{m['op']}\"(operands) {{attributes}} : (operand types) -> result types"
    )
