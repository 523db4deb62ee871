"""Comments and docstrings say what the code does and why, never which issue or numbered run led
to it: that history belongs to git and benchmarks/RESULTS.md."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"issues? [0-9]+|\brun [0-9]+\b")


def test_no_issue_or_run_numbers_in_package_code():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("dialect", "passes", "python")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, "history in comments (say what and why; the history is git's):\n" + "\n".join(found)
