"""Upstream's shard tests through the bridge (benchmarks/shard_conformance.py, issue 24).

The upstream files are not in this repository: set ``HIR_LLVM_PROJECT`` to an llvm-project
checkout (test/Upstream/shard/README.md names the revisions); without it these tests skip.
Every function must convert or stop at a located error, never an internal one; a pinned few
convert and run on 2 Gloo ranks equal to their reference (the one-device program for a
global one, the SPMD reference for a partitioned one)."""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = os.environ.get("HIR_LLVM_PROJECT")
pytestmark = pytest.mark.skipif(not UPSTREAM, reason="HIR_LLVM_PROJECT (an llvm-project checkout) is not set")

# (file, function): TOSA, linalg, all_gather / all_slice / all_to_all / all_reduce after partitioning,
# and a hand-partitioned all_slice
PINNED = (
    ("mlir/test/Dialect/Shard/partition.mlir", "incomplete_sharding"),
    ("mlir/test/Dialect/Shard/partition.mlir", "move_split_axis"),
    ("mlir/test/Dialect/Shard/resharding-partition.mlir", "split_replicated_tensor_axis"),
    ("mlir/test/Dialect/Linalg/shard-partition.mlir", "matmul_1d_grid_static_tensors_reduction_iterator_sharding"),
    (
        "mlir/test/Dialect/Shard/all-scatter-op-lowering.mlir",
        "all_slice_op_lowering_of_static_1d_tensor_on_static_1d_grid",
    ),  # partitioned
)


def _benchmark(name: str = "shard_conformance"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cases(suite, rel: str) -> list:
    with open(os.path.join(UPSTREAM, rel)) as f:
        return suite.programs(rel, f.read())


def test_every_upstream_function_converts_or_stops_located():
    suite = _benchmark()
    cases = [
        c for rel in suite.UPSTREAM_FILES if os.path.exists(os.path.join(UPSTREAM, rel)) for c in _cases(suite, rel)
    ]
    assert cases
    for case in cases:
        if not case.status:
            case.status, case.detail, _ = suite.convert(case)
    internal = [f"{c.file}::{c.name}: {c.detail}" for c in cases if c.status == "internal"]
    assert not internal, internal


@pytest.mark.slow
def test_pinned_upstream_functions_run_equal_on_two_ranks():
    suite = _benchmark()
    jobs, cases = [], []
    for rel, name in PINNED:
        case = next(c for c in _cases(suite, rel) if c.name == name)
        case.status, case.detail, module = suite.convert(case)
        assert case.status == "converted", (name, case.detail)
        jobs += suite.prepare_runs(case, (2,))
        cases.append(case)
    assert len(jobs) == len(PINNED), [c.runs for c in cases]
    verdicts = _benchmark("shard_conformance_ranks").run_jobs(jobs, 2)
    assert verdicts and all(v == "ok" for v in verdicts.values()), verdicts
