"""Imports cached on disk (issue 34, :mod:`hir.frontend.import_cache`): ``hir.compile(module,
example_args)`` imports a module once per cache directory; anything the import reads (a
plain attribute, a shape, the code) makes another entry; ``$HIR_CACHE_DIR=off`` turns it off."""

import subprocess
import sys
import textwrap

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
