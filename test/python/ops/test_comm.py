"""The comm group: every collective and send/recv with 2 and 4 Gloo processes (one launch
per process count runs every case of comm_worker.py: process start-up is the expensive
part; each case is reported as its own test), a team of one rank on one process, and a
failing rank ending the whole run before any timeout."""

import os
import sys

import comm_worker
import pytest
import torch

from hir.tools import launch as launch_module
from hir.tools import run_cli
from hir.tools.launch import launch
from interp_util import mem, run
from multirank_util import launch_ranks

WORKER = os.path.join(os.path.dirname(__file__), "comm_worker.py")
# The collective timeout of the failing-rank tests: longer than any loaded machine needs to
# start two ranks, so a run that ends before it ended for another reason.
DIST_TIMEOUT = 300


def _run_worker(nproc: int) -> dict[str, list[str]]:
    result = launch_ranks(nproc, WORKER, timeout_s=600)  # a hang guard: minutes on a loaded machine
    lines: dict[str, list[str]] = {}
    for rank in result.ranks:
        for line in rank.stdout.splitlines():
            status, _, rest = line.partition(" ")
            name = rest.split(":", 1)[0]
            lines.setdefault(name, []).append(line if status == "FAIL" else "PASS")
    assert not result.timed_out, "the collective worker timed out"
    if result.first_failure is not None and not lines:
        pytest.fail(f"rank {result.first_failure} failed:\n{result.ranks[result.first_failure].stderr}")
    return lines


@pytest.fixture(scope="module")
def two_ranks():
    return _run_worker(2)


@pytest.fixture(scope="module")
def four_ranks():
    return _run_worker(4)


@pytest.mark.parametrize("case", list(comm_worker.CASES))
def test_comm_2_ranks(two_ranks, case):
    assert two_ranks.get(case) == ["PASS"] * 2, two_ranks.get(case)


@pytest.mark.parametrize("case", list(comm_worker.CASES))
def test_comm_4_ranks(four_ranks, case):
    assert four_ranks.get(case) == ["PASS"] * 4, four_ranks.get(case)


FAILING_RANK = """
func.func @main(%x: memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>,
    %a: memref<2x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %o: memref<3xf32>) {
  %c9 = arith.constant 9 : index
  %v = "hir.alias_select"(%x, %c9) {axis = 0 : i64} : (memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>, index)
      -> memref<f32, strided<[], offset: ?>, #hir.shard<array<i64: 1>, -1 : i64>>
  %w = "hir.allreduce"(%a, %o) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
      : (memref<2x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<3xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}
"""


def test_comm_failing_rank_stops_every_rank(tmp_path, monkeypatch, capsys):
    """Rank 1 fails before the allreduce that rank 0 is blocked in: the run ends with rank
    1's located error before rank 0's collective could time out (the launcher stops rank 0,
    or rank 0 sees rank 1's connection close). Load-proof: the collective timeout is longer
    than any loaded machine needs to start two ranks, and the test checks how rank 0 ended
    (never by that timeout), not how long the run took."""
    prog = tmp_path / "fail.mlir"
    prog.write_text(FAILING_RANK)
    monkeypatch.setenv("HIR_DIST_TIMEOUT", str(DIST_TIMEOUT))
    launches = []

    def recorded(*args, **kwargs):  # the real launch; its result tells how each rank ended
        launches.append(launch(*args, **kwargs))
        return launches[-1]

    monkeypatch.setattr(launch_module, "launch", recorded)
    rc = run_cli.main(["--nproc", "2", "--device", "cpu", "--timeout", str(2 * DIST_TIMEOUT), str(prog)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "fail.mlir:5:" in err and "index 9 is out of range" in err
    assert "rank 1 failed" in err and "Traceback" not in err, err
    (result,) = launches
    assert not result.timed_out and result.first_failure == 1
    assert result.ranks[0].stopped or "timed out" not in result.ranks[0].stderr.lower(), result.ranks[0].stderr


def test_comm_dead_peer_times_out(tmp_path):
    """Without a launcher to stop it, a rank blocked on a peer that never comes fails after
    $HIR_DIST_TIMEOUT instead of hanging: rank 1 sleeps until it is stopped; rank 0 gives
    up waiting for it, fails first, and the launcher then stops rank 1."""
    script = tmp_path / "sleeper.py"
    script.write_text(
        "import os, sys, time\n"
        "if os.environ['RANK'] == '1':\n"
        "    time.sleep(3600)\n"
        "    sys.exit(0)\n"
        "from hir.tools.run_cli import main\n"
        f"sys.exit(main(['--device', 'cpu', {str(tmp_path / 'p.mlir')!r}]))\n"
    )
    (tmp_path / "p.mlir").write_text(FAILING_RANK.replace("%c9 = arith.constant 9", "%c9 = arith.constant 0"))
    result = launch(
        2, [sys.executable, str(script)], timeout_s=2 * DIST_TIMEOUT, env=dict(os.environ, HIR_DIST_TIMEOUT="3")
    )
    assert not result.timed_out and result.first_failure == 0 and result.ranks[0].returncode == 1
    assert "Timed out after" in result.ranks[0].stderr and "waiting for clients" in result.ranks[0].stderr, (
        result.ranks[0].stderr
    )
    assert result.ranks[1].stopped


def test_interp_single_rank_collective():
    """A team of one rank runs through a one-process group."""
    t = "memref<2x3xf32, #hir.shard<array<i64: 0>, 0 : i64>>"
    text = f"""func.func @main(%a: {t}, %b: {mem([2, 3])}) {{
  %w = "hir.allgather"(%a, %b) {{axis = 0 : i64, backend = "gloo", team = array<i64: 0>}}
      : ({t}, {mem([2, 3])}) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}}"""
    a, b = torch.randn(2, 3), torch.zeros(2, 3)
    run(text, [a, b])
    assert torch.equal(a, b)
