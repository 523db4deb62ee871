"""The multi-rank tests' launcher (multirank_util.launch_ranks, ranks forked from
rank_zygote.py) keeps hir.tools.launch's contract: each rank's environment and output, a
failing rank stopping the others and naming itself, a timeout stopping every rank."""

from multirank_util import launch_ranks

RANK = """import os, sys, time
rank = int(os.environ["RANK"])
print(f"rank {rank} of {os.environ['WORLD_SIZE']} argv {sys.argv[1:]} {__name__}")
print("to stderr", file=sys.stderr)
mode = os.environ["HIR_TEST_MODE"]
if mode == "fail" and rank == 1:
    sys.exit(3)
if mode != "ok":
    time.sleep(600)
"""


def run(tmp_path, mode: str, timeout_s: float = 60):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    return launch_ranks(3, str(script), "x", timeout_s=timeout_s, env={"HIR_TEST_MODE": mode, "PATH": "/usr/bin:/bin"})


def test_every_rank_runs_as_main_with_its_environment(tmp_path):
    result = run(tmp_path, "ok")
    assert result.returncode == 0 and not result.timed_out and result.first_failure is None
    assert [r.stdout for r in result.ranks] == [f"rank {r} of 3 argv ['x'] __main__\n" for r in range(3)]
    assert all(r.stderr == "to stderr\n" and r.returncode == 0 and not r.stopped for r in result.ranks)


def test_a_failing_rank_stops_the_others(tmp_path):
    result = run(tmp_path, "fail")
    assert result.returncode == 3 and result.first_failure == 1 and not result.timed_out
    assert [r.stopped for r in result.ranks] == [True, False, True]
    assert result.ranks[0].returncode < 0  # terminated by a signal


def test_a_timeout_stops_every_rank(tmp_path):
    result = run(tmp_path, "hang", timeout_s=2)
    assert result.returncode == 124 and result.timed_out and all(r.stopped for r in result.ranks)
