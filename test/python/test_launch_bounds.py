"""``hir-run --nproc``: a rank count above the machine's limit is refused before any rank starts
(``--max-nproc`` overrides the limit), and a launch that fails part way stops the ranks it
started and removes its temporary folder."""

import os
import subprocess
import sys
import time

import pytest

from hir.interrupts import cli_main
from hir.tools import launch as launch_module
from hir.tools import run_cli, run_ranks
from hir.tools.launch import FAILURE_LOG_ENV, LaunchError, launch, rank_limit

PROG = """func.func @main(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIR_DEVICE", "cpu")
    monkeypatch.delenv("HIR_LAUNCHED", raising=False)
    (tmp_path / "p.mlir").write_text(PROG)
    return tmp_path


@pytest.fixture
def no_launch(monkeypatch):
    """Fails the test if hir-run gets as far as starting ranks."""

    def refuse(*args, **kwargs):
        raise AssertionError("ranks were started")

    monkeypatch.setattr(launch_module, "launch", refuse)


def test_cpu_limit_is_per_core():
    limit, why = rank_limit(False)
    assert limit == launch_module.RANKS_PER_CPU * os.cpu_count()
    assert "core" in why


@pytest.mark.parametrize("nproc", [lambda limit: limit + 1, lambda limit: 1000000])
def test_nproc_above_limit_is_refused_at_once(work, no_launch, capsys, nproc):
    """Refused before any rank starts (no_launch fails the test at the first one)."""
    n = nproc(rank_limit(False)[0])
    assert run_cli.main(["p.mlir", "--nproc", str(n)]) == 1
    err = capsys.readouterr().err
    assert f"--nproc {n}: more ranks than this run may start (at most {rank_limit(False)[0]}" in err
    assert "--max-nproc N raises the limit" in err


def test_max_nproc_lowers_and_raises_the_limit(work, no_launch, capsys):
    assert run_cli.main(["p.mlir", "--nproc", "3", "--max-nproc", "2"]) == 1
    assert "--nproc 3: more ranks than this run may start (at most 2: --max-nproc 2)" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="ranks were started"):  # allowed: it gets to the launch
        run_cli.main(["p.mlir", "--nproc", str(rank_limit(False)[0] + 1), "--max-nproc", "1000"])


def test_limit_applies_to_the_installed_cli(work):
    """The refusal from a real process, as a user sees it: exit 1, a message, no traceback."""
    env = dict(os.environ, HIR_DEVICE="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "hir.tools.run_cli", "p.mlir", "--nproc", "1000000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "--nproc 1000000: more ranks than this run may start" in result.stderr


def test_refusal_without_device_flag_comes_before_torch(work):
    """``hir-run --nproc 1000000`` with no --device / $HIR_DEVICE on a machine without GPUs:
    refused without importing torch (seconds on a loaded machine), exit 1."""
    if run_ranks.gpu_nodes():
        pytest.skip("this machine has NVIDIA device nodes: the limit asks torch for the GPU count")
    env = {k: v for k, v in os.environ.items() if k != "HIR_DEVICE"}
    code = (
        "import sys; from hir.tools import run_cli; rc = run_cli.main(['p.mlir',"
        " '--nproc', '1000000']); print(rc, 'torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=work, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.stdout.split() == ["1", "False"], result.stderr
    assert "--nproc 1000000: more ranks than this run may start" in result.stderr


def test_launch_failing_part_way_cleans_up(monkeypatch):
    """Rank 2 of 4 cannot start: ranks 0 and 1 are stopped and the temporary folder is gone."""
    real_popen = subprocess.Popen
    started, folders = [], []

    def popen(argv, env, **kwargs):
        folders.append(os.path.dirname(env[FAILURE_LOG_ENV]))
        if env["RANK"] == "2":
            raise OSError(11, "Resource temporarily unavailable")
        started.append(real_popen(argv, env=env, **kwargs))
        return started[-1]

    monkeypatch.setattr(launch_module.subprocess, "Popen", popen)
    with pytest.raises(LaunchError, match="cannot start rank 2 of 4: Resource temporarily unavailable"):
        launch(4, [sys.executable, "-c", "import time; time.sleep(600)"])
    assert len(started) == 2 and all(p.poll() is not None for p in started)
    assert not os.path.exists(folders[0])


def test_interrupted_launch_cleans_up(monkeypatch):
    """An interrupt while the ranks run (Ctrl-C in the launcher) stops every rank."""
    real_popen = subprocess.Popen
    started = []

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    def interrupt(procs, timeout_s):
        raise KeyboardInterrupt

    monkeypatch.setattr(launch_module.subprocess, "Popen", popen)
    monkeypatch.setattr(launch_module, "_supervise", interrupt)
    with pytest.raises(KeyboardInterrupt):
        launch(2, [sys.executable, "-c", "import time; time.sleep(600)"])
    assert len(started) == 2 and all(p.poll() is not None for p in started)


def test_terminate_while_a_rank_starts_stops_that_rank(monkeypatch):
    """A SIGTERM that lands inside Popen (rank 1 forked, not yet recorded: the window the
    terminated-launcher test below hits at random) is held until the rank is recorded, so
    the launch stops it with the others instead of orphaning it."""
    import signal

    real_popen = subprocess.Popen
    started = []

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        if len(started) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before popen returns
        return started[-1]

    @cli_main("hir-run")
    def main(argv):
        launch(3, [sys.executable, "-c", "import time; time.sleep(600)"])
        return 0

    monkeypatch.setattr(launch_module.subprocess, "Popen", popen)
    try:
        with pytest.raises(SystemExit) as stopped:
            main([])
        assert stopped.value.code == 128 + signal.SIGTERM
        assert len(started) == 2 and all(p.poll() is not None for p in started)
    finally:
        for p in started:
            p.kill()
            p.wait()


def test_run_reports_a_launch_failure(work, monkeypatch, capsys):
    def fail(nproc, argv, **kwargs):
        raise LaunchError("cannot start rank 1 of 2: Resource temporarily unavailable")

    monkeypatch.setattr(launch_module, "launch", fail)
    assert run_cli.main(["p.mlir", "--nproc", "2"]) == 1
    assert "--nproc 2: cannot start rank 1 of 2" in capsys.readouterr().err


def test_terminated_launcher_stops_its_ranks(tmp_path):
    """SIGTERM to ``hir-run --nproc 2`` (a CI job's timeout) stops both ranks and removes the
    launch folder instead of orphaning them."""
    import signal

    (tmp_path / "loop.mlir").write_text(
        """func.func @main(%a: memref<4xf32>, %n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "hir.for"(%c0, %n, %c1) ({
  ^bb0(%i: index):
    "hir.binary"(%a, %a, %a) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return %a : memref<4xf32>
}
"""
    )
    env = dict(os.environ, HIR_DEVICE="cpu", TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hir.tools.run_cli", "loop.mlir", "random", "1000000000", "--nproc", "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("hir-launch-*/1.out")) and time.monotonic() < deadline:
        time.sleep(0.1)
    folders = list(tmp_path.glob("hir-launch-*"))
    assert folders, "the launch did not start"
    ranks = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert not any(f.exists() for f in folders)
    assert ranks and not any(os.path.exists(f"/proc/{pid}") and _alive(pid) for pid in ranks)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
