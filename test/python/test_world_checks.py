"""Placements checked against the world and no state left between runs: a #hir.shard that
does not divide is a located error when the module is parsed (hir.parse, hir-opt); a mesh
naming more devices than the run has ranks is a located error when the run starts; a process
group that hir.run created does not outlive a failed run."""

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import Shard

import hir
from hir.core import HirError
from hir.interpreter import Program
from hir.tools import opt

SHARD = "#hir.shard<array<i64: 0, 1>, 0 : i64>"

UNEVEN = f"""func.func @main(%a: memref<5x4xf32, {SHARD}>) -> memref<5x4xf32, {SHARD}> {{
  return %a : memref<5x4xf32, {SHARD}>
}}
"""

UNEVEN_ALLOC = """func.func @main() {
  %o = memref.alloc() : memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  return
}
"""

THREE = "#hir.shard<array<i64: 0, 1, 2>, 0 : i64>"
WIDE_MESH = f"""func.func @main(%a: memref<12x4xf32, {THREE}>) -> memref<12x4xf32, {THREE}> {{
  %o = memref.alloc() : memref<12x4xf32, {THREE}>
  "hir.binary"(%a, %a, %o) {{kind = "add"}}
      : (memref<12x4xf32, {THREE}>, memref<12x4xf32, {THREE}>, memref<12x4xf32, {THREE}>) -> ()
  return %o : memref<12x4xf32, {THREE}>
}}
"""

# Communicates (a one-rank team), so compiling it creates a process group.
COMM = """func.func @main(%a: memref<1x4xf32, #hir.shard<array<i64: 0>, 0 : i64>>) -> memref<4xf32> {
  %o = memref.alloc() : memref<4xf32>
  %w = "hir.allreduce"(%a, %o) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0>}
      : (memref<1x4xf32, #hir.shard<array<i64: 0>, 0 : i64>>, memref<4xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %o : memref<4xf32>
}
"""


def test_uneven_shard_is_located_at_parse():
    with pytest.raises(
        HirError,
        match=r"uneven.mlir:1:17: error: argument #0 of 'func.func': "
        r"axis 0 of extent 5 does not split evenly over 2 devices",
    ):
        hir.parse(UNEVEN, "uneven.mlir")


def test_uneven_shard_of_an_op_result_is_located_at_the_op():
    with pytest.raises(
        HirError,
        match=r"a.mlir:2:8: error: result #0 of 'memref.alloc': axis "
        r"1 of extent 3 does not split evenly over 2 devices",
    ):
        hir.parse(UNEVEN_ALLOC, "a.mlir")


def test_hir_opt_reports_uneven_shard(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.mlir").write_text(UNEVEN)
    assert opt.main(["u.mlir"]) == 1
    assert (
        "u.mlir:1:17: error: argument #0 of 'func.func': axis 0 of extent 5 does not split evenly over 2 devices"
        in capsys.readouterr().err
    )


def test_hir_opt_verify_diagnostics_sees_placement_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.mlir").write_text(
        "// expected-error@+1 {{axis 0 of extent 5 does not split evenly over 2 devices}}\n" + UNEVEN
    )
    assert opt.main(["u.mlir", "--verify-diagnostics"]) == 0


def test_mesh_wider_than_the_world_is_refused_at_run_start():
    """One process, a 3-device mesh: rows of devices 1 and 2 would never be computed."""
    with pytest.raises(
        HirError,
        match=r"w.mlir:1:17: error: argument #0 of 'func.func' is "
        r"placed on devices \[0, 1, 2\] but the run has 1 rank\(s\)",
    ):
        Program(hir.parse(WIDE_MESH, "w.mlir"), device="cpu", source_name="w.mlir")


def test_failed_run_leaves_no_process_group():
    """A failing communicating run, then a mesh import, in one process."""
    assert not dist.is_initialized()
    module = hir.parse(COMM)
    with pytest.raises(HirError, match="expects shape"):
        hir.run(module, [torch.ones(5)], device="cpu")
    assert not dist.is_initialized()
    linear = torch.nn.Linear(4, 4)
    program = hir.from_torch(linear, (torch.ones(2, 4),), mesh=[0, 1], placements={"weight": Shard(0)})
    assert "#hir.shard" in str(program.module)


def test_successful_one_rank_run_leaves_no_process_group():
    assert hir.run(hir.parse(COMM), [torch.ones(1, 4)], device="cpu")[0].tolist() == [1.0] * 4
    assert not dist.is_initialized()
