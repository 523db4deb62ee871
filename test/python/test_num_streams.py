"""The stream pool size is a property of the IR (``hir.num_streams``, set by the pass that
fixes it): Program, hir-run and hir-reuse-stream-buffers read it; an explicit value that
contradicts it is an error, and it is only a default when the module has none."""

from pathlib import Path

import pytest

import hir
from hir.core import HirError
from hir.dialect import module_num_streams
from hir.interpreter import Program

PROGRAM = (Path(__file__).resolve().parents[1] / "Transforms" / "num-streams.mlir").read_text()
P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{streams=4 chunks=2}"


def test_p2p_pipeline_fixes_the_pool():
    module = hir.lower(hir.parse(PROGRAM), P2P)
    assert module_num_streams(module) == 5  # 4 compute streams + the reducer's own


def test_program_reads_the_pool_and_rejects_a_contradiction():
    module = hir.lower(hir.parse(PROGRAM), P2P)
    with pytest.raises(HirError, match="num_streams = 4 contradicts the module's hir.num_streams = 5"):
        Program(module, device="cpu", num_streams=4)


def test_pool_default_and_attribute_on_a_plain_program():
    text = PROGRAM.replace("module {", "module attributes {hir.num_streams = 3 : i64} {")
    assert Program(hir.parse("func.func @main() { return }"), device="cpu").streams.num_streams == 4
    assert Program(hir.parse("func.func @main() { return }"), device="cpu", num_streams=2).streams.num_streams == 2
    module = hir.parse(text)
    assert module_num_streams(module) == 3
    with pytest.raises(HirError, match="must be a positive integer"):
        Program(hir.parse(PROGRAM.replace("module {", "module attributes {hir.num_streams = 0 : i64} {")), device="cpu")


def test_reuse_pass_reads_the_pool():
    module = hir.lower(hir.parse(PROGRAM), P2P)
    with pytest.raises(HirError, match="num-streams = 2 contradicts the module's hir.num_streams = 5"):
        hir.lower(module, "hir-reuse-stream-buffers{num-streams=2}")
    hir.lower(module, "hir-reuse-stream-buffers{num-streams=5}")  # agrees: accepted


def test_hir_run_rejects_a_contradicting_num_streams(tmp_path, capsys):
    from hir.tools.run_cli import main

    prog = tmp_path / "prog.mlir"
    prog.write_text("module attributes {hir.num_streams = 3 : i64} {\n  func.func @main() {\n    return\n  }\n}\n")
    assert main([str(prog), "--device", "cpu", "--num-streams", "2"]) == 1
    err = capsys.readouterr().err
    assert "num_streams = 2 contradicts the module's hir.num_streams = 3" in err and "Traceback" not in err
    assert main([str(prog), "--device", "cpu"]) == 0
