"""A write that fails (a full disk, an I/O error) is one line on stderr and exit status 1 in
every CLI, never a traceback, an "internal error" or a truncated output with status 0:
stdout on /dev/full (ENOSPC on every write), and stdout or ``-o`` past ``ulimit -f``
(RLIMIT_FSIZE in the child, SIGXFSZ ignored: writes past the limit fail with EFBIG after a
short write, as on a nearly full disk). The CLIs run as processes, as users run them."""

import os
import resource
import signal
import subprocess
import sys

import pytest

LIMIT = 64 * 1024  # bytes a child may write to one file

PROG = """func.func @main(%a: memref<4xf32>) -> memref<4xf32> {
  %o = memref.alloc() : memref<4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return %o : memref<4xf32>
}
"""

IMPORT = """import torch
module = torch.nn.Linear(64, 300)
example_args = (torch.ones(3, 64),)
"""


def big_program(functions: int = 1500) -> str:
    """A module of ~260 KB printed (four times LIMIT)."""
    fn = (
        "func.func @f{i}(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {{\n"
        '  "hir.binary"(%a, %b, %b) {{kind = "add"}} : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()\n'
        "  return\n}}\n"
    )
    return "".join(fn.format(i=i) for i in range(functions))


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def cli(tool: str, *args: str, stdout=subprocess.PIPE, limited: bool = False, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, HIR_DEVICE="cpu")
    env.pop("HIR_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", f"hir.tools.{tool}", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
        preexec_fn=_limited if limited else None,
    )


def one_line_error(proc: subprocess.CompletedProcess, prog: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: ") and "Traceback" not in proc.stderr, proc.stderr


@pytest.fixture
def work(tmp_path):
    (tmp_path / "p.mlir").write_text(PROG)
    (tmp_path / "big.mlir").write_text(big_program())
    (tmp_path / "m.py").write_text(IMPORT)
    return tmp_path


@pytest.mark.parametrize(
    "tool, args, prog",
    [
        ("opt", ["p.mlir"], "hir-opt"),
        ("opt", ["--version"], "hir-opt"),
        ("run_cli", ["p.mlir", "--print"], "hir-run"),
        ("demo", [], "hir-demo"),
    ],
)
def test_stdout_on_dev_full(work, tool, args, prog):
    with open("/dev/full", "w") as full:
        proc = cli(tool, *args, stdout=full, cwd=work)
    one_line_error(proc, prog)
    assert "No space left on device" in proc.stderr


def test_import_stdout_on_dev_full(work):
    with open("/dev/full", "w") as full:
        proc = cli("import_cli", "m.py", stdout=full, cwd=work)
    one_line_error(proc, "hir-import")
    assert proc.stderr.strip() == "hir-import: error: stdout: cannot write: No space left on device", proc.stderr


def test_truncated_stdout_is_an_error(work):
    """hir-opt's output past the limit: exit 1 naming stdout, not status 0 with a cut file."""
    with open(work / "out.mlir", "w") as out:
        proc = cli("opt", "big.mlir", stdout=out, limited=True, cwd=work)
    one_line_error(proc, "hir-opt")
    assert "stdout: cannot write: File too large" in proc.stderr
    assert os.path.getsize(work / "out.mlir") <= LIMIT


def test_output_file_past_the_limit_keeps_the_old_file(work):
    (work / "out.mlir").write_text("old\n")
    proc = cli("opt", "big.mlir", "-o", "out.mlir", limited=True, cwd=work)
    one_line_error(proc, "hir-opt")
    assert "out.mlir: cannot write: File too large" in proc.stderr
    assert (work / "out.mlir").read_text() == "old\n"
    assert sorted(os.listdir(work)) == ["big.mlir", "m.py", "out.mlir", "p.mlir"]  # no temporary left


def test_import_weights_past_the_limit(work):
    """The weights (300x64 f32 = 75 KB) do not fit: one line naming the file (safetensors'
    own error was a traceback), nothing left behind."""
    proc = cli("import_cli", "m.py", "-o", "m.mlir", limited=True, cwd=work)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "SafetensorError" not in proc.stderr, proc.stderr
    assert "m.safetensors: cannot write: File too large" in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert not (work / "m.mlir").exists() and not (work / "m.safetensors").exists()


def test_nearly_full_tmpfs(work, tmp_path_factory):
    """A real full filesystem (root only: a 64 KiB tmpfs): stdout and -o both fail with ENOSPC."""
    mount_point = tmp_path_factory.mktemp("tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        with open(mount_point / "x.mlir", "w") as out:
            proc = cli("opt", "big.mlir", stdout=out, cwd=work)
        one_line_error(proc, "hir-opt")
        assert "No space left on device" in proc.stderr
        os.remove(mount_point / "x.mlir")
        proc = cli("opt", "big.mlir", "-o", str(mount_point / "y.mlir"), cwd=work)
        one_line_error(proc, "hir-opt")
        assert os.listdir(mount_point) == []
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)
