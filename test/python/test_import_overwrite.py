"""hir-import leaves a weights file it did not write alone unless ``--force`` (hir's own are
known by their safetensors header), and refuses a bad ``-o`` before it runs the user's file
(the file below leaves a mark when it runs). In-process, as the entry point calls main."""

import pytest
import torch
from safetensors.torch import load_file, save_file

from hir.frontend.saving import written_by_hir
from hir.tools import import_cli

IMPORT = """import pathlib, torch
pathlib.Path("ran").write_text("the file ran")
module = torch.nn.Linear(4, 2)
example_args = (torch.ones(3, 4),)
"""


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(IMPORT)
    return tmp_path


def test_foreign_weights_file_is_kept(work, capsys):
    save_file({"mine": torch.ones(3)}, str(work / "m.safetensors"))
    before = (work / "m.safetensors").read_bytes()
    assert import_cli.main(["m.py", "-o", "m.mlir"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "hir-import: error: m.safetensors: exists and hir did not write "
        "it; pass --force to overwrite it (or --weights FILE / --no-weights)"
    )
    assert (work / "m.safetensors").read_bytes() == before
    assert not (work / "m.mlir").exists() and not (work / "ran").exists()


@pytest.mark.parametrize("flag", ["--weights", None])
def test_force_overwrites_it(work, flag):
    target = "w.safetensors" if flag else "m.safetensors"
    (work / target).write_bytes(b"not even safetensors")
    args = ["m.py", "-o", "m.mlir", "--force"] + ([flag, target] if flag else [])
    assert import_cli.main(args) == 0
    assert set(load_file(str(work / target))) == {"weight", "bias"}
    assert written_by_hir(str(work / target))


def test_its_own_weights_are_replaced(work):
    assert import_cli.main(["m.py", "-o", "m.mlir"]) == 0
    assert written_by_hir(str(work / "m.safetensors"))
    assert import_cli.main(["m.py", "-o", "m.mlir"]) == 0


@pytest.mark.parametrize(
    "output, message",
    [
        ("w.safetensors", "-o w.safetensors: is where the weights would go"),
        ("missing/m.mlir", "-o missing/m.mlir: the folder 'missing' does not exist"),
    ],
)
def test_bad_output_is_refused_before_the_file_runs(work, capsys, output, message):
    assert import_cli.main(["m.py", "-o", output]) == 1
    assert message in capsys.readouterr().err
    assert not (work / "ran").exists()
