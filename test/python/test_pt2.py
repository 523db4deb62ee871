"""``torch.export`` programs as hir inputs: ``hir.compile(exported_program, args)`` and
``hir.load("m.pt2")`` equal running the ExportedProgram's module, with the dims the export
made dynamic dynamic (and bounded) in hir; a ``.pt2`` whose reading would unpickle objects or
load compiled code is refused before ``torch.export.load`` sees it (torch 2.13's loader runs
such pickles: shown here)."""

import json
import shutil
import zipfile

import pytest
import torch

import hir


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(6, 4)
        self.register_buffer("shift", torch.arange(4.0))

    def forward(self, x, scale=None):
        y = torch.nn.functional.gelu(self.proj(x)) + self.shift
        return y if scale is None else y * scale


def exported() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=32)
    return torch.export.export(Net().eval(), (torch.randn(3, 6),), dynamic_shapes=({0: batch},))


def test_compile_an_exported_program():
    ep = exported()
    fn = hir.compile(ep, (torch.randn(3, 6),), device="cpu")
    for batch in (3, 1, 7, 32):
        x = torch.randn(batch, 6)
        torch.testing.assert_close(fn(x), ep.module()(x))
    assert len(fn.programs) == 1 and [list(d.values())[0][2:] for d in fn.programs[0].dynamic_dims] == [
        (1, 32)
    ]  # the export's bounds
    with pytest.raises(
        hir.HirError,
        match=r"test_pt2.py:\d+: error: input 0: dim 0 is dynamic dim \w+, declared 1 <= \w+ <= 32 at import, got 33",
    ):
        fn(torch.randn(33, 6))
    x = torch.randn(5, 6)
    torch.testing.assert_close(hir.compile(ep, device="cpu")(x), ep.module()(x))  # the recorded example inputs
    keyword = torch.export.export(Net().eval(), (torch.randn(3, 6),), {"scale": torch.rand(4)})
    scale = torch.rand(4)
    torch.testing.assert_close(
        hir.compile(keyword, device="cpu")(x[:3], scale=scale), keyword.module()(x[:3], scale=scale)
    )


def test_load_a_saved_pt2(tmp_path):
    ep = exported()
    path = tmp_path / "net.pt2"
    torch.export.save(ep, path)
    program = hir.load(str(path))
    x = torch.randn(9, 6)
    torch.testing.assert_close(program.run(None, x)[0], ep.module()(x))
    torch.testing.assert_close(program.compile(device="cpu")(x), ep.module()(x))
    with pytest.raises(hir.HirError, match="a .pt2 archive holds its weights"):
        hir.load(str(path), weights="w.safetensors")


def rewritten(source, target, change) -> None:
    """A copy of the archive ``source`` at ``target``, each member's bytes through ``change(name, data)``."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            data = change(info.filename, src.read(info.filename))
            if data is not None:
                dst.writestr(info, data)


class Marker:
    """Unpickling it writes a file: the proof that a reader ran pickled code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pt2_that_would_run_pickled_code_is_refused(tmp_path):
    ep = exported()
    good = tmp_path / "good.pt2"
    torch.export.save(ep, good)
    marker = tmp_path / "ran"

    def pickled_inputs(name, data):
        if "/data/sample_inputs/" in name:
            import io

            buffer = io.BytesIO()
            torch.save(((Marker(str(marker)),), {}), buffer)
            return buffer.getvalue()
        return data

    bad = tmp_path / "inputs.pt2"
    rewritten(good, bad, pickled_inputs)
    with pytest.raises(
        hir.HirError, match=r"inputs.pt2: error: data/sample_inputs/model.pt: the example inputs are not plain tensors"
    ):
        hir.load(str(bad))
    assert not marker.exists()
    try:  # what hir guards against: torch 2.13's own loader unpickles it (weights_only=False fallback)
        torch.export.load(bad)
    except Exception:
        pass
    assert marker.exists()

    def pickled_weight(name, data):
        if name.endswith("model_weights_config.json"):
            config = json.loads(data)
            next(iter(config["config"].values()))["use_pickle"] = True
            return json.dumps(config).encode()
        return data

    rewritten(good, tmp_path / "weights.pt2", pickled_weight)
    with pytest.raises(hir.HirError, match=r"model_weights_config.json: proj.weight is stored as a pickled object"):
        hir.load(str(tmp_path / "weights.pt2"))

    top = zipfile.ZipFile(good).namelist()[0].split("/")[0]
    shutil.copy(good, tmp_path / "aoti.pt2")
    with zipfile.ZipFile(tmp_path / "aoti.pt2", "a") as archive:
        archive.writestr(f"{top}/data/aotinductor/model/model.so", b"\x7fELF")
    with pytest.raises(
        hir.HirError, match=r"data/aotinductor/model/model.so: hir reads torch.export archives of .* only"
    ):
        hir.load(str(tmp_path / "aoti.pt2"))
    (tmp_path / "other.pt2").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(hir.HirError, match=r"other.pt2: error: not a torch.export archive"):
        hir.load(str(tmp_path / "other.pt2"))
