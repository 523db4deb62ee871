"""Every bad-input case of hir-run / hir-opt / hir-demo, run as a user runs them (a
process of the CLI: hir-run and hir-import through lit's fork server, cli_util.py; hir-opt,
hir-demo and the closed-pipe runs through their modules): exit status 1 (124 for an expired
--timeout), an error naming the file or argument, no Python traceback, and no output file
written."""

import os
import shutil
import subprocess
import sys

import numpy
import pytest
import torch

from cli_util import TOOLS, tool_environment

PROG = """func.func @main(%a: memref<4x4xf32>, %n: index) -> memref<4x4xf32> {
  %o = memref.alloc() : memref<4x4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  return %o : memref<4x4xf32>
}
"""

DYNAMIC = """func.func @main(%a: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %d = memref.dim %a, %c0 : memref<?x4xf32>
  %o = memref.alloc(%d) : memref<?x4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>) -> ()
  return %o : memref<?x4xf32>
}
"""

# Fails at run time, after inputs were accepted: nothing may be saved.
RUNTIME_FAILURE = """func.func @main(%n: index) -> memref<?xf32> {
  %o = memref.alloc(%n) : memref<?xf32>
  return %o : memref<?xf32>
}
"""


def cli(tool: str, *args, cwd) -> subprocess.CompletedProcess:
    """Run a hir CLI of the package under test in a process of its own (cli_util.py)."""
    env = tool_environment()
    if tool in TOOLS:
        command = [shutil.which(tool, path=env["PATH"])]
    else:
        command = [sys.executable, "-m", {"hir-opt": "hir.tools.opt", "hir-demo": "hir.tools.demo"}[tool]]
    return subprocess.run([*command, *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def assert_error(result: subprocess.CompletedProcess, *names: str, rc: int = 1) -> None:
    assert result.returncode == rc, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for name in names:
        assert name in result.stderr, (name, result.stderr)


@pytest.fixture
def work(tmp_path):
    (tmp_path / "p.mlir").write_text(PROG)
    (tmp_path / "d.mlir").write_text(DYNAMIC)
    (tmp_path / "rt.mlir").write_text(RUNTIME_FAILURE)
    return tmp_path


@pytest.mark.parametrize("text", ["hello\n", "x = 1\nprint(x)\n"])
def test_run_text_file_as_pt(work, text):
    """Text named .pt: said to be no tensor file; never torch's advice to unpickle it."""
    (work / "t.pt").write_text(text)
    result = cli("hir-run", "p.mlir", "t.pt", "1", cwd=work)
    assert_error(
        result,
        "p.mlir:1:1: error:",
        "argument #0",
        "'t.pt' is not a tensor file",
        "torch.save (FILE.pt) or numpy.save (FILE.npy)",
    )
    assert "weights_only" not in result.stderr


def test_run_pickled_objects_as_pt(work):
    torch.save({"step": 1, "call": print}, work / "o.pt")
    result = cli("hir-run", "p.mlir", "o.pt", "1", cwd=work)
    assert_error(
        result, "argument #0", "cannot load 'o.pt'", "objects other than tensors, which hir-run does not unpickle"
    )
    assert "weights_only" not in result.stderr


def test_import_mlir_file(work):
    result = cli("hir-import", "p.mlir", cwd=work)
    assert_error(result, "p.mlir: error: not a Python file", "hir-import takes a Python file", "hir-opt", "hir-run")
    assert "decimal literal" not in result.stderr


def test_opt_mistyped_pass_flag(work):
    """One line naming the closest pass, no usage."""
    result = cli("hir-opt", "p.mlir", "--hir-lowr", cwd=work)
    assert_error(result, "hir-opt: error: unknown pass or option --hir-lowr; did you mean --hir-lower?")
    assert result.stderr.count("\n") == 1 and "usage" not in result.stderr, result.stderr
    assert_error(cli("hir-opt", "p.mlir", "--split-input-fle", cwd=work), "did you mean --split-input-file?")


def test_run_corrupt_npy(work):
    numpy.save(work / "c.npy", numpy.ones((4, 4), numpy.float32))
    (work / "corrupt.npy").write_bytes((work / "c.npy").read_bytes()[:100])
    assert_error(
        cli("hir-run", "p.mlir", "corrupt.npy", "1", cwd=work),
        "argument #0",
        "cannot read 'corrupt.npy' as a .npy file",
    )


def test_run_text_npy(work):
    (work / "t.npy").write_text("hello\n")
    result = cli("hir-run", "p.mlir", "t.npy", "1", cwd=work)
    assert_error(result, "argument #0", "'t.npy' is not a .npy file")
    assert "allow_pickle" not in result.stderr


def test_run_object_npy(work):
    numpy.save(work / "o.npy", numpy.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert_error(cli("hir-run", "p.mlir", "o.npy", "1", cwd=work), "argument #0", "'o.npy' holds Python objects")


def test_run_float_for_index(work):
    assert_error(cli("hir-run", "p.mlir", "random", "2.5", cwd=work), "argument #1 (index)", "'2.5' is not an integer")


def test_run_negative_shape(work):
    assert_error(
        cli("hir-run", "d.mlir", "random:-4x4", cwd=work), "argument #0", "bad shape '-4x4': extents must be >= 0"
    )


@pytest.mark.parametrize("flag", ["--save", "--trace"])
def test_run_output_into_missing_folder(work, flag):
    result = cli("hir-run", "p.mlir", "random", "1", flag, "nodir/out", cwd=work)
    assert_error(result, f"{flag} nodir/out", "'nodir' does not exist")
    assert not (work / "nodir").exists()


@pytest.mark.parametrize("flag", ["--save", "--trace"])
def test_run_output_is_a_folder(work, flag):
    (work / "sub").mkdir()
    assert_error(cli("hir-run", "p.mlir", "random", "1", flag, "sub", cwd=work), f"{flag} sub: is a folder")


def test_run_failure_leaves_save_and_trace_untouched(work):
    (work / "out.pt").write_text("keep")
    result = cli("hir-run", "rt.mlir", "0=-1", "--save", "out.pt", "--trace", "t.json", cwd=work)
    assert_error(result, "rt.mlir:2:", "negative")
    assert (work / "out.pt").read_text() == "keep"
    assert sorted(p.name for p in work.iterdir()) == ["d.mlir", "out.pt", "p.mlir", "rt.mlir"]


def test_run_save_and_trace_written_on_success(work):
    result = cli("hir-run", "p.mlir", "ones", "1", "--save", "out.pt", "--trace", "t.json", cwd=work)
    assert result.returncode == 0, result.stderr
    assert torch.equal(torch.load(work / "out.pt")[0], torch.full((4, 4), 2.0))
    assert (work / "t.json").stat().st_size > 0
    assert not [p for p in work.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_run_non_utf8_source(work):
    (work / "bad.mlir").write_bytes(b"func.func @main() {\n  return // \xe9\n}\n")
    assert_error(cli("hir-run", "bad.mlir", cwd=work), "bad.mlir:2:13: error: unexpected character")


def test_run_missing_source(work):
    assert_error(cli("hir-run", "nope.mlir", cwd=work), "nope.mlir: error: cannot read")


@pytest.mark.parametrize(
    "args,names",
    [
        (["--device", "foo"], ["--device foo: not a device"]),
        (["--num-streams", "0"], ["argument --num-streams: must be >= 1"]),
        (["--warmup", "-1"], ["argument --warmup: must be >= 0"]),
        (["--nproc", "0"], ["argument --nproc: must be >= 1"]),
        (["--timeout", "5"], ["--timeout applies to --nproc runs only"]),
        (["--timeout", "0", "--nproc", "1"], ["argument --timeout: must be > 0"]),
        (["--bogus"], ["unrecognized arguments: --bogus"]),
    ],
)
def test_run_bad_arguments(work, args, names):
    assert_error(cli("hir-run", "p.mlir", "random", "1", *args, cwd=work), *names)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
@pytest.mark.parametrize("tool", ["hir-run", "hir-demo"])
def test_cuda_without_cuda(work, tool):
    args = ["p.mlir", "random", "1"] if tool == "hir-run" else []
    assert_error(cli(tool, *args, "--device", "cuda", cwd=work), "--device cuda: CUDA is not available")


def test_run_timeout_exits_124(work):
    # A loop of 10^9 adds: only --timeout ends it.
    (work / "loop.mlir").write_text(
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
    result = cli("hir-run", "loop.mlir", "random", "1000000000", "--nproc", "1", "--timeout", "3", cwd=work)
    assert_error(result, "--timeout 3: the run did not finish in time", rc=124)


def test_opt_non_utf8(work):
    (work / "bad.mlir").write_bytes(b"func.func @f() {\n  return // \xe9\n}\n")
    assert_error(cli("hir-opt", "bad.mlir", cwd=work), "bad.mlir:2:13: error: unexpected character: byte 0xe9")


def test_opt_output_into_missing_folder(work):
    result = cli("hir-opt", "p.mlir", "-o", "nodir/out.mlir", cwd=work)
    assert_error(result, "-o nodir/out.mlir", "'nodir' does not exist")
    assert not (work / "nodir").exists()


def test_opt_failure_leaves_output_untouched(work):
    (work / "bad.mlir").write_text('func.func @f() {\n  "hir.nope"() : () -> ()\n  return\n}\n')
    (work / "out.mlir").write_text("keep")
    assert_error(cli("hir-opt", "bad.mlir", "-o", "out.mlir", cwd=work), "bad.mlir:2:3: error:")
    assert (work / "out.mlir").read_text() == "keep"


def test_opt_bad_argument(work):
    assert_error(cli("hir-opt", "p.mlir", "--verify-each", "maybe", cwd=work), "argument --verify-each")


def test_demo_rows(work):
    assert_error(cli("hir-demo", "--rows", "0", cwd=work), "argument --rows: must be >= 1")
    assert "rows of the input" in cli("hir-demo", "--help", cwd=work).stdout


def test_import_wrongly_shaped_export_prints_only_the_error(work):
    """torch logs a failed fake-tensor trace's traceback (at ERROR) to the real stderr, where
    the in-process table cannot see it: the user gets the one-line error and nothing else."""
    (work / "m.py").write_text("import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args = (torch.ones(3, 5),)\n")
    result = cli("hir-import", "m.py", cwd=work)
    assert_error(result, "m.py", "torch.export cannot trace Linear", "[3, 5] X [4, 2]")
    assert len([line for line in result.stderr.splitlines() if "Warning" not in line and line.strip()]) <= 2, (
        result.stderr
    )


def closed_pipe_run(tool: str, *args, cwd) -> subprocess.CompletedProcess:
    """Run a CLI whose stdout is a pipe nobody reads (``| head -1`` after head exited)."""
    module = {"hir-run": "hir.tools.run_cli", "hir-opt": "hir.tools.opt"}[tool]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = dict(os.environ, HIR_DEVICE="cpu")
        return subprocess.run(
            [sys.executable, "-m", module, *map(str, args)],
            cwd=cwd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write_end)


def test_run_print_into_closed_pipe_still_saves(work):
    """`hir-run --print | head -1`: the reader's early exit is not an error, and --save is written."""
    result = closed_pipe_run("hir-run", "p.mlir", "ones", "1", "--print", "--save", "out.pt", cwd=work)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert torch.equal(torch.load(work / "out.pt")[0], torch.full((4, 4), 2.0))


def test_opt_into_closed_pipe(work):
    result = closed_pipe_run("hir-opt", "p.mlir", cwd=work)
    assert result.returncode == 0 and result.stderr == "", result.stderr
