"""The frontend's placement strategy registry (hir.frontend.strategies): compute ops and
kernel-segment ops are placed through one registry of one strategy type; the placer decides
a plan of data that the partitioner builds; ``HIR_DUMP=placements`` lists which strategy
placed what and names the op of every fallback; the worked example of docs/architecture.md
(``aten.index_select`` on a split table) places a lookup locally."""

import ast
from pathlib import Path

import pytest
import torch

from hir.dialect import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp
from hir.frontend import from_torch
from hir.frontend.strategies import STRATEGIES, OpCall, OpPlacement, compute_spec, register_op_strategy, strategy_for
from hir.frontend.strategies.registry import COMPUTE_FORMS

FRONTEND = Path(__file__).resolve().parents[2] / "python" / "hir" / "frontend"


def test_registry_lists_compute_and_segment_ops():
    """One registry: hir compute ops and torch ops of segments, each with a documented
    strategy written in its op family's module."""
    compute = {name for name in STRATEGIES if name.startswith("hir.")}
    segment = {name for name in STRATEGIES if name.startswith("torch.")}
    assert compute == {op.OPERATION_NAME for op in (LinearOp, MatmulOp, BinaryOp, ReductionOp, SetOp)}
    assert {
        "torch.aten.view",
        "torch.aten.scaled_dot_product_attention",
        "torch.aten.index_select",
        "torch.aten.mm",
    } <= segment
    families = {s.family for s in STRATEGIES.values()}
    assert families == {
        "matrix",
        "grouped",
        "pointwise",
        "views",
        "reductions",
        "attention",
        "embedding",
        "redistribute",
        "backward",
    }
    assert all(s.doc for s in STRATEGIES.values())
    # the torch ops that become compute ops, registered beside their compute op's strategy
    forms = {
        name.removeprefix("torch.aten."): form.__module__.rpartition(".")[2] for name, form in COMPUTE_FORMS.items()
    }
    assert forms == {
        "linear": "matrix",
        "matmul": "matrix",
        "mm": "matrix",
        "bmm": "matrix",
        "add.Tensor": "pointwise",
        "sub.Tensor": "pointwise",
        "mul.Tensor": "pointwise",
        "div.Tensor": "pointwise",
        "maximum": "pointwise",
        "minimum": "pointwise",
        "sum.dim_IntList": "reductions",
        "amax": "reductions",
        "amin": "reductions",
        "torch.hir.redistribute": "redistribute",
    }
    # a pointwise-tagged op without an entry of its own takes the tag's strategy
    assert strategy_for("torch.aten.gelu").name == "pointwise.pointwise_strategy"
    assert strategy_for("torch.aten.cumsum") is None


def test_registering_an_op_twice_is_refused():
    with pytest.raises(ValueError, match="torch.aten.view already has the placement strategy views.view_strategy"):

        @register_op_strategy("torch.aten.view", doc="again")
        def again(call: OpCall) -> OpPlacement:
            return call.local(None)


def test_frontend_layout():
    """No op-class if-chains, no mixins, files within the size limit."""
    for path in FRONTEND.rglob("*.py"):
        text = path.read_text()
        assert "op_class is" not in text, path
        assert len(text.splitlines()) <= 400, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert len(node.bases) <= 1, f"{path}: class {node.name} takes mixin bases"


class Lookup(torch.nn.Module):
    """``index_select`` on a table split on its columns, then a pointwise op."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Parameter(torch.randn(10, 8), requires_grad=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.index_select(self.table, 0, ids) * 2.0


def _lookup_program(placements: dict):
    from torch.distributed.tensor import Shard

    ids = torch.tensor([3, 1, 4, 1, 5, 9])
    return from_torch(Lookup(), (ids,), mesh=[0, 1], placements={k: Shard(v) for k, v in placements.items()}), ids


def test_index_select_on_a_split_table_is_local(capfd, monkeypatch):
    """The table split on dim 1: the lookup segment reads each rank's columns and writes
    its columns of the result (no replicated copy); HIR_DUMP=placements names the strategy."""
    monkeypatch.setenv("HIR_DUMP", "placements")
    program, _ = _lookup_program({"table": 1})
    text = str(program.module)
    assert '"hir.set"' not in text, text
    assert "memref<6x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>" in text
    assert "torch.aten.index_select" in text
    assert "!torch.vtensor<[10,4],f32>" in text  # the segment computes on local columns
    listing = capfd.readouterr().err
    assert "torch.aten.index_select: by embedding.index_select_strategy on mesh axis 0: [1, -1] -> 1" in listing


def test_index_select_along_the_split_falls_back(capfd, monkeypatch):
    """A table split on the selected dim (a vocabulary split) has no local lookup here: the
    segment reads a replicated copy, and the listing names the op and why."""
    monkeypatch.setenv("HIR_DUMP", "placements")
    program, _ = _lookup_program({"table": 0})
    text = str(program.module)
    assert '"hir.set"' in text and "memref<10x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>" in text
    listing = capfd.readouterr().err
    assert (
        "reads replicated copies (fallback: torch.aten.index_select: "
        "selects along the split dim 0 (a vocabulary-split table))"
    ) in listing


def test_compute_fallback_is_listed(capfd, monkeypatch):
    """A compute op whose strategy refuses its operands' placements reads them replicated
    (DTensor's redistribute-to-Replicate), and the listing says so."""
    from torch.distributed.tensor import Shard

    class Add(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    monkeypatch.setenv("HIR_DUMP", "placements")
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    program = from_torch(Add(), (a, b), mesh=[0, 1], placements={"input0": Shard(0), "input1": Shard(1)})
    assert str(program.module).count('"hir.set"') == 2
    listing = capfd.readouterr().err
    assert (
        "torch.aten.add.Tensor: as hir.binary by replicated (fallback: operands split along different axes (0, 1))"
        in listing
    )
    assert "resharding %arg0: [0] -> [-1]" in listing and "resharding %arg1: [1] -> [-1]" in listing


def test_plan_is_data():
    """The placer's plan: a placement per value, one step per compute op or segment, and
    the reshardings it implies, before any hir IR exists."""
    from torch.distributed.tensor import Shard
    from torch_mlir import ir
    from torch_mlir.dialects import func

    from hir.core import new_context
    from hir.frontend.fx_import import export_to_torch_mlir
    from hir.frontend.placements import mesh_inputs
    from hir.frontend.placer import ComputeStep, Placer, SegmentStep

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)).eval()
    context = new_context()
    with context, ir.Location.unknown():
        torch_module, exported, _ = export_to_torch_mlir(model, (torch.randn(4, 8),), context)
        torch_func = next(op for op in torch_module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME)
        placements = {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1)}
        grid, arguments, outputs = mesh_inputs(torch_func, exported.state_names, 1, [0, 1], placements)
        plan = Placer(torch_func, grid, arguments, outputs).plan()
    kinds = [type(s).__name__ for s in plan.steps]
    assert kinds == ["ComputeStep", "SegmentStep", "ComputeStep"], kinds
    fc1, gelu, fc2 = plan.steps
    assert isinstance(fc1, ComputeStep) and fc1.form is None and plan.of(fc1.op.results[0]).splits == (1,)
    assert isinstance(gelu, SegmentStep) and gelu.reads[0].splits == (1,)
    assert type(fc2.form).__name__ == "PartialSum" and plan.of(fc2.op.results[0]).splits == (None,)
    assert compute_spec(fc2.op).transposed_rhs
    # the only resharding: fc2's bias, replicated already, is read replicated: none at all
    assert plan.reshardings() == []
