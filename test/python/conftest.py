"""Shared pytest fixtures: an MLIR context with hir loaded. ``ops/`` is importable from every
test file (its ``comm_worker`` also drives the NCCL runs of test_interpreter_gpu.py), not only
once pytest has happened to collect a test there."""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "ops"))
# Imports cached on disk (hir.compile(module, ...), hir.generate) go to a directory of this
# session: a test imports what the code under test makes, never an entry of an earlier run.
_CACHE = None if "HIR_CACHE_DIR" in os.environ else tempfile.mkdtemp(prefix="hir-test-cache-")
if _CACHE is not None:
    os.environ["HIR_CACHE_DIR"] = _CACHE

from hir.core import new_context


@pytest.fixture
def ctx():
    context = new_context()
    with context:
        yield context


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.slow`` cases (e.g. 8 Gloo ranks on 2 cores) run with HIR_TEST_SLOW=1."""
    if os.environ.get("HIR_TEST_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set HIR_TEST_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


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
            self.terminal.write_line(f"FAILED {report.nodeid} ({report.when}, worker {report.node.gateway.id})", red=True)
        elif report.skipped or report.passed and report.when == "call":
            outcomes[report.outcome] = outcomes.get(report.outcome, 0) + 1
        if report.when != "teardown" or file not in self.left:
            return
        self.done += 1
        self.left[file] -= 1
        if self.left[file] == 0:
            counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
            self.terminal.write_line(f"{file}: {counts} [{self.done}/{self.total}]")


@pytest.hookimpl(trylast=True)  # after xdist's own, which registers its controller
def pytest_configure(config):
    if config.pluginmanager.hasplugin("dsession"):  # the xdist controller, not a worker
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            config.pluginmanager.register(FileProgress(terminal), "hir-file-progress")


def pytest_unconfigure(config):
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)
