"""hir-opt's cold start: a plain hir module, with or without an hir pipeline, is handled
without importing torch, torch-mlir's torch dialect, linalg or numpy (issue 23; the
benchmark is benchmarks/cold_start.py)."""

import subprocess
import sys
import textwrap

import pytest

HEAVY = ("torch", "numpy", "torch_mlir.dialects.torch", "torch_mlir.dialects.linalg")
PROGRAM = """func.func @main(%arg0: memref<?x32xf32>, %arg1: memref<32x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x32xf32>
  %out = memref.alloc(%dim) : memref<?x8xf32>
  "hir.matmul"(%arg0, %arg1, %out) {stream_axis = 0 : i64} : (memref<?x32xf32>, memref<32x8xf32>, memref<?x8xf32>) -> ()
  return %out : memref<?x8xf32>
}
"""


def imported_by_hir_opt(tmp_path, *args: str, prelude: str = "") -> list[str]:
    source = tmp_path / "program.mlir"
    source.write_text(PROGRAM)
    probe = textwrap.dedent(
        f"""
        import sys
        {prelude}
        from hir.tools.opt import main
        try:
            rc = main([{str(source)!r}, "-o", {str(tmp_path / "out.mlir")!r}, *{list(args)!r}])
        except SystemExit as exit_:  # --version
            rc = exit_.code
        print(",".join(m for m in {HEAVY!r} if m in sys.modules))
        sys.exit(rc)
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [m for m in (result.stdout.splitlines() or [""])[-1].split(",") if m]


@pytest.mark.parametrize(
    "args",
    [(), ("-p", "builtin.module(hir-lower)"), ("--hir-lower", "--canonicalize")],
    ids=["verify", "hir-lower", "pass-flags"],
)
def test_hir_opt_imports_no_torch_numpy_or_linalg(tmp_path, args):
    assert imported_by_hir_opt(tmp_path, *args) == []
    assert ("hir.for" in (tmp_path / "out.mlir").read_text()) == bool(args)


def test_version_reads_metadata_only(tmp_path):
    """--version names torch's version without importing torch."""
    assert imported_by_hir_opt(tmp_path, "--version") == []
    assert not (tmp_path / "out.mlir").exists()


def test_the_probe_sees_heavy_imports(tmp_path):
    """The probe is not vacuous: what the process imported shows up."""
    assert imported_by_hir_opt(tmp_path, prelude="import numpy, torch_mlir.dialects.linalg") == [
        "numpy",
        "torch_mlir.dialects.linalg",
    ]
