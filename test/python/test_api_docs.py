"""The public Python API explains itself: every public Builder method has a docstring,
``help(hir.run)`` and ``help(hir.generate)`` list every option they take (checked against
the functions that take them), annotations admit the defaults, and ``hir.__version__`` is the
installed distribution's, read without importing torch."""

import inspect
import subprocess
import sys
import typing
from importlib import metadata

import hir
from hir.builder import Builder


def test_every_public_builder_method_has_a_docstring():
    public = [name for name, member in inspect.getmembers(Builder, callable) if not name.startswith("_")]
    assert len(public) > 40
    assert [name for name in public if not (getattr(Builder, name).__doc__ or "").strip()] == []


def test_builder_sharding_annotations_admit_the_default():
    """``sharding="same"`` (infer the placement) is what the annotation says it may be."""
    for name in ("set", "binary", "reduction", "matmul", "linear"):
        parameter = inspect.signature(getattr(Builder, name)).parameters["sharding"]
        allowed = typing.get_args(typing.get_type_hints(getattr(Builder, name))["sharding"])
        assert parameter.default == "same" and typing.Literal["same"] in allowed and type(None) in allowed, (
            name,
            allowed,
        )


def test_run_lists_its_options():
    from hir.interpreter import Program

    options = [p for p in inspect.signature(Program.__init__).parameters if p not in ("self", "module")]
    assert len(options) > 10
    assert [o for o in options if f"``{o}``" not in hir.run.__doc__] == []


def test_generate_lists_its_options():
    from hir.frontend import generate

    keywords = [p.name for p in inspect.signature(generate.generate).parameters.values() if p.kind is p.KEYWORD_ONLY]
    options = [*generate._ARGUMENTS, *keywords]
    assert "max_new_tokens" in options and "compile_options" in options
    assert [o for o in options if f"``{o}``" not in hir.generate.__doc__] == []


def test_version_comes_from_the_package_metadata_without_torch():
    code = "import sys, hir; print(hir.__version__, 'torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.split() == [metadata.version("hir"), "False"], result.stderr
    assert hir.__version__ == metadata.version("hir")
