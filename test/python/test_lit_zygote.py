"""lit's fork servers (test/lit_zygote.py) run ``hir-run`` / ``hir-import`` / ``hir-opt`` as the installed
scripts do: the same stdout, stderr and exit status, reading the caller's stdin,
environment and working directory; a shim whose server is gone runs the installed script."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import lit_zygote

# How long a test waits for a tool to start or to stop before it fails: a hang guard, not a
# speed figure (starting hir-import takes seconds, minutes on a loaded machine). The slow
# modules sleep far longer, so a tool gone before then was stopped, not finished.
HANG_GUARD_S = 300
PROGRAM = "func.func @main(%a: memref<2xf32>) -> memref<2xf32> {\n  return %a : memref<2xf32>\n}\n"

CASES = [  # (argv, extra environment, stdin)
    (["hir-run", "id.mlir", "ones:2", "--print"], {}, None),  # a file of the working directory
    (["hir-run", "-", "ones:2", "--print"], {}, PROGRAM),  # the program on stdin
    (["hir-run", "id.mlir", "ones:2"], {"HIR_DEVICE": "bogus"}, None),  # the environment: exit 1
    (["hir-run", "missing.mlir"], {}, None),
    (["hir-import", "--nope"], {}, None),  # argparse's usage error: exit 2
    (["hir-run", "--nproc", "2", "id.mlir", "ones:2", "--print"], {}, None),  # ranks forked through the python shim
    (["hir-opt", "id.mlir", "--hir-lower"], {}, None),
    (["hir-opt", "-", "--bogus"], {}, PROGRAM),  # stdin; a usage error
]


def _start() -> str:
    """A fork server's shims' directory (skips where the tools are not installed)."""
    if None in [shutil.which(tool) for tool in lit_zygote.TOOLS]:
        pytest.skip("hir-run / hir-import / hir-opt are not installed")
    folder = lit_zygote.start({**os.environ, "HIR_DEVICE": "cpu"})
    assert folder is not None, "the fork server did not start"
    return folder


@pytest.fixture(scope="module")
def shims():
    return _start()


def _run(tool_path: str, argv: list, env: dict, stdin, cwd) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HIR_DEVICE": "cpu", **env}
    return subprocess.run(
        [tool_path, *argv[1:]],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=HANG_GUARD_S,
    )


@pytest.mark.parametrize(
    "argv, env, stdin", CASES, ids=[" ".join(c[0]) + "".join(f" {k}={v}" for k, v in c[1].items()) for c in CASES]
)
def test_shim_equals_the_installed_script(shims, tmp_path, argv, env, stdin):
    (tmp_path / "id.mlir").write_text(PROGRAM)
    got = _run(os.path.join(shims, argv[0]), argv, env, stdin, tmp_path)
    want = _run(shutil.which(argv[0]), argv, env, stdin, tmp_path)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)


def test_rank_python_runs_other_command_lines_as_python(shims, tmp_path):
    """The python that a forked hir-run starts its ranks with is the real python for
    anything but ``-m hir.tools.run_cli``."""
    rank_python = lit_zygote._rank_python(os.path.join(os.path.dirname(shims), "socket"))
    argv = ["python", "-c", "import sys; print(sys.argv[1:], sys.flags.no_site)", "x"]
    assert (
        _run(rank_python, argv, {}, None, tmp_path).stdout
        == _run(sys.executable, argv, {}, None, tmp_path).stdout
        == "['x'] 0\n"
    )


def test_shim_without_its_server_runs_the_installed_script(tmp_path):
    folder = _start()  # a server of its own: this test ends it
    server = subprocess.run(
        ["pgrep", "-f", os.path.join(os.path.dirname(folder), "socket")], capture_output=True, text=True
    ).stdout.split()
    assert server, "no server process for the shims"
    for pid in server:
        os.kill(int(pid), signal.SIGKILL)
    (tmp_path / "id.mlir").write_text(PROGRAM)
    done = _run(os.path.join(folder, "hir-run"), ["hir-run", "id.mlir", "ones:2", "--print"], {}, None, tmp_path)
    assert done.returncode == 0 and "[1, 1]" in done.stdout, done.stderr


def _wait_for(ready, process: subprocess.Popen) -> None:
    """Polls ``ready()`` until it holds; fails if ``process`` ends first or after HANG_GUARD_S."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not ready():
        assert process.poll() is None, f"the tool ended (status {process.returncode}) before it ran the module"
        assert time.monotonic() < deadline, "the tool never ran the module"
        time.sleep(0.05)


def _terminated(tool_path: str, folder) -> int:
    """The exit status of ``tool_path slow.py`` sent SIGTERM once it runs the module."""
    (folder / "started").unlink(missing_ok=True)
    process = subprocess.Popen(
        [tool_path, "slow.py"],
        cwd=folder,
        env={**os.environ, "HIR_DEVICE": "cpu"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for((folder / "started").exists, process)
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=HANG_GUARD_S)


def test_terminating_the_shim_terminates_the_tool(shims, tmp_path):
    """A launcher stops a worker with SIGTERM: through the shim it reaches the tool, which
    ends as the installed script does (hir's handler: status 143)."""
    (tmp_path / "slow.py").write_text("import pathlib, time\npathlib.Path('started').touch()\ntime.sleep(900)\n")
    assert _terminated(os.path.join(shims, "hir-import"), tmp_path) == _terminated(shutil.which("hir-import"), tmp_path)


def test_a_killed_shim_takes_its_tool_down(shims, tmp_path):
    """lit's timeout kills a RUN line outright (SIGKILL): the shim cannot forward anything,
    but its socket closes, and the server then stops the tool (SIGTERM, then SIGKILL), so no
    forked tool outlives its caller."""
    (tmp_path / "slow.py").write_text(
        "import os, pathlib, time\npathlib.Path('started').write_text(str(os.getpid()))\ntime.sleep(900)\n"
    )
    shim = subprocess.Popen(
        [os.path.join(shims, "hir-import"), "slow.py"],
        cwd=tmp_path,
        env={**os.environ, "HIR_DEVICE": "cpu"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(lambda: (tmp_path / "started").exists() and (tmp_path / "started").read_text(), shim)
    tool = int((tmp_path / "started").read_text())
    assert tool != shim.pid  # the tool runs in the server's fork, not in the shim
    shim.kill()
    shim.wait(timeout=HANG_GUARD_S)
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            os.kill(tool, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the tool (pid {tool}) still runs {HANG_GUARD_S} s after its shim was killed")
