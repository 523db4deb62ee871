"""Ctrl-C (issue 37): SIGINT during hir-import, hir-opt, hir-run and hir-run --nproc 2 prints
one line (``hir-run: interrupted``), exits 130, leaves no partial output file and no process
behind. Each command is paused at a known point by the test hook ($HIR_TEST_PAUSE, see
hir.interrupts): the processes that reach it write their pids into a folder, and the test
signals the command only once they all have, so nothing depends on timing."""

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

PROGRAM = """func.func @main(%a: memref<4x4xf32>) -> memref<4x4xf32> {
  %o = memref.alloc() : memref<4x4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  return %o : memref<4x4xf32>
}
"""
MODEL = "import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args = (torch.ones(3, 4),)\n"
TOOLS = {"hir-opt": "hir.tools.opt", "hir-run": "hir.tools.run_cli", "hir-import": "hir.tools.import_cli"}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def interrupt(
    tmp_path, tool: str, point: str, paused: int, *args: str
) -> tuple[subprocess.CompletedProcess, list[int]]:
    """Run ``tool args`` until ``paused`` processes wait at ``point``, then SIGINT it; returns
    its result and the pids of the paused processes."""
    pauses = tmp_path / "paused"
    pauses.mkdir()
    env = dict(os.environ, HIR_TEST_PAUSE=f"{point}:{pauses}", HIR_DEVICE="cpu")
    proc = subprocess.Popen(
        [sys.executable, "-m", TOOLS[tool], *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while len(os.listdir(pauses)) < paused:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never reached the pause point"
            time.sleep(0.05)
        time.sleep(0.1)  # the pid files are written just before the wait starts
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), [int(name) for name in os.listdir(pauses)]


def assert_interrupted(result: subprocess.CompletedProcess, tool: str, pids: list[int], folder, kept: set) -> None:
    assert result.returncode == 130, result.stderr
    assert result.stderr == f"{tool}: interrupted\n"  # one line, no traceback
    assert not any(alive(pid) for pid in pids), "a process outlived the interrupted command"
    assert {name for name in os.listdir(folder) if name != "paused"} == kept  # no partial output


def test_hir_opt(tmp_path):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    result, pids = interrupt(tmp_path, "hir-opt", "write", 1, "p.mlir", "--hir-lower", "-o", "out.mlir")
    assert_interrupted(result, "hir-opt", pids, tmp_path, {"p.mlir"})


def test_hir_import(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    result, pids = interrupt(tmp_path, "hir-import", "write", 1, "m.py", "-o", "m.mlir")
    assert_interrupted(result, "hir-import", pids, tmp_path, {"m.py"})


def test_hir_run(tmp_path):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    result, pids = interrupt(tmp_path, "hir-run", "run", 1, "p.mlir", "ones", "--save", "out.pt")
    assert_interrupted(result, "hir-run", pids, tmp_path, {"p.mlir"})


@pytest.mark.parametrize(
    "point", ["run", pytest.param("write", marks=pytest.mark.slow)], ids=["ranks-up", "ranks-writing"]
)
def test_hir_run_two_ranks(tmp_path, point):
    """Both ranks up (at the run, or with their --save files half written): the launcher
    stops them, nothing of theirs is left, one line is printed."""
    (tmp_path / "p.mlir").write_text(PROGRAM)
    torch.save(torch.ones(4, 4), tmp_path / "x.pt")
    result, pids = interrupt(tmp_path, "hir-run", point, 2, "--nproc", "2", "p.mlir", "x.pt", "--save", "out.pt")
    assert len(pids) == 2 and os.getpid() not in pids
    assert_interrupted(result, "hir-run", pids, tmp_path, {"p.mlir", "x.pt"})
