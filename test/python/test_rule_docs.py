"""docs/from-pytorch.md lists the placement strategies of the frontend's registry as the
generator writes them now, and every op of the registry is listed."""

from pathlib import Path

from hir.frontend.strategies import STRATEGIES
from hir.tools.gen_rule_docs import generate, main

DOC = Path(__file__).resolve().parents[2] / "docs" / "from-pytorch.md"


def test_rule_list_is_current():
    assert generate() in DOC.read_text(), (
        "the sharding rule list in docs/from-pytorch.md is out of date: "
        "run python -m hir.tools.gen_rule_docs -o docs/from-pytorch.md"
    )


def test_every_rule_is_listed():
    listed = generate()
    assert STRATEGIES and all(f"`{name.removeprefix('torch.')}`" in listed for name in STRATEGIES)


def test_check_flags_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "doc.md"
    stale.write_text(DOC.read_text().replace("`aten.cat`", "`aten.concat`"))
    assert main(["--check", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().err
    stale.write_text(DOC.read_text())
    assert main(["--check", str(stale)]) == 0
    (tmp_path / "bare.md").write_text("no markers\n")
    assert main(["--check", str(tmp_path / "bare.md")]) == 1
