"""Tensor-parallel training of a tiny random Mixtral (MoE): ``hir.train_step(..., mesh=,
placements=)`` with HF's ``tp_plan`` (attention colwise / rowwise, the experts'
``gate_up_proj`` packed colwise and ``down_proj`` rowwise, the vocabulary-split embedding)
on Gloo ranks, 10 AdamW steps equal to single-process eager training (every loss, the final
parameters and second moments), the experts' weights and moments held as this rank's shards.

The router's top-k choice is a discontinuous function of its scores: where two experts'
scores nearly tie, the last bits in which hir's sums differ from eager's could pick another
expert. The seed is one whose router scores (logits) keep every token's k-th and (k+1)-th
apart by more than :data:`MARGIN` at every step of eager training, which a test checks.

The test launches this file once per rank; ``python test_tp_moe_training.py plan`` is the
per-rank worker.
"""

import os
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases
from training_util import ADAM_EPS, ADAM_LR, steps_equal_eager

STEPS = 10
SEED = 3
MARGIN = 1e-3
INIT = 0.3  # weights' init std: router logits spread wide enough for a seed without near-ties
EXPERTS = {
    "model.model.layers.0.mlp.experts.gate_up_proj": 1,
    "model.model.layers.0.mlp.experts.down_proj": 2,
}  # split dim


def _mixtral():
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(SEED)
    return MixtralForCausalLM(
        MixtralConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=64,
            num_local_experts=4,
            num_experts_per_tok=2,
            initializer_range=INIT,
        )
    )


def _batches() -> list:
    import torch

    g = torch.Generator().manual_seed(SEED + 1)
    return [(ids, ids) for ids in (torch.randint(0, 64, (2, 8), generator=g) for _ in range(STEPS))]


def _adamw(model):
    import torch

    return torch.optim.AdamW(model.parameters(), lr=ADAM_LR, eps=ADAM_EPS)  # see training_util


def loss_fn(m, ids, labels):
    return m(ids, labels=labels).loss


def run_case(case: str, rank: int, world: int) -> str:
    import hir

    model, reference = _mixtral(), _mixtral()
    optimizer, eager = _adamw(model), _adamw(reference)
    batches = _batches()
    step = hir.train_step(model, optimizer, loss_fn, batches[0], mesh=list(range(world)), placements=model.tp_plan)
    problem = steps_equal_eager(step, loss_fn, batches, model, optimizer, reference, eager, case, moment="exp_avg_sq")
    if problem:
        return problem
    ((compiled, _),) = step._compiled.values()
    for name, dim in EXPERTS.items():
        whole = dict(model.named_parameters())[name.removeprefix("model.")].shape
        if compiled.state[name].shape[dim] * world != whole[dim]:
            return f"{case}: {name} held as {tuple(compiled.state[name].shape)}, not this rank's part of {tuple(whole)}"
    return ""


def test_router_choices_are_apart_at_every_step():
    """Eager training of the test's model on its batches: at every step, every token's k-th
    router score exceeds its (k+1)-th by more than MARGIN in every layer."""
    from training_util import eager_step

    model = _mixtral()
    optimizer = _adamw(model)
    margins = []

    def record(module, args, output):
        scores = (
            output[0].detach().sort(dim=-1, descending=True).values
        )  # the logits; top-k picks by their softmax, the same order
        margins.append((scores[:, module.top_k - 1] - scores[:, module.top_k]).min().item())

    for layer in model.model.layers:
        layer.mlp.gate.register_forward_hook(record)
    for batch in _batches():
        eager_step(model, optimizer, loss_fn, batch)
    assert len(margins) == STEPS * len(model.model.layers)
    assert min(margins) > MARGIN, f"router scores within {min(margins):.2e} of a tie: choose another SEED"


def test_mixtral_tensor_parallel_steps_equal_eager_on_2_ranks():
    checked, report = launch_workers(2, __file__, "plan", timeout_s=1800, env=dict(os.environ))
    assert checked == 2, report


@pytest.mark.slow
def test_mixtral_tensor_parallel_steps_equal_eager_on_4_ranks():
    checked, report = launch_workers(4, __file__, "plan", timeout_s=1800, env=dict(os.environ))
    assert checked == 4, report


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
