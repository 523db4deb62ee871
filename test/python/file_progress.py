"""The progress lines of a pytest-xdist run (scripts/check), registered by conftest.py in
the controller."""

import pytest


class FileProgress:
    """pytest-xdist's workers (scripts/check runs pytest on every core) finish tests of many
    files at once: instead of a letter per test, a line per test file as its last test ends,
    with its outcomes and "[done/total]", and a line per failure as it happens."""

    def __init__(self, terminal):
        self.terminal = terminal
        self.left: dict[str, int] = {}  # file -> its tests not yet ended
        self.outcomes: dict[str, dict[str, int]] = {}
        self.done = self.total = 0

    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.total:  # every worker collects the same tests
            return
        self.total = len(ids)
        for nodeid in ids:
            file = nodeid.split("::")[0]
            self.left[file] = self.left.get(file, 0) + 1

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config):
        category, _, word = yield
        return category, "", word  # counted in the summary, not printed as a letter

    def pytest_runtest_logreport(self, report):
        file = report.nodeid.split("::")[0]
        outcomes = self.outcomes.setdefault(file, {})
        if report.failed:
            outcomes["failed"] = outcomes.get("failed", 0) + 1
            worker = getattr(getattr(report, "node", None), "gateway", None)
            where = f"{report.when}, worker {worker.id}" if worker is not None else report.when
            self.terminal.write_line(f"FAILED {report.nodeid} ({where})", red=True)
        elif report.skipped or report.passed and report.when == "call":
            outcomes[report.outcome] = outcomes.get(report.outcome, 0) + 1
        if report.when != "teardown" or file not in self.left:
            return
        self.done += 1
        self.left[file] -= 1
        if self.left[file] == 0:
            counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
            self.terminal.write_line(f"{file}: {counts} [{self.done}/{self.total}]")
