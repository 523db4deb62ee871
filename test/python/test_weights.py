"""An imported model keeps its weights (issue 37): hir-import writes them as safetensors
beside the IR and records them; hir-run, hir.run and hir.load read them back (each rank its
part of a sharded argument); explicit inputs win; a file that does not fit is refused."""

import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

import hir
from hir.core import HirError
from hir.interpreter.inputs import shard
from hir.interpreter.weights import read_weights, recorded_weights
from hir.tools import import_cli, run_cli

MODEL = """import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 2)
        self.register_buffer("scale", torch.full((2,), 0.5))  # a buffer travels too

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale

module = Net()
example_args = (torch.ones(3, 4),)
"""


def eager(folder) -> torch.Tensor:
    import runpy

    namespace = runpy.run_path(str(folder / "m.py"))
    return namespace["module"](torch.load(folder / "x.pt")).detach()


@pytest.fixture
def imported(tmp_path, monkeypatch):
    """m.py imported by hir-import -o m.mlir (and m.safetensors), with an input x.pt."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HIR_DEVICE", "cpu")
    (tmp_path / "m.py").write_text(MODEL)
    torch.save(torch.randn(3, 4), tmp_path / "x.pt")
    assert import_cli.main(["m.py", "-o", "m.mlir"]) == 0
    return tmp_path


def test_hir_run_of_an_import_equals_eager(imported, capsys):
    capsys.readouterr()
    assert run_cli.main(["m.mlir", "x.pt", "--print", "--save", "y.pt"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("output 0: shape [3, 2] f32\n")
    (y,) = torch.load(imported / "y.pt")
    torch.testing.assert_close(y, eager(imported))
    assert sorted(load_file(imported / "m.safetensors")) == [
        "fc1.bias",
        "fc1.weight",
        "fc2.bias",
        "fc2.weight",
        "scale",
    ]
    text = (imported / "m.mlir").read_text()
    assert 'hir.weights = "m.safetensors"' in text and 'hir.weight = "scale"' in text


def test_explicit_inputs_win(imported, capsys):
    """N=SPEC sets a weight argument; plain specs fill the model's inputs."""
    assert (
        'func.func @main(%arg0: memref<2xf32> {hir.parameter, hir.weight = "scale"}'
        in (imported / "m.mlir").read_text()
    )
    assert run_cli.main(["m.mlir", "0=zeros", "x.pt", "--save", "y.pt"]) == 0
    (y,) = torch.load(imported / "y.pt")
    assert torch.equal(y, torch.zeros(3, 2))


def test_weights_file_elsewhere(imported, capsys):
    """--weights FILE on both sides; the IR names the file relative to itself."""
    (imported / "sub").mkdir()
    assert import_cli.main(["m.py", "-o", "sub/n.mlir", "--weights", "w.safetensors"]) == 0
    assert 'hir.weights = "../w.safetensors"' in (imported / "sub" / "n.mlir").read_text()
    assert run_cli.main(["sub/n.mlir", "x.pt", "--save", "y.pt"]) == 0
    torch.testing.assert_close(torch.load(imported / "y.pt")[0], eager(imported))
    os.rename(imported / "w.safetensors", imported / "v.safetensors")
    assert run_cli.main(["sub/n.mlir", "x.pt"]) == 1
    assert "w.safetensors: error: cannot read the weights: no such file" in capsys.readouterr().err
    assert run_cli.main(["sub/n.mlir", "x.pt", "--weights", "v.safetensors", "--save", "y.pt"]) == 0


