"""Readable lowered IR: the passes name the values they create (name locations), printed
with ``use_name_loc_as_prefix`` (hir-opt --print-value-names); names change neither the IR
nor where errors are reported."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from torch_mlir import ir

import hir
from hir.core import format_location, format_mlir_error, new_context

README = Path(__file__).resolve().parents[2] / "README.md"
NUMBERED = re.compile(r"%\d+\b")


def readme_program() -> str:
    """The README's program-level example (the ```mlir run file=program.mlir``` block)."""
    text = README.read_text()
    return re.search(r"```mlir run file=program\.mlir\n(.*?)```", text, re.S)[1]


def lowered(ctx: ir.Context) -> ir.Module:
    module = hir.parse(readme_program(), "program.mlir", ctx)
    return hir.lower(module)


def test_lowered_readme_example_prints_names():
    with new_context() as ctx:
        module = lowered(ctx)
        plain = str(module)
        named = module.operation.get_asm(use_name_loc_as_prefix=True)
    assert NUMBERED.findall(plain), "the default form numbers values"
    assert not NUMBERED.findall(named), f"numbered values left: {NUMBERED.findall(named)}"
    for name in ("%user_stream", "%stream", "%i", "%arg0_slice", "%slice"):
        assert re.search(re.escape(name) + r"\b", named), name
    # Names are only names: the named text parses back to the same IR.
    with new_context():
        assert str(hir.parse(named, "named.mlir")) == plain


def test_hir_opt_flag(tmp_path):
    source = tmp_path / "program.mlir"
    source.write_text(readme_program())
    command = [sys.executable, "-m", "hir.tools.opt", str(source), "--pass-pipeline=builtin.module(hir-lower)"]
    plain = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    named = subprocess.run(command + ["--print-value-names"], capture_output=True, text=True, check=True).stdout
    assert "%user_stream = " in named and "%user_stream" not in plain
    assert len(named.splitlines()) == len(plain.splitlines())


def test_name_location_keeps_file_location():
    with new_context():
        file_loc = ir.Location.file("prog.mlir", 5, 3)
        assert format_location(ir.Location.name("stream", childLoc=file_loc)) == "prog.mlir:5:3"
        nested = ir.Location.name("outer", childLoc=ir.Location.name("inner", childLoc=file_loc))
        assert format_location(nested) == "prog.mlir:5:3"
        assert (
            format_location(ir.Location.name("stream", childLoc=ir.Location.file("-", 2, 1)), "in.mlir")
            == "in.mlir:2:1"
        )


def test_verifier_error_of_pass_created_op_shows_file_line_col():
    with new_context() as ctx:
        module = lowered(ctx)
        (work_loop,) = [
            op for op in module.body.operations[0].regions[0].blocks[0].operations if op.operation.name == "hir.for"
        ][1:]
        view = next(
            op.operation for op in work_loop.regions[0].blocks[0].operations if op.operation.name == "hir.alias_select"
        )
        assert str(view.location).startswith('loc("arg0_slice"(')
        view.attributes["axis"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 5)
        with pytest.raises(ir.MLIRError) as err:
            module.operation.verify()
        message = format_mlir_error(err.value, "program.mlir")
    # The matmul carrying stream_axis sits on line 5, column 3 of the program.
    assert message.startswith("program.mlir:5:3: error: 'hir.alias_select' op"), message
    assert "arg0_slice" not in message
