"""Tensor- and sequence-parallel training: ``hir.train_step(..., mesh=, placements=)`` with the
placements ``hir.from_torch`` takes (state names, ``input0``, an HF ``tp_plan``) on Gloo
ranks, torch's own AdamW, 10 steps of a tiny random Llama: every step's loss and the final
parameters and optimizer state (whole in the user's tensors after each call) equal
single-process eager training (``sp_autocast``: sequence parallel under bf16 autocast, within
bf16's tolerance). The program holds each sharded parameter, its gradient and
its optimizer state as this rank's shard (the update touches only it), and an op of the
step with no placement rule for its operands' splits is refused naming the op.

The test launches this file once per rank; ``python test_tp_training.py CASE...`` is the
per-rank worker (cases: ``tp``, ``sp``, ``plan``, ``sp_autocast``).
"""

import os
import re
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases
from training_util import sequence_parallel_mlp, steps_equal_eager

STEPS = 10
PROJECTIONS = {"colwise": ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"), "rowwise": ("o_proj", "down_proj")}


def _llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=64,
        )
    )


def tp_placements(model, sequence_parallel: bool) -> dict:
    """Megatron's layout as DTensor placements: q/k/v, gate and up split on their output
    rows, o and down on their input columns; with ``sequence_parallel`` the tokens split
    between the blocks (the ids split on the sequence: the residual stream, the norms and
    the head's rows stay split, each block's input gathered and its output reduce-scattered)."""
    from torch.distributed.tensor import Shard

    out = {}
    for name, _ in model.named_parameters():
        owner = name.rsplit(".", 2)[-2]
        if owner in PROJECTIONS["colwise"]:
            out[name] = Shard(0)
        elif owner in PROJECTIONS["rowwise"]:
            out[name] = Shard(1)
    return out | ({"input0": Shard(1)} if sequence_parallel else {})


OVERLAP = "hir-insert-reshardings,hir-convert-to-communication,hir-p2p-pipeline{backend=cuda overlap=%s%s},hir-lower"
# hir-lower-overlap's forms (whole; pipelined) and hir-p2p-pipeline's option matrix, on the step's backward as on its
# forward
PIPELINES = {
    "plain": OVERLAP % ("off", ""),
    "overlap": OVERLAP % ("on", " chunks=auto"),
    "ring": OVERLAP % ("on", " algorithm=ring streams=2"),
    "chunks": OVERLAP % ("on", " chunks=2 copies=2"),
    "accumulate": OVERLAP % ("on", " accumulate=1 chunks=2"),
    "push": OVERLAP % ("on", " transfer=push"),
    "comm-stream": OVERLAP % ("on", " comm-stream=1"),
}


def run_overlap_case(rank: int, world: int) -> str:
    """The sequence-parallel MLP step lowered by each pipeline of :data:`PIPELINES`: 10 SGD
    steps equal eager training, and the pipelined forms shift slices instead of running the
    collectives whole."""
    import torch
    from torch.distributed.tensor import Shard

    import hir

    torch.manual_seed(1)
    batches = [torch.randn(1, 4 * world, 8) for _ in range(STEPS)]
    placements = {f"{i}.{n}.weight": Shard(0 if n == "up" else 1) for i in range(2) for n in ("up", "down")} | {
        "input0": Shard(1)
    }

    def loss_fn(m, x):
        return m(x).square().sum()

    for name, pipeline in PIPELINES.items():
        model, reference = sequence_parallel_mlp(), sequence_parallel_mlp()
        optimizer, eager = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for m in (model, reference))
        step = hir.train_step(model, optimizer, loss_fn, batches[:1], mesh=list(range(world)), placements=placements)
        lowered = str(next(iter(step.programs.values())).lower(pipeline=pipeline))
        if world > 1 and (name == "plain") == ('"hir.shift"' in lowered):
            return (
                f"overlap [{name}]: {'shifts in the whole form' if name == 'plain' else 'nothing pipelined'}\n{lowered}"
            )
        problem = steps_equal_eager(
            step, loss_fn, [(x,) for x in batches], model, optimizer, reference, eager, f"overlap [{name}]"
        )
        if problem:
            return problem
    return ""


