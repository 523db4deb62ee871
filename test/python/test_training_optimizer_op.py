"""Adam's update as one hir.adam_update per param group (hir.frontend.optimizer_update): the
program holds the op instead of the traced arithmetic, runs the implementation eager's
optimizer picks (fused, foreach, single-tensor) and equals eager step by step, op by op and
in the default compile (``compile_kernels=True``: inductor's CPU backend compiles the step's
region, the op outside it); lr is an input (an LR scheduler is honoured by the same program),
the other hyper-parameters are the op's attributes (a changed one imports another program);
where the op applies (one device) and where the traced update stays. CPU, float32; on CUDA,
the default compile's captured graph (``-m gpu``)."""

import copy

import pytest
import torch

import hir
from hir.frontend import optimizer_update
from training_util import ADAM_EPS, ADAM_LR, TOL, assert_same_training, eager_step, make, optimizer, twins

DEFAULT = {"compile_kernels": True}  # the default compile on the CPU ("auto" compiles on CUDA only)

STEPS = 10


def _program_ops(program) -> list:
    main = next(op for op in program.module.body.operations if op.operation.name == "func.func")
    return [op for op in main.regions[0].blocks[0].operations if op.operation.name == "hir.adam_update"]


def _update_ops(step) -> list:
    return _program_ops(next(iter(step.programs.values())))


@pytest.mark.parametrize(
    "model_kind, opt_kind, kernel, options",
    [
        ("mlp", "adamw", "single", {}),
        ("mlp", "adamw-fused", "fused", {}),
        ("mlp", "adamw-foreach", "foreach", {}),
        ("mlp", "adam", "single", {}),
        ("mlp", "adam-fused", "fused", {}),
        ("mlp", "adamw-fused", "fused", DEFAULT),
        ("mlp", "adamw-foreach", "foreach", DEFAULT),
        ("mlp", "adam", "single", DEFAULT),
        pytest.param("llama", "adamw-fused", "fused", {}, marks=pytest.mark.slow),
        pytest.param("llama", "adamw-fused", "fused", DEFAULT, marks=pytest.mark.slow),
    ],
    ids=lambda v: ("default" if v else "eager") if isinstance(v, dict) else None,
)
def test_one_op_with_eagers_kernel_equal_eager(model_kind, opt_kind, kernel, options):
    """STEPS steps under a StepLR schedule: every loss, then the parameters and the whole
    optimizer state equal eager's; the update is one op with the kernel eager runs, and none
    of the single-tensor arithmetic (lerp, addcmul, addcdiv) is left in the program. In the
    default compile the forward and backward are one compiled region and the op runs after it."""
    model, opt, ref, ref_opt, loss_fn, batches = twins(model_kind, opt_kind)
    data = batches(STEPS)
    step = hir.train_step(model, opt, loss_fn, data[0], **options)
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
    assert len(step.programs) == 1  # lr changed three times: the same program
    if options:
        ((compiled, _),) = step._compiled.values()
        assert compiled.kernel_compile.regions == 1 and compiled.kernel_compile.compiles == 1


def test_default_compile_resumes_from_checkpoints():
    """The default compile (compiled region, then the op): after 5 steps the optimizer's
    state_dict goes to eager torch and eager's comes back (load_state_dict: new state tensors,
    which the step binds); 5 more steps equal eager's 10 on both sides."""
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "adamw-fused")
    data = batches(STEPS)
    step = hir.train_step(model, opt, loss_fn, data[0], **DEFAULT)
    for batch in data[:5]:
        step(*batch)
        eager_step(ref, ref_opt, loss_fn, batch)
    from_hir, from_eager = copy.deepcopy(opt.state_dict()), copy.deepcopy(ref_opt.state_dict())
    resumed = copy.deepcopy(ref)
    resumed_opt = torch.optim.AdamW(resumed.parameters(), fused=True)
    resumed_opt.load_state_dict(from_hir)
    opt.load_state_dict(from_eager)
    for i, batch in enumerate(data[5:]):
        expected = eager_step(ref, ref_opt, loss_fn, batch)
        torch.testing.assert_close(eager_step(resumed, resumed_opt, loss_fn, batch), expected, **TOL)
        torch.testing.assert_close(step(*batch), expected, **TOL, msg=lambda m, i=i: f"step {i + 6}: {m}")
    assert_same_training(model, opt, ref, ref_opt)
    assert_same_training(resumed, resumed_opt, ref, ref_opt)


def test_changed_betas_import_another_program():
    """The betas, eps and weight decay are the op's attributes: changing one between calls
    (on both optimizers) imports a program for the new values, which equals eager's steps;
    going back reuses the first program."""
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "adamw-fused")
    data = batches(6)
    step = hir.train_step(model, opt, loss_fn, data[0])
    for i, batch in enumerate(data):
        if i in (2, 4):
            for o in (opt, ref_opt):
                o.param_groups[0]["betas"] = (0.8, 0.99) if i == 2 else (0.9, 0.999)
                o.param_groups[0]["weight_decay"] = 0.05 if i == 2 else 0.1
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL)
    assert len(step.programs) == 2
    ops = [op for program in step.programs.values() for op in _program_ops(program)]
    assert sorted(op.attributes["beta1"].value for op in ops) == [0.8, 0.9]
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
    assert [len(op.operands) for op in _update_ops(step)] == [5 * 2 + 1, 5 * 4 + 1]
    for batch in data:
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **TOL)
    assert_same_training(model, opt, ref, ref_opt)


def test_where_the_op_applies():
    """Adam and AdamW on one device (CUDA graphs or not: the op reads nothing on the host);
    SGD and a step on a mesh keep the traced update."""
    params = [torch.nn.Parameter(torch.zeros(2))]
    adamw = torch.optim.AdamW(params)
    assert optimizer_update.applies(adamw, None)
    assert optimizer_update.applies(torch.optim.Adam(params), None)
    assert not optimizer_update.applies(adamw, [0, 1])
    assert not optimizer_update.applies(torch.optim.SGD(params, lr=0.1), None)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "opt_kind, overrides, kernel",
    [("adamw-fused", {}, "fused"), ("adam", {}, "foreach"), ("adamw", {"foreach": False}, "single")],
)
def test_default_compile_captures_the_op_on_cuda(opt_kind, overrides, kernel):
    """On CUDA with the defaults (compiled region, CUDA graphs): the op is captured with the
    step (one capture, then replays: it reads nothing on the host), each replay reads the lr
    StepLR set, and STEPS steps equal eager's (float32; the region is inductor's kernels, the
    fused kernel reads lr as float32)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model, loss_fn, batches = make("mlp")
    model.cuda()
    ref = copy.deepcopy(model)
    opt, ref_opt = optimizer(opt_kind, model, **overrides), optimizer(opt_kind, ref, **overrides)
    data = [tuple(x.cuda() for x in batch) for batch in batches(STEPS)]
    step = hir.train_step(model, opt, loss_fn, data[0])
    (op,) = _update_ops(step)
    assert op.attributes["kernel"].value == kernel
    schedules = [torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5) for o in (opt, ref_opt)]
    close = {"rtol": 1e-4, "atol": 1e-5}
    for i, batch in enumerate(data):
        torch.testing.assert_close(
            step(*batch), eager_step(ref, ref_opt, loss_fn, batch), **close, msg=lambda m, i=i: f"step {i + 1}: {m}"
        )
        for s in schedules:
            s.step()
    ((compiled, _),) = step._compiled.values()
    state = compiled.graph_state  # call 1 eager, call 2 captures and replays, then replays
    assert state.captures == 1 and state.replays == STEPS - 1, state
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), **close)
