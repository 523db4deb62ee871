"""``--verify-diagnostics`` for hir-opt, after mlir-opt's: comments such as

    // expected-error @+1 {{must not be empty}}
    // expected-error @below {{...}}   // @above, @-2, or none: the comment's own line

must each match (substring) a produced diagnostic of that severity on that line, and every
produced error must be expected."""

import re
from dataclasses import dataclass

_DIAG = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note|remark): (?P<msg>.*)$")
_EXPECT = re.compile(
    r"expected-(?P<sev>error|warning|note|remark)\s*(?:@(?P<where>[+-]\d+|above|below))?\s*\{\{(?P<msg>.*?)\}\}"
)


@dataclass
class Diagnostic:
    line: int | None
    severity: str
    message: str
    text: str


def parse_diagnostics(text: str) -> list[Diagnostic]:
    """Split formatted ``file:line:col: severity: message`` lines into diagnostics
    (continuation lines belong to the previous one)."""
    diags: list[Diagnostic] = []
    for raw in text.splitlines():
        m = _DIAG.match(raw)
        if m:
            diags.append(Diagnostic(int(m["line"]), m["sev"], m["msg"], raw))
        elif diags:
            diags[-1].message += "\n" + raw
            diags[-1].text += "\n" + raw
        else:
            kind = "error" if "error" in raw else "note"
            diags.append(Diagnostic(None, kind, raw, raw))
    return diags


def with_source_lines(text: str, lines: list[str], source: str) -> str:
    """``text`` with each ``source:line:col:`` diagnostic followed by its source line and a
    caret under the column, as mlir-opt shows them (``lines``: the source's lines)."""
    out = []
    for raw in text.splitlines():
        out.append(raw)
        m = _DIAG.match(raw)
        if m and m["file"] == source and 1 <= int(m["line"]) <= len(lines):
            line = lines[int(m["line"]) - 1].rstrip("\r")
            # Tabs stay tabs so that the caret lines up however a terminal expands them.
            out += [line, "".join(c if c == "\t" else " " for c in line[: int(m["col"]) - 1]) + "^"]
    return "\n".join(out)


def _expectations(chunk: str) -> list[tuple[int, int, int, str, str]]:
    """(line, column) of each expectation comment, the line it is about, its severity and
    its message."""
    lines = chunk.split("\n")
    out = []
    for number, line in enumerate(lines, start=1):
        for m in _EXPECT.finditer(line):
            where = m["where"]
            if where is None:
                target = number
            elif where == "above":
                target = number - 1
            elif where == "below":
                target = number + 1
            else:
                target = number + int(where)
            out.append((number, m.start() + 1, target, m["sev"], m["msg"]))
    return out


def check_expected(chunk: str, produced: list[Diagnostic], source: str) -> list[str]:
    """Problems (formatted as errors) with the produced diagnostics of one chunk."""
    remaining = list(produced)
    problems = []
    for comment_line, column, line, severity, message in _expectations(chunk):
        match = next((d for d in remaining if d.line == line and d.severity == severity and message in d.message), None)
        if match is None:  # reported at the comment, as mlir-opt does
            problems.append(
                f'{source}:{comment_line}:{column}: error: expected {severity} "{message}" was not produced'
            )
        else:
            remaining.remove(match)
    for diag in remaining:
        if diag.severity in ("error", "warning"):
            problems.append(
                f"{diag.text}\n{source}:{diag.line}: error: unexpected "
                f"{diag.severity} (no expected-{diag.severity} comment)"
            )
    return problems
