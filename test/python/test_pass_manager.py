"""hir pipelines run on one MLIR PassManager: hir passes as Python passes beside upstream
elements, IR printing / timing / statistics from the PassManager (MLIR's own headers and
reports, handed to ``out``), failing Python passes reported through it with their location."""

import io
import pathlib
from dataclasses import dataclass

import pytest
from torch_mlir import ir
from torch_mlir.passmanager import PassManager

import hir
from hir.core import HirError
from hir.passes import Element, Instrumentation, ModulePass, PassFailure, build_pass_manager, disabled, parse_pipeline

PROGRAM = """func.func @main(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %out = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %out) {stream_axis = 0 : i64} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  return %out : memref<4x8xf32>
}
"""


def test_one_pass_manager_for_the_whole_pipeline():
    module = hir.parse(PROGRAM)
    with module.context:
        run = build_pass_manager(parse_pipeline("hir-stream-lowering,func.func(canonicalize,cse),hir-fuse-loops,cse"))
    assert isinstance(run.pass_manager, PassManager)
    run.run(module)
    assert '"hir.stream_for"' in str(module)
    with pytest.raises(RuntimeError, match="runs once"):
        run.run(module)


def test_reports_come_from_the_pass_manager_into_out(capfd):
    out = io.StringIO()
    hir.lower(
        hir.parse(PROGRAM),
        "hir-stream-lowering,canonicalize",
        print_before_all=True,
        print_after_all=True,
        timing=True,
        statistics=True,
        out=out,
    )
    text = out.getvalue()
    # MLIR's IR printing instrumentation: "<pass name>: <argument>" headers, hir passes included.
    assert "// -----// IR Dump Before StreamLowering: hir-stream-lowering //----- //" in text
    assert "// -----// IR Dump After StreamLowering: hir-stream-lowering //----- //" in text
    assert "// -----// IR Dump After CanonicalizerPass: canonicalize{" in text
    # MLIR's timing report (printed as the PassManager is destroyed), and its statistics.
    assert "... Execution time report ..." in text and "... Pass statistics report ..." in text
    timed = text[text.index("----Wall Time----") :]
    assert timed.index("StreamLowering") < timed.index("CanonicalizerPass"), timed
    captured = capfd.readouterr()
    assert "IR Dump" not in captured.err and "Execution time" not in captured.err


def test_hir_dump_environment(monkeypatch):
    monkeypatch.setenv("HIR_DUMP", "ir-after-all")
    out = io.StringIO()
    hir.lower(hir.parse(PROGRAM), "hir-stream-lowering", out=out)
    assert out.getvalue().startswith(
        "// -----// IR Dump After StreamLowering: hir-stream-lowering //----- //\nmodule {"
    )


def test_disabled_pass_is_left_out():
    out = io.StringIO()
    with disabled("hir-stream-lowering"):
        module = hir.lower(hir.parse(PROGRAM), "hir-stream-lowering,cse", print_after_all=True, out=out)
    assert "StreamLowering" not in out.getvalue() and "CSEPass" in out.getvalue()
    assert '"hir.stream_for"' not in str(module)


def test_no_hand_written_timer_in_passes():
    """Timing is the PassManager's: nothing under passes/ reads a clock."""
    root = pathlib.Path(hir.passes.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "perf_counter" not in text and "import time" not in text, path


@dataclass
class _Failing(ModulePass):
    name = "test-failing"
    description = "Fails at the first hir.set, or raises a bug."
    bug: bool = False

    def run(self, module: ir.Module) -> None:
        if self.bug:
            raise ZeroDivisionError("a bug in a pass")
        for op in module.body.operations[0].regions[0].blocks[0].operations:
            if op.operation.name == "hir.set":
                raise PassFailure("'hir.set' op refused by the test pass", op.location)
        raise PassFailure("no hir.set here")


@dataclass
class _Breaking(ModulePass):
    name = "test-breaking"
    description = "Produces invalid IR (a result of the wrong shape)."

    def run(self, module: ir.Module) -> None:
        block = module.body.operations[0].regions[0].blocks[0]
        op = next(o.operation for o in block.operations if o.operation.name == "hir.set")
        with ir.InsertionPoint(op), op.location:
            wrong = ir.Operation.create(
                "memref.alloc",
                results=[ir.MemRefType.get([5, 8], ir.F32Type.get())],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])},
            ).result
        op.operands[1] = wrong


def _run(module: ir.Module, *passes: ModulePass, upstream: str = "", verify_each: bool = True) -> None:
    elements = [Element(p.name, p) for p in passes] + ([Element(upstream)] if upstream else [])
    with module.context:
        build_pass_manager(elements, Instrumentation(verify_each=verify_each)).run(module, "prog.mlir")


def test_pass_failure_is_a_located_diagnostic():
    module = hir.parse(PROGRAM, "prog.mlir")
    with pytest.raises(HirError) as info:
        _run(module, _Failing())
    # (a note naming the caller's line follows: hir.HirError's, for calls from outside hir)
    assert str(info.value).splitlines()[0] == "prog.mlir:3:3: error: 'hir.set' op refused by the test pass"


def test_pass_failure_without_location_names_the_input():
    module = hir.parse("func.func @main() {\n  return\n}\n", "prog.mlir")
    with pytest.raises(HirError) as info:
        _run(module, _Failing())
    assert str(info.value).splitlines()[0] == "prog.mlir: error: no hir.set here"


def test_pass_bug_is_raised_after_the_pass_manager_returned():
    module = hir.parse(PROGRAM, "prog.mlir")
    with pytest.raises(ZeroDivisionError, match="a bug in a pass"):
        _run(module, _Failing(bug=True), upstream="cse")
    # The PassManager unwound normally: the context and module stay usable.
    hir.lower(module, "hir-stream-lowering,cse")
    assert '"hir.stream_for"' in str(module)


def test_verify_each_catches_invalid_ir_after_a_python_pass():
    module = hir.parse(PROGRAM, "prog.mlir")
    with pytest.raises(HirError) as info:
        _run(module, _Breaking(), upstream="cse")
    assert str(info.value).startswith("prog.mlir:3:3: error: 'hir.set' op output has shape [5, 8]"), str(info.value)
    # verify_each=False: the PassManager does not verify (run_pipeline verifies once, at the end).
    module = hir.parse(PROGRAM, "prog.mlir")
    _run(module, _Breaking(), verify_each=False)
    with pytest.raises(ir.MLIRError):
        module.operation.verify()
