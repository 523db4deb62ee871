"""Imports cached on disk (issue 34, :mod:`hir.frontend.import_cache`): ``hir.compile(module,
example_args)`` imports a module once per cache directory; anything the import reads (a
plain attribute, a shape, the code) makes another entry; ``$HIR_CACHE_DIR=off`` turns it off.
Nothing in the cache runs code (no pickle is loaded), an edited entry is a miss, and a folder
another user owns or can write is not used."""

import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import hir
from hir.frontend import torch_import


class Scaled(torch.nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.linear(x)) * self.scale


def counting(monkeypatch) -> list:
    calls = []
    original = torch_import.from_torch

    def counted(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(torch_import, "from_torch", counted)
    return calls


def test_second_compile_imports_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("HIR_CACHE_DIR", str(tmp_path))
    imports = counting(monkeypatch)
    torch.manual_seed(0)
    model, x = Scaled(2.0), torch.randn(3, 8)
    first = hir.compile(model, (x,), device="cpu")
    again = hir.compile(model, (x,), device="cpu")
    assert len(imports) == 1 and len(list((tmp_path / "imports").iterdir())) == 1
    torch.testing.assert_close(again(x), model(x))
    torch.testing.assert_close(first(x), again(x))
    # what the import reads makes another entry: a plain attribute, a shape, a dynamic dim
    hir.compile(Scaled(3.0), (x,), device="cpu")
    hir.compile(model, (torch.randn(5, 8),), device="cpu")
    dynamic = hir.compile(model, (x,), device="cpu", dynamic={"input0": {0: "rows"}})
    assert len(imports) == 4
    torch.testing.assert_close(dynamic(torch.randn(7, 8)).shape, torch.Size([7, 4]))


def test_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("HIR_CACHE_DIR", "off")
    imports = counting(monkeypatch)
    model, x = Scaled(2.0), torch.randn(3, 8)
    hir.compile(model, (x,), device="cpu")
    hir.compile(model, (x,), device="cpu")
    assert len(imports) == 2


@pytest.mark.slow  # two fresh processes (torch, hir) on CI's 2 cores; the in-process test loads entries too
def test_another_process_loads_the_entry(tmp_path):
    """A second process finds the first one's entry: its import is a parse."""
    script = textwrap.dedent(
        """
        import sys, torch, hir
        from hir.frontend import torch_import
        sys.path.insert(0, %r)
        from test_import_cache import Scaled
        calls = []
        original = torch_import.from_torch
        torch_import.from_torch = lambda *a, **k: calls.append(1) or original(*a, **k)
        torch.manual_seed(0)
        model = Scaled(2.0)
        x = torch.ones(3, 8)
        y = hir.compile(model, (x,), device="cpu")(x)
        torch.testing.assert_close(y, model(x))
        print("imports", len(calls))
        """
        % (str(__import__("pathlib").Path(__file__).parent),)
    )
    env = {**__import__("os").environ, "HIR_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.stdout.split()[-1] if r.returncode == 0 else r.stderr for r in runs] == ["1", "0"]


def _entry(cache) -> Path:
    (entry,) = (cache / "imports").iterdir()
    return entry


class Planted:
    """Unpickling this creates the file ``path``: a pickle planted in the cache that must
    never be loaded."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_planted_pickle_is_never_loaded(monkeypatch, tmp_path):
    """An entry at the module's key holding a pickle (what the cache once read) runs no code:
    the cache reads JSON, safetensors and MLIR text only, and the entry is a miss."""
    import pickle

    from hir.frontend.import_cache import fingerprint

    cache = tmp_path / "cache"
    monkeypatch.setenv("HIR_CACHE_DIR", str(cache))
    imports = counting(monkeypatch)
    model, x = Scaled(2.0), torch.randn(3, 8)
    hir.compile(model, (x,), device="cpu")  # a real entry, then the pickles planted in it
    entry = _entry(cache)
    assert entry.name == fingerprint(model, (x,), {})
    marker = tmp_path / "ran"
    for name in ("meta.pt", "meta.pkl", "captured.pt"):
        (entry / name).write_bytes(pickle.dumps(Planted(str(marker))))
    (entry / "meta.json").write_bytes(pickle.dumps(Planted(str(marker))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = hir.compile(model, (x,), device="cpu")
    assert not marker.exists(), "a pickle in the cache was loaded"
    assert any("does not match its digest" in str(w.message) for w in caught)
    assert len(imports) == 2  # the planted entry was a miss
    torch.testing.assert_close(fn(x), model(x))


def test_an_edited_program_is_a_miss(monkeypatch, tmp_path):
    """relu -> sigmoid in an entry's program.mlir: a miss with a warning, the right result,
    and the entry stored again (the next call hits it without a warning)."""
    monkeypatch.setenv("HIR_CACHE_DIR", str(tmp_path))
    imports = counting(monkeypatch)
    torch.manual_seed(0)
    model, x = Scaled(2.0), torch.randn(3, 8)
    hir.compile(model, (x,), device="cpu")
    program = _entry(tmp_path) / "program.mlir"
    text = program.read_text()
    assert "torch.aten.relu" in text
    program.write_text(text.replace("torch.aten.relu", "torch.aten.sigmoid"))
    with pytest.warns(UserWarning, match="program.mlir|does not match its digest"):
        fn = hir.compile(model, (x,), device="cpu")
    assert len(imports) == 2
    torch.testing.assert_close(fn(x), model(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = hir.compile(model, (x,), device="cpu")
    assert len(imports) == 2
    torch.testing.assert_close(again(x), model(x))


def test_captured_tensors_come_back(monkeypatch, tmp_path):
    """A non-persistent buffer (left out of state_dict) is kept in the entry's safetensors
    and runs the loaded program with a state_dict() only."""

    class WithBuffer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("shift", torch.arange(4.0), persistent=False)

        def forward(self, x):
            return x + self.shift

    monkeypatch.setenv("HIR_CACHE_DIR", str(tmp_path))
    imports = counting(monkeypatch)
    model, x = WithBuffer(), torch.ones(2, 4)
    hir.compile(model, (x,), device="cpu")
    from hir.frontend.import_cache import cached_from_torch

    program = cached_from_torch(model, (x,))
    assert len(imports) == 1
    torch.testing.assert_close(program.captured["shift"], torch.arange(4.0))
    torch.testing.assert_close(program.run(model.state_dict(), x)[0], model(x))


def test_a_folder_others_can_write_is_refused(monkeypatch, tmp_path):
    """A cache folder writable by group or others is not used (a warning says why): another
    user could plant entries there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HIR_CACHE_DIR", str(shared))
    imports = counting(monkeypatch)
    model, x = Scaled(2.0), torch.randn(3, 8)
    for _ in range(2):
        with pytest.warns(
            UserWarning, match=r"not using the import cache: .*shared is writable by group and others \(mode 777\)"
        ):
            fn = hir.compile(model, (x,), device="cpu")
    assert len(imports) == 2 and os.listdir(shared) == []
    torch.testing.assert_close(fn(x), model(x))
    os.chmod(shared, 0o755)  # the owner's, writable by no one else: used
    hir.compile(model, (x,), device="cpu")
    hir.compile(model, (x,), device="cpu")
    assert len(imports) == 3


def test_a_folder_of_another_user_is_refused(tmp_path):
    """The ownership check itself, on the stat of a folder owned by another uid."""
    from hir.frontend.import_cache import refusal

    status = os.stat(tmp_path)
    other = os.stat_result((stat.S_IFDIR | 0o700, *status[1:4], os.getuid() + 1, *status[5:]))
    assert (
        refusal(tmp_path, other) == f"{tmp_path} belongs to uid {os.getuid() + 1}, not to this user (uid {os.getuid()})"
    )
    assert (
        refusal(tmp_path, os.stat_result((stat.S_IFDIR | 0o720, *status[1:])))
        == f"{tmp_path} is writable by group (mode 720)"
    )
    assert refusal(tmp_path, os.stat_result((stat.S_IFDIR | 0o700, *status[1:]))) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_real_folder_of_another_user_is_refused(monkeypatch, tmp_path):
    """A cache folder owned by ``nobody`` (chown, as root): not used, nothing written there."""
    import pwd

    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(theirs, nobody, -1)
    monkeypatch.setenv("HIR_CACHE_DIR", str(theirs))
    model, x = Scaled(2.0), torch.randn(3, 8)
    with pytest.warns(UserWarning, match=f"belongs to uid {nobody}, not to this user"):
        hir.compile(model, (x,), device="cpu")
    assert os.listdir(theirs) == []


def test_default_folder_is_private(monkeypatch, tmp_path):
    """Without $HIR_CACHE_DIR the cache is ~/.cache/hir, created 0700 whatever the umask."""
    monkeypatch.delenv("HIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    old = os.umask(0o002)
    try:
        hir.compile(Scaled(2.0), (torch.randn(3, 8),), device="cpu")
    finally:
        os.umask(old)
    for folder in (tmp_path / ".cache" / "hir", tmp_path / ".cache" / "hir" / "imports"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert len(list((tmp_path / ".cache" / "hir" / "imports").iterdir())) == 1
