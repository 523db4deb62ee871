"""A module parallelized with ``torch.distributed.tensor.parallel`` given to ``hir.train_step``:
its mesh and placements are read from its DTensor parameters. On 2 Gloo ranks, a tiny random
Llama with Megatron's plan (``ColwiseParallel`` q/k/v, gate and up; ``RowwiseParallel`` o and
down; lm_head colwise, gathered), torch's AdamW, 10 steps: every loss, each parameter's
local shard and its Adam moments equal the same parallelized module trained eagerly (its
DTensor autograd and optimizer). The program updates the DTensors' local shards; a style that
fixes activation layouts no parameter carries (``SequenceParallel``) is refused, naming it.

``python test_parallelized_training.py CASE...`` is the per-rank worker (cases: ``tp``,
``refused``).
"""

import os
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases
from test_tp_training import STEPS, _llama
from training_util import TOL


def _plan(sequence_parallel: bool = False) -> dict:
    """Megatron's plan; with ``sequence_parallel`` the norms on the tokens' shards
    (``SequenceParallel``), each projection's input gathered from them and each block's
    output reduce-scattered onto them."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel

    tokens = {"input_layouts": Shard(1)} if sequence_parallel else {}
    colwise, rowwise = (
        (lambda: ColwiseParallel(**tokens)),
        (lambda: RowwiseParallel(**({"output_layouts": Shard(1)} if sequence_parallel else {}))),
    )
    plan = {"lm_head": ColwiseParallel(output_layouts=Replicate(), **tokens)}
    for i in range(2):
        plan |= {f"model.layers.{i}.self_attn.{p}": colwise() for p in ("q_proj", "k_proj", "v_proj")}
        plan |= {f"model.layers.{i}.mlp.{p}": colwise() for p in ("gate_proj", "up_proj")}
        plan |= {f"model.layers.{i}.self_attn.o_proj": rowwise(), f"model.layers.{i}.mlp.down_proj": rowwise()}
        if sequence_parallel:
            plan |= {
                f"model.layers.{i}.{norm}": SequenceParallel()
                for norm in ("input_layernorm", "post_attention_layernorm")
            }
    return plan | ({"model.norm": SequenceParallel()} if sequence_parallel else {})


def _local(tensor, like):
    """``tensor``'s shard as ``like`` (a DTensor) holds it: its local part, or its block of a
    whole tensor."""
    if hasattr(tensor, "to_local"):
        return tensor.to_local()
    if not hasattr(like, "to_local"):
        return tensor
    import torch.distributed as dist

    (placement,) = like.placements
    return tensor.chunk(dist.get_world_size(), placement.dim)[dist.get_rank()] if placement.is_shard() else tensor


def run_case(case: str, rank: int, world: int) -> str:
    import torch
    from torch.distributed.tensor import DeviceMesh, Replicate, Shard
    from torch.distributed.tensor.parallel import PrepareModuleInput, parallelize_module

    import hir

    mesh = DeviceMesh("cpu", list(range(world)))

    def loss_fn(m, ids, labels):
        return m(ids, labels=labels).loss

    torch.manual_seed(1)
    batches = [torch.randint(0, 64, (1 if case == "sp" else 2, 8)) for _ in range(STEPS)]
    if case == "refused":
        plan = _plan() | {
            "model.layers.0": PrepareModuleInput(input_layouts=Shard(1), desired_input_layouts=Replicate())
        }
        model = parallelize_module(_llama(), mesh, plan)
        try:
            hir.train_step(model, torch.optim.AdamW(model.parameters()), loss_fn, (batches[0], batches[0]))
        except hir.HirError as err:
            if "'model.layers.0' is parallelized with PrepareModuleInput" not in str(err):
                return f"refused: {err}"
            return ""
        return "refused: a PrepareModuleInput module was not refused"
    # sequence parallel: the reference is the model unparallelized (HF's Llama sizes its
    # causal mask and positions by its local tokens, so it does not run split eagerly)
    model = parallelize_module(_llama(), mesh, _plan(case == "sp"))
    reference = _llama() if case == "sp" else parallelize_module(_llama(), mesh, _plan())
    optimizer, eager = (torch.optim.AdamW(m.parameters(), lr=1e-3, eps=1e-6) for m in (model, reference))
    step = hir.train_step(model, optimizer, loss_fn, (batches[0], batches[0]))
    for i, ids in enumerate(batches):
        loss = step(ids, ids)
        eager.zero_grad()
        want = loss_fn(reference, ids, ids)
        want.backward()
        eager.step()
        try:
            torch.testing.assert_close(loss, want.detach(), **TOL)
        except AssertionError as err:
            return f"{case}: step {i}: {err}"
    for (name, got), want in zip(model.named_parameters(), reference.parameters()):
        try:
            torch.testing.assert_close(_local(got, got), _local(want, got), **TOL)
            torch.testing.assert_close(
                _local(optimizer.state[got]["exp_avg_sq"], got), _local(eager.state[want]["exp_avg_sq"], got), **TOL
            )
        except AssertionError as err:
            return f"{case}: final {name}: {err}"
    ((compiled, _),) = step._compiled.values()
    held = tuple(compiled.state["model.model.layers.0.self_attn.o_proj.weight"].shape)
    if held != (32, 32 // world):
        return f"{case}: o_proj's weight held as {held}, not this rank's columns"
    gathers = str(next(iter(step.programs.values())).module).count('"hir.allgather"')
    if (gathers > 1) != (
        case == "sp"
    ) or not gathers:  # TP gathers lm_head's output (colwise_gather_output); SP each block's input too
        return f"{case}: {gathers} all-gathers in the step"
    return ""


@pytest.mark.parametrize(
    "kind, module, inputs, outputs, local, style",
    [
        ("ColwiseParallel", "linear", ("Replicate",), ("Shard",), True, "colwise"),
        ("ColwiseParallel", "linear", ("Shard",), ("Replicate",), True, "colwise_gather_output"),
        ("RowwiseParallel", "linear", ("Shard",), ("Shard",), True, "rowwise"),
        ("RowwiseParallel", "embedding", ("Replicate",), ("Replicate",), True, "embedding_rowwise"),
        ("ColwiseParallel", "embedding", ("Replicate",), ("Replicate",), True, "embedding_colwise"),
        ("ColwiseParallel", "embedding", ("Replicate",), ("Shard",), True, None),
        ("ColwiseParallel", "linear", ("Replicate",), ("Shard",), False, None),
        ("SequenceParallel", "norm", ("Shard",), (), False, "sequence_parallel"),
        ("PrepareModuleInput", "linear", (), (), None, None),
    ],
)
def test_each_parallel_style_is_read_as_the_hf_style_doing_the_same(kind, module, inputs, outputs, local, style):
    """The HF plan style hir trains a ``parallelize_module`` style as (None: refused)."""
    import torch
    from torch.distributed.tensor import Replicate, Shard

    from hir.frontend.dtensors import StyleHooks
    from hir.frontend.sharded_training import _plan_style

    def layouts(names):
        return tuple(Replicate() if n == "Replicate" else Shard(-1 if kind != "SequenceParallel" else 1) for n in names)

    target = {"linear": torch.nn.Linear(4, 4), "embedding": torch.nn.Embedding(8, 4), "norm": torch.nn.LayerNorm(4)}[
        module
    ]
    assert _plan_style(StyleHooks(kind, layouts(inputs), layouts(outputs), local), target) == style


@pytest.mark.slow
def test_a_parallelized_module_trains_as_it_does_eagerly():
    checked, report = launch_workers(2, __file__, "tp", "sp", "refused", timeout_s=1200, env=dict(os.environ))
    assert checked == 6, report


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
