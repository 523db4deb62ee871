"""hir.train_step equals eager PyTorch training step for step: every step's loss, then the
parameters and the optimizer state (AdamW, Adam, SGD with momentum), on an MLP with
LayerNorm, a tiny Llama and a tiny GPT-2; with gradient clipping, accumulation over 4
micro-batches and an LR schedule; checkpoints passed between hir and eager torch both ways.
CPU, float32, random weights."""

import copy

import pytest
import torch

import hir
from training_util import ADAM_EPS, ADAM_LR, TOL, assert_same_training, eager_step, make, optimizer, twins

STEPS = 10


def train_both(model_kind: str, opt_kind: str, *, schedule: bool = False, **options) -> None:
    """STEPS steps by hir and by eager torch: each loss equal, then the state."""
    model, opt, ref, ref_opt, loss_fn, batches = twins(model_kind, opt_kind)
    data = batches(STEPS)
    step = hir.train_step(model, opt, loss_fn, data[0], **options)
    schedules = [torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5) for o in (opt, ref_opt)] if schedule else []
    for i, batch in enumerate(data):
        loss = step(*batch)
        expected = eager_step(ref, ref_opt, loss_fn, batch, options.get("accumulate", 1), options.get("max_grad_norm"))
        torch.testing.assert_close(loss, expected, **TOL, msg=lambda m, i=i: f"step {i + 1}: {m}")
        for s in schedules:
            s.step()
    assert_same_training(model, opt, ref, ref_opt)
    if schedule:
        assert opt.param_groups[0]["lr"] < 0.2 * opt.defaults["lr"]  # the schedule did change it


@pytest.mark.parametrize(
    "model_kind, opt_kind",
    [
        ("mlp", "adamw"),
        ("mlp", "sgd"),
        ("mlp", "adam"),
        ("mlp", "nesterov"),
        ("mlp", "adamw-fused"),
        ("gpt2", "adamw"),
        pytest.param("llama", "adamw", marks=pytest.mark.slow),
        pytest.param("llama", "sgd", marks=pytest.mark.slow),
        pytest.param("gpt2", "sgd", marks=pytest.mark.slow),
    ],
)
def test_steps_equal_eager(model_kind, opt_kind):
    train_both(model_kind, opt_kind)


@pytest.mark.parametrize(
    "model_kind, opt_kind",
    [
        ("mlp", "adamw"),
        ("mlp", "sgd"),
        ("llama", "adamw"),
        pytest.param("llama", "sgd", marks=pytest.mark.slow),
        pytest.param("gpt2", "adamw", marks=pytest.mark.slow),
    ],
)
def test_clipping_accumulation_and_schedule_equal_eager(model_kind, opt_kind):
    """max_grad_norm (small enough to clip), accumulate=4, StepLR halving lr every 3 steps."""
    train_both(model_kind, opt_kind, schedule=True, max_grad_norm=0.5, accumulate=4)


@pytest.mark.parametrize("model_kind", ["mlp", pytest.param("llama", marks=pytest.mark.slow)])
def test_checkpoints_between_hir_and_eager(model_kind):
    """After 5 steps a checkpoint (model and optimizer state_dict) goes from hir to eager
    torch, which trains 5 more, and from eager torch into the model and optimizer hir trains
    (load_state_dict: new optimizer state tensors, which the step must follow): both equal
    10 eager steps."""
    model, opt, ref, ref_opt, loss_fn, batches = twins(model_kind, "adamw")
    data = batches(STEPS)
    step = hir.train_step(model, opt, loss_fn, data[0])
    for batch in data[:5]:
        step(*batch)
        eager_step(ref, ref_opt, loss_fn, batch)
    from_hir = copy.deepcopy((model.state_dict(), opt.state_dict()))
    from_eager = copy.deepcopy((ref.state_dict(), ref_opt.state_dict()))
    resumed, _, _ = make(model_kind, seed=1)
    resumed_opt = optimizer("adamw", resumed)
    resumed.load_state_dict(from_hir[0])
    resumed_opt.load_state_dict(from_hir[1])
    model.load_state_dict(from_eager[0])
    opt.load_state_dict(from_eager[1])
    for i, batch in enumerate(data[5:]):
        expected = eager_step(ref, ref_opt, loss_fn, batch)
        torch.testing.assert_close(
            eager_step(resumed, resumed_opt, loss_fn, batch),
            expected,
            **TOL,
            msg=lambda m, i=i: f"eager from hir, step {i + 6}: {m}",
        )
        torch.testing.assert_close(
            step(*batch), expected, **TOL, msg=lambda m, i=i: f"hir from eager, step {i + 6}: {m}"
        )
    assert_same_training(resumed, resumed_opt, ref, ref_opt)
    assert_same_training(model, opt, ref, ref_opt)


def test_state_is_the_users_and_created_as_torch_creates_it():
    """Before the first step the optimizer has no state (as in torch); after it, its tensors
    are the ones the program writes (Adam's step count a float32 0-d CPU tensor), and the
    parameters are the model's own tensors, updated in place."""
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "adamw")
    (batch,) = batches(1)
    weight = model.fc1.weight
    step = hir.train_step(model, opt, loss_fn, batch)
    assert not opt.state
    before = weight.detach().clone()
    step(*batch)
    eager_step(ref, ref_opt, loss_fn, batch)
    assert model.fc1.weight is weight and not torch.equal(weight, before)
    state = opt.state[weight]
    assert state["step"].dtype == torch.float32 and state["step"].dim() == 0 and state["step"].item() == 1.0
    assert sorted(state) == sorted(ref_opt.state[ref.fc1.weight])
    assert_same_training(model, opt, ref, ref_opt)


def test_param_groups_and_a_change_of_the_updates_terms():
    """Two param groups with their own lr and weight decay; then weight decay turned on in
    the group without it: another program, still equal to eager."""
    model, _, ref, _, loss_fn, batches = twins("mlp", "adamw")

    def grouped(m):
        return torch.optim.AdamW(
            [
                {"params": m.fc1.parameters(), "weight_decay": 0.0, "lr": 2 * ADAM_LR},
                {"params": list(m.norm.parameters()) + list(m.fc2.parameters())},
            ],
            lr=ADAM_LR,
            eps=ADAM_EPS,
        )

    opt, ref_opt = grouped(model), grouped(ref)
    data = batches(4)
    step = hir.train_step(model, opt, loss_fn, data[0])
    for i, batch in enumerate(data):
        if i == 2:
            for o in (opt, ref_opt):
                o.param_groups[0]["weight_decay"] = 0.05
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL)
    assert len(step.programs) == 2
    assert_same_training(model, opt, ref, ref_opt)


def test_a_batch_of_another_shape_gets_its_program():
    """The ragged last batch: a program per batch signature, each equal to eager."""
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "sgd")
    data = batches(2) + batches(1, size=5)
    step = hir.train_step(model, opt, loss_fn, data[0])
    for batch in data + data[:1]:
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL)
    assert len(step.programs) == 2
    assert_same_training(model, opt, ref, ref_opt)


def test_bf16_autocast_in_loss_fn():
    """torch.autocast in the user's loss_fn is traced into the program: equal to eager
    autocast within bf16's precision."""
    model, opt, ref, ref_opt, _, batches = twins("mlp", "sgd")

    def loss_fn(model, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        return torch.nn.functional.cross_entropy(logits.float(), y)

    data = batches(3)
    step = hir.train_step(model, opt, loss_fn, data[0])
    program = next(iter(step.programs.values()))
    assert "bf16" in str(program.module)
    for batch in data:
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), rtol=2e-2, atol=2e-2)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=2e-2, atol=2e-2)
