"""What users' hands expect of the CLIs (issue 37): --version everywhere, usage that names
only what is required, a line per output when nothing is printed or saved, progress only
when asked (or on a terminal), and --trace without the profiler's own lines."""

import re
import subprocess
import sys

import pytest
import torch

from hir.tools import demo, import_cli, opt, run_cli

PROGRAM = """func.func @main(%a: memref<2x3xf32>) -> memref<2x3xf32> {
  %o = memref.alloc() : memref<2x3xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) -> ()
  return %o : memref<2x3xf32>
}
"""
MAINS = {"hir-opt": opt.main, "hir-run": run_cli.main, "hir-import": import_cli.main, "hir-demo": demo.main}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIR_DEVICE", "cpu")
    (tmp_path / "p.mlir").write_text(PROGRAM)
    return tmp_path


@pytest.mark.parametrize("tool", sorted(MAINS))
def test_version(tool, capsys):
    with pytest.raises(SystemExit) as exit_:
        MAINS[tool](["--version"])
    assert exit_.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0].startswith(f"{tool} (hir) 0.")
        and lines[1].startswith("torch-mlir 2")
        and lines[2] == f"torch {torch.__version__}"
    )


def test_run_usage_names_only_the_file(capsys):
    with pytest.raises(SystemExit):
        run_cli.main([])
    err = capsys.readouterr().err
    assert err.endswith("hir-run: error: the following arguments are required: file\n"), err


def test_import_says_it_executes_the_file(capsys):
    """hir-import FILE runs FILE as Python: said where a user reads about hir-import (its
    --help, the README, docs/from-pytorch.md)."""
    from pathlib import Path

    with pytest.raises(SystemExit):
        import_cli.main(["--help"])
    assert "FILE is executed as Python, as `python FILE` would" in " ".join(capsys.readouterr().out.split())
    root = Path(__file__).resolve().parents[2]
    assert "it runs `model.py` as Python, as `python model.py` would" in " ".join(
        (root / "README.md").read_text().split()
    )
    assert "hir-import executes `model.py` as Python, as `python model.py` would" in " ".join(
        (root / "docs" / "from-pytorch.md").read_text().split()
    )


def test_run_summarizes_outputs_without_print(folder, capsys):
    assert run_cli.main(["p.mlir", "arange"]) == 0
    out = capsys.readouterr().out
    assert out == "output 0: shape [2, 3] f32, sum 30, crc32 %08x\n" % __import__("zlib").crc32(
        (torch.arange(6.0) * 2).reshape(2, 3).numpy().tobytes()
    )
    assert run_cli.main(["p.mlir", "arange", "--save", "o.pt"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "hir-run: 1 output(s) saved to o.pt\n"


def test_run_options_between_program_and_inputs(folder, capsys):
    """Options go anywhere, as argparse users expect: between the program and its inputs too."""
    torch.save(torch.ones(2, 3), folder / "x.pt")
    (folder / "w.safetensors").write_bytes(b"")
    assert run_cli.main(["p.mlir", "--print", "x.pt", "--seed", "3"]) == 0
    assert capsys.readouterr().out == "output 0: shape [2, 3] f32\n[[2, 2, 2],\n [2, 2, 2]]\n"
    assert run_cli.main(["p.mlir", "--lower", "--seed", "3", "random", "--print"]) == 0
    lowered = capsys.readouterr().out
    assert run_cli.main(["p.mlir", "random", "--seed", "3", "--print"]) == 0
    assert capsys.readouterr().out == lowered
    # --weights between the program and its inputs is taken as the option it is.
    assert run_cli.main(["p.mlir", "--weights", "w.safetensors", "x.pt"]) == 1
    assert "hir-run: error: --weights w.safetensors: @main reads no weights" in capsys.readouterr().err


def test_opt_options_anywhere(folder, capsys):
    assert opt.main(["--hir-lower", "p.mlir", "--canonicalize", "-o", "a.mlir"]) == 0
    assert opt.main(["-o", "b.mlir", "--hir-lower", "--canonicalize", "p.mlir"]) == 0
    assert opt.main(["p.mlir", "-p", "builtin.module(hir-lower,canonicalize)", "-o", "c.mlir"]) == 0
    assert (folder / "a.mlir").read_text() == (folder / "b.mlir").read_text() == (folder / "c.mlir").read_text()


def test_trace_drops_the_profiler_lines(folder):
    run = subprocess.run(
        [sys.executable, "-m", "hir.tools.run_cli", "p.mlir", "--trace", "t.json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "USDT:" not in run.stderr and "STAGE:" not in run.stderr, run.stderr
    assert (folder / "t.json").stat().st_size > 0


def test_progress_only_when_asked(folder, capsys):
    (folder / "m.py").write_text("import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args = (torch.ones(3, 4),)\n")
    assert import_cli.main(["m.py", "-o", "m.mlir"]) == 0
    assert capsys.readouterr().err == ""  # stderr is no terminal: quiet
    assert import_cli.main(["m.py", "-o", "m.mlir", "--progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    for step in (
        "exporting Linear (torch.export)",
        "importing the graph into MLIR",
        "partitioning into hir ops",
        "writing 2 weights",
    ):
        assert any(line.startswith(f"hir-import: {step}") and ": done in " in line for line in err), (step, err)
    import hir.progress

    hir.progress.configure("hir", False)  # the Python API stays quiet after this in-process run


@pytest.mark.slow
def test_progress_counts_ranks_up_on_a_terminal(folder):
    """On a terminal (a pty here) the line of a --nproc run counts the ranks that are up."""
    import os
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hir.tools.run_cli", "--nproc", "2", "p.mlir"], stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: every writer exited
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=300) == 0, seen
    text = seen.decode(errors="replace")
    # any elapsed time (tqdm's [MM:SS], or [H:MM:SS]): a loaded machine may take minutes
    assert (
        re.search(r"hir-run: running 2 ranks \(2/2 up\) \[[\d:]+\]", text)
        and "hir-run: running 2 ranks: done in " in text
    ), text