def test_save_and_load_round_trip(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    program = hir.from_torch(model, (x,))
    assert program.save(tmp_path / "p.mlir") == str(tmp_path / "p.safetensors")
    loaded = hir.load(tmp_path / "p.mlir")
    assert loaded.state_names == program.state_names and loaded.num_inputs == 1
    (y,) = loaded.run(None, x, device="cpu")  # the program's own weights
    torch.testing.assert_close(y, model(x))
    # hir.run on the module alone reads the recorded file; all arguments given: those win
    module = hir.parse((tmp_path / "p.mlir").read_text(), str(tmp_path / "p.mlir"))
    torch.testing.assert_close(hir.run(module, [x], device="cpu", source_name=str(tmp_path / "p.mlir"))[0], model(x))
    torch.testing.assert_close(hir.run(module, [x], device="cpu", weights=str(tmp_path / "p.safetensors"))[0], model(x))
    with pytest.raises(HirError, match="p.safetensors: error: cannot read the weights: no such file"):
        hir.run(module, [x], device="cpu")  # relative to the current folder
    zeros = [torch.zeros_like(t) for t in model.state_dict().values()]
    assert torch.equal(hir.run(module, zeros + [x], device="cpu")[0], torch.zeros(8, 4))
    # another state dict saved with the same program
    other = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    program.save(tmp_path / "q.mlir", other.state_dict())
    torch.testing.assert_close(hir.load(tmp_path / "q.mlir").run(None, x, device="cpu")[0], other(x))


def test_a_sharded_argument_reads_its_slice(tmp_path):
    """Each rank reads its part of the global tensor (even and uneven splits, a replicated
    argument whole, and nothing on a rank outside the mesh)."""
    full = {"w": torch.arange(48.0).reshape(8, 6), "b": torch.arange(6.0), "u": torch.arange(16.0).reshape(8, 2)}
    save_file(full, tmp_path / "w.safetensors")
    module = hir.parse(
        'func.func @main(%w: memref<8x6xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {hir.weight = "w"},\n'
        '    %b: memref<6xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.weight = "b"},\n'
        "    %u: memref<8x2xf32, #hir.shard<array<i64: 0, 1, 2>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 8>}>> "
        '{hir.weight = "u"}) {\n'
        "  return\n}\n"
    )
    fn = next(iter(module.body.operations)).operation
    types = [a.type for a in fn.regions[0].blocks[0].arguments]
    keys = recorded_weights(module, fn).keys
    for rank in (0, 1, 2):
        parts = read_weights(str(tmp_path / "w.safetensors"), types, keys, rank=rank, device=torch.device("cpu"))
        assert parts[0] is None if rank == 2 else torch.equal(parts[0], full["w"][:, 3 * rank : 3 * rank + 3])
        assert parts[1] is None if rank == 2 else torch.equal(parts[1], full["b"])
        assert torch.equal(parts[2], full["u"][[0, 1, 4, 8][rank] : [0, 1, 4, 8][rank + 1]])
    from hir.interpreter.buffers import buffer_spec

    assert torch.equal(shard(full["w"], buffer_spec(types[0], 1).sharding, 1), full["w"][:, 3:])


@pytest.mark.slow
def test_sharded_import_runs_on_two_ranks(imported):
    """A tensor-parallel import: the file holds global tensors, each of 2 ranks its slice."""
    (imported / "tp.py").write_text(
        MODEL + "from torch.distributed.tensor import Shard\nmesh = [0, 1]\n"
        "placements = {'fc1.weight': Shard(0), 'fc1.bias': Shard(0), 'fc2.weight': Shard(1)}\n"
    )
    assert import_cli.main(["tp.py", "-o", "tp.mlir"]) == 0
    run = subprocess.run(
        [sys.executable, "-m", "hir.tools.run_cli", "--nproc", "2", "--lower", "tp.mlir", "x.pt", "--save", "y.pt"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    torch.testing.assert_close(torch.load(imported / "y.pt")[0], eager(imported))


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d.pop("fc2.bias"),
            "the file has no tensor 'fc2.bias': argument #4 of @main (memref<2xf32>) reads 'fc2.bias'",
        ),
        (
            lambda d: d.update({"fc1.bias": torch.zeros(9)}),
            "tensor 'fc1.bias' has shape [9]; argument #2 of @main (memref<8xf32>) reads 'fc1.bias', of shape [8]",
        ),
        (
            lambda d: d.update({"scale": d["scale"].double()}),
            "tensor 'scale' has dtype torch.float64; argument #0 of "
            "@main (memref<2xf32>) reads 'scale', of dtype torch.float32",
        ),
        (
            lambda d: d.update({"extra": torch.ones(1)}),
            "the file holds tensor 'extra', which no argument of @main reads",
        ),
    ],
    ids=["missing", "shape", "dtype", "extra"],
)
def test_a_weights_file_that_does_not_fit_is_refused(imported, capsys, change, message):
    tensors = load_file(imported / "m.safetensors")
    change(tensors)
    save_file(tensors, imported / "bad.safetensors")
    assert run_cli.main(["m.mlir", "x.pt", "--weights", "bad.safetensors", "--save", "y.pt"]) == 1
    err = capsys.readouterr().err
    assert f"bad.safetensors: error: {message}" in err and "Traceback" not in err
    assert not (imported / "y.pt").exists()
    with pytest.raises(HirError, match="bad.safetensors: error: "):
        hir.load(imported / "m.mlir", weights=str(imported / "bad.safetensors"))
