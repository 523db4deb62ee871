"""scripts/check's progress under pytest-xdist (file_progress.py): a line per test file once
its last test has ended, with its outcomes and "[done/total]", and a FAILED line per failure
as it arrives, from the reports the workers send (interleaved across files)."""

from _pytest.reports import TestReport

from file_progress import FileProgress


class Lines:
    """The terminal reporter's write_line, recorded."""

    def __init__(self):
        self.lines: list[str] = []

    def write_line(self, line: str, **markup) -> None:
        self.lines.append(line)


def report(nodeid: str, when: str, outcome: str) -> TestReport:
    longrepr = ("x.py", 1, "Skipped: no") if outcome == "skipped" else None
    return TestReport(nodeid, ("x.py", 1, nodeid), {}, outcome, longrepr, when)


def run(progress: FileProgress, nodeid: str, outcome: str, when: str = "call") -> None:
    """A test's three reports: ``outcome`` at ``when`` (setup: skipped there), passed otherwise."""
    if when == "setup":
        progress.pytest_runtest_logreport(report(nodeid, "setup", outcome))
    else:
        progress.pytest_runtest_logreport(report(nodeid, "setup", "passed"))
        progress.pytest_runtest_logreport(report(nodeid, "call", outcome))
    progress.pytest_runtest_logreport(report(nodeid, "teardown", "passed"))


def test_a_line_per_file_as_its_last_test_ends():
    lines = Lines()
    progress = FileProgress(lines)
    ids = ["a.py::t1", "a.py::t2", "a.py::t3", "b.py::u1", "b.py::u2"]
    progress.pytest_xdist_node_collection_finished(None, ids)
    progress.pytest_xdist_node_collection_finished(None, ids)  # the second worker's collection
    run(progress, "a.py::t1", "passed")
    run(progress, "b.py::u1", "skipped", when="setup")
    assert lines.lines == []
    run(progress, "a.py::t2", "failed")
    assert lines.lines == ["FAILED a.py::t2 (call)"]
    run(progress, "b.py::u2", "passed")
    run(progress, "a.py::t3", "skipped")
    assert lines.lines == [
        "FAILED a.py::t2 (call)",
        "b.py: 1 passed, 1 skipped [4/5]",
        "a.py: 1 failed, 1 passed, 1 skipped [5/5]",
    ]
