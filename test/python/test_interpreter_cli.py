"""hir-run in-process: input specs (.pt / .npy / generators / scalars), --print, --save,
error reporting without tracebacks."""

import numpy
import pytest
import torch

from hir.tools.run_cli import main

PROG = """func.func @main(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %n: index) -> (memref<2x2xf32>, index) {
  %o = memref.alloc() : memref<2x2xf32>
  "hir.binary"(%a, %b, %o) {kind = "sub"} : (memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>) -> ()
  return %o, %n : memref<2x2xf32>, index
}
"""


@pytest.fixture
def prog(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text(PROG)
    return path


def test_interp_cli_files_and_save(prog, tmp_path, capsys):
    a = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
    torch.save(a, tmp_path / "a.pt")
    numpy.save(tmp_path / "b.npy", numpy.ones((2, 2), dtype=numpy.float32))
    out = tmp_path / "out.pt"
    rc = main(
        [
            str(prog),
            str(tmp_path / "a.pt"),
            "--input",
            str(tmp_path / "b.npy"),
            "--input",
            "7",
            "--print",
            "--save",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    assert capsys.readouterr().out == "output 0: shape [2, 2] f32\n[[4, 5],\n [6, 7]]\noutput 1: 7\n"
    saved = torch.load(out)
    assert torch.equal(saved[0], a - 1) and saved[1] == 7


def test_interp_cli_random_inputs_are_seeded(prog, capsys):
    main([str(prog), "2=3", "--print", "--seed", "5", "--device", "cpu"])
    first = capsys.readouterr().out
    main([str(prog), "2=3", "--print", "--seed", "5", "--device", "cpu"])
    assert capsys.readouterr().out == first
    main([str(prog), "2=3", "--print", "--seed", "6", "--device", "cpu"])
    assert capsys.readouterr().out != first


@pytest.mark.parametrize(
    "args,message",
    [
        (["zeros", "zeros"], "p.mlir:1:1: error: @main argument #2 (index) is a scalar: give its value"),
        (
            ["zeros:3x2", "zeros", "1"],
            "p.mlir:1:1: error: @main argument #0 (memref<2x2xf32>): shape [3, 2] does not fit the type's [2, 2]",
        ),
        (["nothing.pt"], "argument #0 (memref<2x2xf32>): 'nothing.pt' is neither an input kind"),
        (["zeros", "zeros", "1", "--entry", "nope"], "error: no function @nope"),
    ],
)
def test_interp_cli_errors(prog, capsys, args, message):
    assert main([str(prog), *args, "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_interp_cli_parse_error(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @main() {\n  %x = "hir.nope"() : () -> ()\n  return\n}\n')
    assert main([str(bad), "--device", "cpu"]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:2:")
