"""Adam's update as one hir.adam_update per param group (hir.frontend.optimizer_update): the
program holds the op instead of the traced arithmetic, runs the implementation eager's
optimizer picks (fused, foreach, single-tensor) and equals eager step by step; where the op
applies (one device, no CUDA graph) and where the traced update stays. CPU, float32."""

import pytest
import torch

import hir
from hir.frontend import optimizer_update
from training_util import ADAM_EPS, ADAM_LR, TOL, assert_same_training, eager_step, twins

STEPS = 10


def _update_ops(step) -> list:
    main = next(
        op for op in next(iter(step.programs.values())).module.body.operations if op.operation.name == "func.func"
    )
    return [op for op in main.regions[0].blocks[0].operations if op.operation.name == "hir.adam_update"]


@pytest.mark.parametrize(
    "model_kind, opt_kind, kernel",
    [
        ("mlp", "adamw", "single"),
        ("mlp", "adamw-fused", "fused"),
        ("mlp", "adamw-foreach", "foreach"),
        ("mlp", "adam", "single"),
        ("mlp", "adam-fused", "fused"),
        pytest.param("llama", "adamw-fused", "fused", marks=pytest.mark.slow),
    ],
)
def test_one_op_with_eagers_kernel_equal_eager(model_kind, opt_kind, kernel):
    """STEPS steps under a StepLR schedule: every loss, then the parameters and the whole
    optimizer state equal eager's; the update is one op with the kernel eager runs, and none
    of the single-tensor arithmetic (lerp, addcmul, addcdiv) is left in the program."""
    model, opt, ref, ref_opt, loss_fn, batches = twins(model_kind, opt_kind)
    data = batches(STEPS)
    step = hir.train_step(model, opt, loss_fn, data[0])
    (op,) = _update_ops(step)
    assert op.attributes["kernel"].value == kernel
    assert op.attributes["kind"].value == ("adamw" if opt_kind.startswith("adamw") else "adam")
    text = str(next(iter(step.programs.values())).module)
    assert not any(f"torch.aten.{name}" in text for name in ("lerp", "addcmul", "addcdiv"))
    schedules = [torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5) for o in (opt, ref_opt)]
    for i, batch in enumerate(data):
        torch.testing.assert_close(
            step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL, msg=lambda m, i=i: f"step {i + 1}: {m}"
        )
        for s in schedules:
            s.step()
    assert_same_training(model, opt, ref, ref_opt)


def test_one_op_per_param_group():
    """Two param groups (their own lr and weight decay): two ops, each reading its group's
    hyper-parameters."""
    model, _, ref, _, loss_fn, batches = twins("mlp", "adamw")

    def grouped(m):
        return torch.optim.AdamW(
            [
                {"params": m.fc1.parameters(), "weight_decay": 0.0, "lr": 2 * ADAM_LR},
                {"params": list(m.norm.parameters()) + list(m.fc2.parameters())},
            ],
            lr=ADAM_LR,
            eps=ADAM_EPS,
            fused=True,
        )

    opt, ref_opt = grouped(model), grouped(ref)
    data = batches(4)
    step = hir.train_step(model, opt, loss_fn, data[0])
    assert [len(op.operands) for op in _update_ops(step)] == [5 * 2 + 5, 5 * 4 + 5]
    for batch in data:
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL)
    assert_same_training(model, opt, ref, ref_opt)


def test_where_the_op_applies():
    """Adam and AdamW on one device where no CUDA graph captures the step (the op reads its
    hyper-parameters on the host); SGD, a mesh and a capturable CUDA step keep the traced
    update."""
    params = [torch.nn.Parameter(torch.zeros(2))]
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    adamw = torch.optim.AdamW(params)
    assert optimizer_update.applies(adamw, None, cpu, {})
    assert optimizer_update.applies(adamw, None, cuda, {"graph": False})
    assert not optimizer_update.applies(adamw, None, cuda, {})
    assert not optimizer_update.applies(adamw, [0, 1], cpu, {})
    assert not optimizer_update.applies(torch.optim.SGD(params, lr=0.1), None, cpu, {})
