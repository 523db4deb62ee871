"""Source locations as ``file:line:col`` (below :mod:`hir.dialect.context`, so that the
checks parsing runs, :mod:`hir.dialect.placement_checks` and :mod:`hir.dialect.streams`,
can name where an error is without importing the parser)."""

import re

from torch_mlir import ir

_LOC = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')


def format_location(loc: ir.Location, source_name: str | None = None) -> str:
    """``file:line:col`` for a file location, else MLIR's own spelling. Text parsed from a
    string is located in file "-"; ``source_name`` names it."""
    text = str(loc)
    m = _LOC.match(text) or re.search(r'"(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)', text)
    if not m:
        return text
    name = source_name if m["file"] == "-" and source_name else m["file"]
    return f"{name}:{m['line']}:{m['col']}"
