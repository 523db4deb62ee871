"""The explicit package list of pyproject.toml names every package folder: an editable
install finds a missing subpackage anyway, a wheel (``pip install .``) silently lacks it."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (hir supports 3.10: skipped there)

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {name: ROOT / folder for name, folder in config["package-dir"].items() if name}
    roots["hir"] = ROOT / config["package-dir"][""] / "hir"
    found = set()
    for name, folder in roots.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder).parts
            found.add(".".join((name, *relative)))
    assert found == set(config["packages"]), (
        f"missing: {sorted(found - set(config['packages']))}, extra: {sorted(set(config['packages']) - found)}"
    )
