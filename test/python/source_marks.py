"""Lines of a test's own source found by a marker comment (``# at: TAG`` at the end of the line),
so a test that asserts a diagnostic's ``file:line:col`` holds however the file is formatted: a
formatter moves lines and wraps a long ``with`` statement over several."""

import re
from pathlib import Path


def marked(path: str, tag: str) -> tuple[int, str]:
    """The 1-based number and text of the one line of ``path`` that ends with ``# at: TAG``."""
    lines = [
        (n, text)
        for n, text in enumerate(Path(path).read_text().splitlines(), 1)
        if text.rstrip().endswith(f"# at: {tag}")
    ]
    assert len(lines) == 1, f"{path}: {len(lines)} lines end with '# at: {tag}', expected one"
    return lines[0]


def marked_site(path: str, tag: str) -> str:
    """``path:line:`` of the marked line, as a regex (a located error's prefix, before its column)."""
    return re.escape(f"{path}:{marked(path, tag)[0]}:")