def run_case(case: str, rank: int, world: int) -> str:
    if case == "overlap":
        return run_overlap_case(rank, world)
    import torch
    import torch.distributed as dist

    import hir

    model, reference = _llama(), _llama()
    optimizer, eager = (torch.optim.AdamW(m.parameters(), lr=1e-3, eps=1e-6) for m in (model, reference))
    torch.manual_seed(1)
    rows = (
        1 if case.startswith("sp") else 2
    )  # sequence parallel over one sequence: [B, S] -> [B * S] rows of split S do not stay blocks
    batches = [torch.randint(0, 64, (rows, 8)) for _ in range(STEPS)]
    placements = (
        model.tp_plan if case == "plan" else tp_placements(model, case.startswith("sp"))
    )  # HF's runtime plan: embedding_rowwise, colwise_gather_output head

    def loss_fn(m, ids, labels):
        # sp_autocast: bf16 products added onto the float32 residual stream split on the tokens (a mixed-dtype add)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=case == "sp_autocast"):
            return m(ids, labels=labels).loss

    step = hir.train_step(
        model, optimizer, loss_fn, (batches[0], batches[0]), mesh=list(range(world)), placements=placements
    )
    tol = {"rtol": 2e-2, "atol": 2e-2} if case == "sp_autocast" else None  # bf16 products summed in another order
    problem = steps_equal_eager(
        step,
        loss_fn,
        [(ids, ids) for ids in batches],
        model,
        optimizer,
        reference,
        eager,
        case,
        moment="exp_avg_sq",
        tol=tol,
    )
    if problem:
        return problem
    # the program holds a split projection and its moments as this rank's rows / columns
    ((compiled, _),) = step._compiled.values()
    index = [n for n, _ in model.named_parameters()].index("model.layers.0.self_attn.o_proj.weight")
    for entry in ("model.model.layers.0.self_attn.o_proj.weight", f"optimizer.state.{index}.exp_avg"):
        if tuple(compiled.state[entry].shape) != (32, 32 // world):
            return f"{case}: {entry} held as {tuple(compiled.state[entry].shape)}, not this rank's columns"
    lowered = str(next(iter(step.programs.values())).module)
    gathers = len(re.findall(r'"hir\.allgather"', lowered))
    if (
        case == "tp" and gathers
    ):  # activations replicated or split on features, gradients where their weights are: nothing to gather
        return f"{case}: {gathers} all-gathers in a tensor-parallel step"
    dist.barrier()
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("world, cases", [(2, ["tp", "sp", "plan", "sp_autocast"]), (4, ["tp", "sp"])])
def test_tensor_and_sequence_parallel_steps_equal_eager(world, cases):
    checked, report = launch_workers(world, __file__, *cases, timeout_s=1800, env=dict(os.environ))
    assert checked == len(cases) * world, report


@pytest.mark.slow
def test_backward_collectives_pipelined_train_as_the_plain_lowering():
    checked, report = launch_workers(2, __file__, "overlap", timeout_s=1200, env=dict(os.environ))
    assert checked == 2, report


def test_a_placement_without_a_rule_is_refused_naming_the_op():
    """A column-split projection's output split on its last dim, then a cumulative sum along
    it: no strategy places it, and a training import refuses it rather than replicating."""
    import torch
    from torch.distributed.tensor import Shard

    import hir

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(4, 8)

        def forward(self, x):
            return self.proj(x).cumsum(-1)

    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 4)
    with pytest.raises(hir.HirError, match=r"'torch\.aten\.cumsum' has no placement"):
        hir.train_step(
            model,
            optimizer,
            lambda m, x: m(x).square().mean(),
            (x,),
            mesh=[0, 1],
            placements={"proj.weight": Shard(0), "proj.bias": Shard(0)},
        )
    with pytest.raises(hir.HirError, match="'proj.scale' is neither a state entry of the model nor an input"):
        hir.train_step(
            model, optimizer, lambda m, x: m(x).square().mean(), (x,), mesh=[0, 1], placements={"proj.scale": Shard(0)}
        )


def test_optimizer_state_is_placed_as_its_parameter():
    import torch
    from torch.distributed.tensor import Replicate, Shard

    from hir.frontend.sharded_training import step_placements

    state = {
        "model.w": torch.zeros(4, 2),
        "model.b": torch.zeros(4),
        "optimizer.state.0.exp_avg": torch.zeros(4, 2),
        "optimizer.state.0.step": torch.zeros(()),
        "optimizer.state.1.exp_avg": torch.zeros(4),
    }
    found = step_placements(torch.nn.Module(), ["w", "b"], {"w": Shard(0), "b": Replicate(), "input0": Shard(1)}, state)
    assert found == {
        "model.w": Shard(0),
        "model.b": Replicate(),
        "input0": Shard(1),
        "optimizer.state.0.exp_avg": Shard(0),
        "optimizer.state.1.exp_avg": Replicate(),
    }


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
