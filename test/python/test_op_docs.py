"""docs/ops.md is what the generator makes from the dialect now, and covers every op the
dialect registers (its examples run in test_doc_examples.py)."""

import re
from pathlib import Path

from hir.tools.gen_op_docs import generate, main
from hir.tools.opt import emit_irdl

ROOT = Path(__file__).resolve().parents[2]
OPS_MD = ROOT / "docs" / "ops.md"
IRDL = ROOT / "dialect" / "hir.irdl.mlir"
EXAMPLES = ROOT / "test" / "Dialect"


def test_ops_md_is_current():
    assert OPS_MD.read_text() == generate(EXAMPLES), (
        "docs/ops.md is out of date: run python -m hir.tools.gen_op_docs -o docs/ops.md"
    )


def test_irdl_file_is_current():
    assert IRDL.read_text() == emit_irdl(), (
        "dialect/hir.irdl.mlir is out of date: run hir-opt --emit-irdl > dialect/hir.irdl.mlir"
    )


def test_irdl_file_is_installed():
    """The wheel ships the IRDL file beside the op classes (pyproject package-data)."""
    import hir.dialect

    installed = Path(hir.dialect.__file__).with_name("hir.irdl.mlir")
    assert installed.read_text() == emit_irdl()


def test_every_registered_op_is_documented():
    registered = set(re.findall(r"irdl\.operation @(\w+)", emit_irdl()))
    documented = set(re.findall(r"^### `hir\.(\w+)`", OPS_MD.read_text(), re.M))
    assert registered and registered == documented


def test_check_flags_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "ops.md"
    stale.write_text(generate(EXAMPLES).replace("required", "optional", 1))
    assert main(["--check", str(stale), "--examples", str(EXAMPLES)]) == 1
    assert "out of date" in capsys.readouterr().err
    stale.write_text(generate(EXAMPLES))
    assert main(["--check", str(stale), "--examples", str(EXAMPLES)]) == 0
