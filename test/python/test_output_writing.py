"""Outputs of hir-opt -o, hir-run --save / --trace and hir-import -o respect what is at the path:
a regular file is replaced atomically but keeps its mode, a symlink keeps pointing at its
(updated) target, a FIFO or device is written in place, and an input of the same run is never
overwritten. The CLIs run in-process (their ``main``), as the installed entry points call them."""

import os
import stat
import subprocess
import sys
import threading

import pytest
import torch

from hir.tools import import_cli, opt, run_cli
from hir.tools.cli_common import CliError, write_atomically, write_text

PROG = """func.func @main(%a: memref<4xf32>) -> memref<4xf32> {
  %o = memref.alloc() : memref<4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return %o : memref<4xf32>
}
"""

IMPORT = """import torch
module = torch.nn.Linear(4, 2)
example_args = (torch.ones(3, 4),)
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIR_DEVICE", "cpu")
    (tmp_path / "p.mlir").write_text(PROG)
    return tmp_path


def test_existing_file_keeps_its_mode(work):
    out = work / "out.mlir"
    out.write_text("old\n")
    out.chmod(0o600)
    assert opt.main(["p.mlir", "-o", "out.mlir"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert "hir.binary" in out.read_text()


def test_new_file_gets_the_umask_mode(work):
    umask = os.umask(0o022)
    try:
        assert opt.main(["p.mlir", "-o", "new.mlir"]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((work / "new.mlir").stat().st_mode) == 0o644


def test_symlink_is_followed(work):
    (work / "real").mkdir()
    target = work / "real" / "out.mlir"
    target.write_text("old\n")
    (work / "link.mlir").symlink_to(target)
    assert opt.main(["p.mlir", "-o", "link.mlir"]) == 0
    assert (work / "link.mlir").is_symlink()
    assert "hir.binary" in target.read_text()
    assert sorted(os.listdir(work / "real")) == ["out.mlir"]  # no temporary left behind


def test_dangling_symlink_creates_its_target(work):
    (work / "link.mlir").symlink_to(work / "made.mlir")
    assert opt.main(["p.mlir", "-o", "link.mlir"]) == 0
    assert (work / "link.mlir").is_symlink() and "hir.binary" in (work / "made.mlir").read_text()


def test_fifo_is_written_in_place(work):
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    assert opt.main(["p.mlir", "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert "hir.binary" in got[0]


def test_dev_stdout_is_written_in_place(work):
    """``-o /dev/stdout`` (a pipe here) writes to the pipe instead of replacing the path."""
    code = "import sys; from hir.tools import opt; sys.exit(opt.main(['p.mlir', '-o', '/dev/stdout']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "hir.binary" in result.stdout


def test_dev_null_stays_a_device(work):
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null was already broken before this test"
    try:
        assert opt.main(["p.mlir", "-o", "/dev/null"]) == 0
        write_atomically("/dev/null", lambda name: write_text(name, "x"))
    finally:
        broken = not stat.S_ISCHR(os.stat("/dev/null").st_mode)
        if broken and os.geteuid() == 0:  # repair the machine before failing
            os.remove("/dev/null")
            os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            os.chmod("/dev/null", 0o666)
    assert not broken


def test_failed_write_keeps_the_old_file(work):
    out = work / "out.txt"
    out.write_text("old\n")

    def fail(name):
        write_text(name, "partial")
        raise OSError(28, "No space left on device")

    with pytest.raises(CliError, match="No space left on device"):
        write_atomically(str(out), fail)
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(work)) == ["out.txt", "p.mlir"]  # the temporary is removed


@pytest.mark.parametrize("output", ["p.mlir", "./p.mlir", "alias.mlir"])
def test_opt_refuses_to_overwrite_its_input(work, output, capsys):
    (work / "alias.mlir").symlink_to(work / "p.mlir")
    assert opt.main(["p.mlir", "-o", output]) == 1
    err = capsys.readouterr().err
    assert f"-o {output}: is also an input of this run" in err and "Traceback" not in err
    assert (work / "p.mlir").read_text() == PROG


@pytest.mark.parametrize("flag", ["--save", "--trace"])
def test_run_refuses_to_overwrite_its_program(work, flag, capsys):
    assert run_cli.main(["p.mlir", "ones", flag, "p.mlir"]) == 1
    assert f"{flag} p.mlir: is also an input of this run" in capsys.readouterr().err
    assert (work / "p.mlir").read_text() == PROG


def test_run_refuses_to_overwrite_an_input_file(work, capsys):
    torch.save(torch.ones(4), work / "x.pt")
    before = (work / "x.pt").read_bytes()
    assert run_cli.main(["p.mlir", "0=x.pt", "--save", "x.pt"]) == 1
    assert "--save x.pt: is also an input of this run (x.pt)" in capsys.readouterr().err
    assert (work / "x.pt").read_bytes() == before


def test_run_save_keeps_mode_and_symlink(work):
    (work / "real.pt").write_bytes(b"old")
    (work / "real.pt").chmod(0o600)
    (work / "out.pt").symlink_to(work / "real.pt")
    assert run_cli.main(["p.mlir", "ones", "--save", "out.pt"]) == 0
    assert (work / "out.pt").is_symlink()
    assert stat.S_IMODE((work / "real.pt").stat().st_mode) == 0o600
    assert torch.equal(torch.load(work / "real.pt")[0], torch.full((4,), 2.0))


def test_import_refuses_to_overwrite_its_source(work, capsys):
    (work / "m.py").write_text(IMPORT)
    assert import_cli.main(["m.py", "-o", "m.py"]) == 1
    assert "-o m.py: is also an input of this run" in capsys.readouterr().err
    assert (work / "m.py").read_text() == IMPORT


def test_import_keeps_mode(work):
    (work / "m.py").write_text(IMPORT)
    (work / "out.mlir").write_text("old\n")
    (work / "out.mlir").chmod(0o600)
    assert import_cli.main(["m.py", "-o", "out.mlir"]) == 0
    assert stat.S_IMODE((work / "out.mlir").stat().st_mode) == 0o600
    assert "func.func" in (work / "out.mlir").read_text()


@pytest.mark.parametrize("flag", ["--save", "--trace"])
def test_run_outputs_into_a_fifo(work, flag):
    """torch.profiler's trace export replaces the file it is given; a FIFO must stay one."""
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    assert run_cli.main(["p.mlir", "ones", flag, str(fifo)]) == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert len(got[0]) > 100
