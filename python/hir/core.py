"""Contexts, parsing and diagnostics (defined in :mod:`hir.dialect.context`, the layer every
other one builds on): ``HirError``, ``new_context``, ``parse`` and the error formatters."""

from hir.dialect.context import (
    HirError,
    format_diagnostic,
    format_location,
    format_mlir_error,
    locate_custom_syntax,
    new_context,
    parse,
    read_source,
)

__all__ = [
    "HirError",
    "format_diagnostic",
    "format_location",
    "format_mlir_error",
    "locate_custom_syntax",
    "new_context",
    "parse",
    "read_source",
]
