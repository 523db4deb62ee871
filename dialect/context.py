"""Contexts, parsing and diagnostics: the bottom layer that passes, the interpreter and the
CLIs share (no torch import). Public as :mod:`hir.core`."""

import inspect
import os
import re
import sys
from typing import Any

from torch_mlir import ir

from hir.dialect.base import load
from hir.dialect.gc_stress import checkpoint
from hir.dialect.locations import format_location
from hir.dialect.placement_checks import check_placements, may_hold_placements
from hir.dialect.streams import module_attribute_errors


class HirError(ValueError):
    """A user-facing error (bad input: a program, an argument, a file, a command line).

    ``message`` is ``file:line:col: error: ...`` lines where the program is at fault (or
    ``error: ...`` where no position applies); ``caller`` is ``file:line`` of the call into
    hir that raised it: the frame just outside hir's outermost one on the stack (None when
    hir was not called from outside). ``str(err)`` names both: an unlocated ``error: ...`` is
    located at the caller, a located one gets a ``note`` line naming the call. CLIs print
    ``message`` (their caller is the command line). A ``ValueError``, so code written for
    hir's older ``ValueError``s keeps catching these."""

    def __init__(self, message: str, caller: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.caller = caller if caller is not None else api_caller()

    def __str__(self) -> str:
        return with_caller(self.message, self.caller)


def with_caller(message: str, caller: str | None) -> str:
    """``message`` naming ``caller`` (see :class:`HirError`)."""
    if not caller or caller in message:
        return message
    if message.startswith("error: "):
        return f"{caller}: {message}"
    return f"{message}\n{caller}: note: called from here"


_HIR_FILES: dict[str, bool] = {}  # co_filename -> whether it is a file of the hir package


def _is_hir_file(filename: str) -> bool:
    known = _HIR_FILES.get(filename)
    if known is None:
        folders = [
            os.path.realpath(folder) + os.sep
            for name in ("hir", "hir.dialect", "hir.passes")
            if name in sys.modules
            for folder in getattr(sys.modules[name], "__path__", ())
        ]
        known = _HIR_FILES[filename] = os.path.realpath(filename).startswith(tuple(folders))
    return known


def _api_frame(frame) -> tuple:
    """(the frame that called into hir, how many frames above ``frame`` it is): the one just
    outside the outermost hir frame (hir code called back from torch, e.g. while tracing,
    stays inside); (None, 0) when hir was not called from outside."""
    caller, depth, level, inside = None, 0, 0, False
    while frame is not None:
        if _is_hir_file(frame.f_code.co_filename):
            inside, caller = True, None
        elif inside and caller is None:
            caller, depth = frame, level
        frame, level = frame.f_back, level + 1
    return caller, depth


def api_caller() -> str | None:
    """``file:line`` of the frame that called into hir (:func:`_api_frame`)."""
    frame, _ = _api_frame(sys._getframe(1))
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def api_stacklevel() -> int:
    """``warnings.warn(..., stacklevel=api_stacklevel())`` in hir code: the warning names the
    user's call into hir (:func:`_api_frame`), else the warning's own line."""
    frame, depth = _api_frame(sys._getframe(1))
    return depth + 1 if frame is not None else 1


def check_options(entry: str, options: dict, known: Any) -> None:
    """Refuse a keyword option ``entry`` (a public function's name) does not take, naming it
    and the ones it does; ``known``: the option names, or a callable whose parameters they are."""
    names = (
        list(known)
        if not callable(known)
        else [p for p in inspect.signature(known).parameters if p not in ("self", "module", "example_args")]
    )
    unknown = [name for name in options if name not in names]
    if unknown:
        raise HirError(f"error: {entry}: unknown option(s) {', '.join(unknown)} (options: {', '.join(names)})")


def new_context() -> ir.Context:
    """A context with the hir dialect loaded (upstream dialects are available by default)."""
    ctx = ir.Context()
    # hir pipelines run module-level passes from Python, so MLIR's thread pool buys nothing;
    # its worker threads also outlive torch.distributed's at exit and abort the process.
    ctx.enable_multithreading(False)
    load(ctx)
    return ctx


def format_diagnostic(diag: "ir.Diagnostic | ir.DiagnosticInfo", source_name: str | None = None) -> str:
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
_SKIPPED = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*|->')  # _NESTING_TOKENS' strings, comments, arrows
_AS_PARENS = bytes.maketrans(b"{[<}]>", b"((()))")
_NOT_BRACKETS = bytes(c for c in range(256) if chr(c) not in "{}()[]<>")


def _nesting_bound(text: str, limit: int) -> int:
    """An upper bound of the nesting depth :func:`check_nesting` measures, in a few passes of
    C-level string work (a big module has hundreds of thousands of brackets: a Python step per
    bracket is most of hir-opt's time on it). Each pass drops the innermost matched pairs; a
    position is inside at most one matched pair per pass, plus the brackets never closed.
    Stops counting past ``limit``."""
    brackets = _SKIPPED.sub("", text).encode().translate(_AS_PARENS, _NOT_BRACKETS)
    passes = 0
    while b"()" in brackets and passes <= limit:
        brackets = brackets.replace(b"()", b"")
        passes += 1
    return passes + brackets.count(b"(")


def check_nesting(text: str, filename: str, limit: int = MAX_NESTING) -> None:
    """Raise :class:`HirError` at the first bracket nested deeper than ``limit`` (strings and
    comments skipped), before the parser recurses into it."""
    if sum(text.count(c) for c in "{([<") <= limit or _nesting_bound(text, limit) <= limit:
        return
    depth = 0
    for m in _NESTING_TOKENS.finditer(text):
        c = m.group()
        if c in "{([<":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                raise HirError(
                    f"{filename}:{line}:{col}: error: nesting deeper than {limit} levels; hir refuses it "
                    "(MLIR's parser would overflow its stack)"
                )
        elif c in "})]>":
            depth = max(0, depth - 1)


@checkpoint
def parse(text: str, filename: str = "<string>", context: ir.Context | None = None) -> ir.Module:
    """Parse and verify an hir module (placements included: every ``#hir.shard`` must divide
    its buffer; and the stream module attributes); errors raise :class:`HirError` with locations reported against
    ``filename``."""
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
        errors = (
            check_placements(module.operation, filename) if may_hold_placements(text) else []
        ) + module_attribute_errors(module, filename)
        if errors:
            raise HirError("\n".join(errors))
        return module


def format_mlir_error(err: "ir.MLIRError", source_name: str | None = None) -> str:
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
        raise HirError(
            f"{name}:{line}:{col}: error: unexpected character: byte 0x{byte:02x} is not UTF-8 text"
        ) from None


# An hir op written in custom (pretty) form: a bare ``hir.name`` outside strings and comments
# that is not a type (``!hir.stream``), an attribute (``#hir.shard``), a value, symbol or
# block name, part of a longer name, or a key of an attribute dictionary (``{hir.parameter}``,
# ``hir.weight = "w"``).
_CUSTOM_HIR_OP = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|(?<![\w!#.%@^$])(?P<op>hir\.\w+)\b(?!\}|\s*[=,])')


def locate_custom_syntax(text: str, source_name: str) -> str | None:
    """MLIR reports nothing (no location) when an op of a dialect defined at run time is
    written in custom form; find the first such hir op so the error can point at it."""
    m = next((m for m in _CUSTOM_HIR_OP.finditer(text) if m["op"]), None)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return (
        f"{source_name}:{line}:{col}: error: '{m['op']}' is written in custom form; hir ops parse in "
        f'MLIR\'s generic form only: "{m["op"]}"(operands) {{attributes}} : (operand types) -> result types'
    )
