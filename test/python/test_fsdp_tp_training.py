"""Data x tensor parallel training on a 2-D mesh (torchtitan's layout):
``hir.train_step(..., mesh=[[0, 1], [2, 3]], data_parallel=..., placements=TP)``, the batch
split over the mesh's rows (axis 0), Megatron's TP over its columns (axis 1). On 4 Gloo
ranks, a tiny random Llama, torch's AdamW, 10 steps: every loss and the final parameters
and optimizer state (whole in the user's tensors after each call) equal single-process
eager training. The program holds each parameter and its optimizer state as the rank's
2-D shard; its collectives run within the mesh's columns (FSDP's gathers and
reduce-scatters) or rows (TP's sums), never across the whole mesh.

``python test_fsdp_tp_training.py CASE...`` is the per-rank worker (cases: ``fully_shard``,
``replicate``).
"""

import os
import re
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases
from test_tp_training import STEPS, _llama, tp_placements
from training_util import steps_equal_eager

MESH = [[0, 1], [2, 3]]
COLUMNS, ROWS = (
    "dense<[[0, 2], [1, 3]]>",
    "dense<[[0, 1], [2, 3]]>",
)  # the teams along mesh axis 0 (data parallel), along axis 1 (TP)


def collectives(text: str) -> dict:
    """``{(op, team): count}`` of the collectives in an IR listing."""
    found = re.findall(
        r'"hir\.(allgather|allreduce|reduce_scatter)"\([^)]*\)\s*\{[^}]*team = (dense<[^>]*>|array<[^>]*>)', text
    )
    out: dict = {}
    for op, team in found:
        out[(op, team.strip())] = out.get((op, team.strip()), 0) + 1
    return out


def run_case(mode: str, rank: int, world: int) -> str:
    import torch
    import torch.distributed as dist

    import hir

    model, reference = _llama(), _llama()
    optimizer, eager = (torch.optim.AdamW(m.parameters(), lr=1e-3, eps=1e-6) for m in (model, reference))
    torch.manual_seed(1)
    batches = [torch.randint(0, 64, (4, 8)) for _ in range(STEPS)]

    def loss_fn(m, ids, labels):
        return m(ids, labels=labels).loss

    step = hir.train_step(
        model,
        optimizer,
        loss_fn,
        (batches[0], batches[0]),
        mesh=MESH,
        data_parallel=mode,
        placements=tp_placements(model, False),
    )
    program = next(iter(step.programs.values()))
    lowered = str(program.lower())
    problem = steps_equal_eager(
        step, loss_fn, [(ids, ids) for ids in batches], model, optimizer, reference, eager, mode, moment="exp_avg_sq"
    )
    if problem:
        return problem
    # q_proj: TP on its rows, FSDP on its columns; o_proj: TP on its columns, FSDP on its rows
    ((compiled, _),) = step._compiled.values()
    names = [n for n, _ in model.named_parameters()]
    fsdp = 2 if mode == "fully_shard" else 1
    for param, shape in (("self_attn.q_proj.weight", (16, 32 // fsdp)), ("self_attn.o_proj.weight", (32 // fsdp, 16))):
        index = names.index(f"model.layers.0.{param}")
        for entry in (f"model.model.layers.0.{param}", f"optimizer.state.{index}.exp_avg"):
            if tuple(compiled.state[entry].shape) != shape:
                return f"{mode}: {entry} held as {tuple(compiled.state[entry].shape)}, not this rank's {shape} shard"
    found = collectives(lowered)
    teams = {team for _, team in found}
    if not teams <= {COLUMNS, ROWS}:
        return f"{mode}: collectives on teams {sorted(teams)}, not within the mesh's rows or columns: {found}"
    gathers = found.get(("allgather", COLUMNS), 0)
    if (mode == "fully_shard") != (gathers > 0) or not found.get(("allreduce", ROWS)):
        return f"{mode}: the step's collectives {found}"
    if mode == "fully_shard" and not found.get(("reduce_scatter", COLUMNS)):
        return f"{mode}: no gradient reduce-scattered along the data-parallel axis: {found}"
    dist.barrier()
    return ""


@pytest.mark.slow
def test_data_and_tensor_parallel_on_a_2d_mesh_equal_eager():
    checked, report = launch_workers(4, __file__, "fully_shard", "replicate", timeout_s=1800, env=dict(os.environ))
    assert checked == 8, report


@pytest.mark.parametrize("mode", ["fully_shard", "replicate"])
def test_each_parameter_is_split_along_the_data_parallel_axis_on_a_dim_tp_leaves_whole(mode):
    import torch
    from torch.distributed.tensor import Replicate, Shard

    from hir.frontend.fsdp_tp import layouts

    state = {
        "model.col.weight": torch.zeros(8, 4),
        "model.col.bias": torch.zeros(8),
        "model.row.weight": torch.zeros(4, 8),
        "model.norm.weight": torch.zeros(4),
        "model.odd.weight": torch.zeros(3, 4),
    }
    tp = {"model.col.weight": Shard(0), "model.col.bias": Shard(0), "model.row.weight": Shard(1)}
    found = layouts(mode, [n[len("model.") :] for n in state], state, tp, rows=2)
    shard = (lambda d: Shard(d)) if mode == "fully_shard" else (lambda d: Replicate())
    assert {n: v.held for n, v in found.items()} == {
        "col.weight": (shard(1), Shard(0)),
        "col.bias": (Replicate(), Shard(0)),  # TP splits the bias's only dim: whole along axis 0
        "row.weight": (shard(0), Shard(1)),
        "norm.weight": (shard(0), Replicate()),
        "odd.weight": (shard(1), Replicate()),
    }
    assert found["col.weight"].gathered == "Replicate(), Shard(0)"
    assert found["col.weight"].reduced == ("Shard(1), Shard(0)" if mode == "fully_shard" else "Replicate(), Shard(0)")


def test_a_step_on_a_2d_mesh_lowers_to_collectives_within_its_rows_and_columns():
    """The step of a two-layer MLP imported for the 2x2 mesh (not run: the 4-rank test runs
    it): the weights and their gradients are held as 2-D shards and every collective runs
    within a row or a column of the mesh."""
    import torch
    from torch.distributed.tensor import Shard

    import hir

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.ReLU(), torch.nn.Linear(8, 4, bias=False))
    step = hir.train_step(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        lambda m, x: m(x).square().sum(),
        (torch.randn(4, 4),),
        mesh=MESH,
        data_parallel="fully_shard",
        placements={"0.weight": Shard(0), "2.weight": Shard(1)},
    )
    program = next(iter(step.programs.values()))
    shardings = step._shardings[next(iter(step._shardings))]
    assert shardings["model.0.weight"].splits == (1, 0) and shardings["model.2.weight"].splits == (0, 1)
    found = collectives(str(program.lower()))
    assert set(found) == {
        ("allgather", COLUMNS),
        ("allreduce", COLUMNS),
        ("allreduce", ROWS),
        ("reduce_scatter", COLUMNS),
    }, found
    assert found[("reduce_scatter", COLUMNS)] == 2 and found[("allgather", COLUMNS)] == 3, (
        found
    )  # fc2 gathered again for the backward


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
