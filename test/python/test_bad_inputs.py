"""The bad-input suite: every case of bad_inputs_table.py gives its exit status (CLIs) or a
HirError (Python API) with the expected message fragments, no Python traceback, and leaves
every file of its folder untouched (contents and modes; no new files but the ones a case
names). The CLIs run in-process through their ``main``, which is what their console scripts
call; test_cli_errors.py runs a few of them as real subprocesses."""

import hashlib
import os

import pytest
import torch

import hir
import hir.dialect
import hir.passes
from bad_inputs_api import builder_cases, weights_cases
from bad_inputs_calls import _api_cases
from bad_inputs_files import FILES
from bad_inputs_frontend import frontend_cases
from bad_inputs_table import CLI_CASES
from hir.core import HirError
from hir.tools import demo, import_cli, opt, run_cli

MAINS = {"hir-opt": opt.main, "hir-run": run_cli.main, "hir-import": import_cli.main, "hir-demo": demo.main}


def snapshot(folder) -> dict:
    """Every file and folder under ``folder``: name -> (mode, content hash)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest() if os.path.isfile(path) else ""
            out[os.path.relpath(path, folder)] = (st.st_mode, digest)
    return out


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for name, text in FILES.items():
        if text is not None:
            (tmp_path / name).write_text(text)
    torch.save(torch.ones(4, 4), tmp_path / "x.pt")
    (tmp_path / "nonutf8.mlir").write_bytes(b"func.func @main() {\n  return // \xe9\n}\n")
    (tmp_path / "out.mlir").chmod(0o600)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("HIR_") or name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HIR_DEVICE", "cpu")
    return tmp_path


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_case(case, folder, monkeypatch, capsys):
    _, tool, argv, env, rc, fragments = case
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = snapshot(folder)
    try:
        code = MAINS[tool](list(argv))
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == rc, err
    assert "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert snapshot(folder) == before


API_CASES = _api_cases() + frontend_cases() + builder_cases() + weights_cases()


def call_site(tb) -> str:
    """``file:line`` of the call into hir on a traceback: the last frame before the first
    frame of the hir package (what HirError must name)."""
    folders = tuple(os.path.dirname(m.__file__) + os.sep for m in (hir, hir.dialect, hir.passes))
    site = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if os.path.realpath(filename).startswith(tuple(os.path.realpath(f) + os.sep for f in folders)):
            return site
        site = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return site


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_api_case(case, folder):
    _, call, fragments = case
    before = snapshot(folder)
    with pytest.raises(HirError) as info:
        call(folder)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    site = call_site(info.tb)
    assert site is not None and "bad_inputs_" in site, site
    assert site in message, (site, message)  # the caller's file and line
    assert snapshot(folder) == before
    import torch.distributed as dist

    assert not dist.is_initialized()  # no process group outlives a failed call


def test_table_size():
    assert len(CLI_CASES) + len(API_CASES) >= 150
