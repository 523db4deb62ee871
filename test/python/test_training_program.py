"""hir.train_step's program as a program: hir-opt prints it, the lowering passes transform it
(it runs equal to eager before and after; the buffers of activations are deallocated once
the backward has read them), it saves as IR + safetensors and hir-run runs one step of it
(--save-state writes the updated weights and optimizer state); and what train_step refuses."""

import numpy as np
import pytest
import torch
from torch_mlir import ir

import hir
from hir.tools import opt as opt_cli
from hir.tools import run_cli
from training_util import TOL, assert_same_training, eager_step, make, optimizer, twins


def test_lowered_and_unlowered_step_equal_eager():
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "adamw")
    twin, _, _ = make("mlp")
    twin_opt = optimizer("adamw", twin)
    data = batches(3)
    lowered = hir.train_step(model, opt, loss_fn, data[0])
    unlowered = hir.train_step(twin, twin_opt, loss_fn, data[0], lower=False)
    for batch in data:
        expected = eager_step(ref, ref_opt, loss_fn, batch)
        torch.testing.assert_close(lowered(*batch), expected, **TOL)
        torch.testing.assert_close(unlowered(*batch), expected, **TOL)
    assert_same_training(model, opt, ref, ref_opt)
    assert_same_training(twin, twin_opt, ref, ref_opt)
    before = str(next(iter(unlowered.programs.values())).module)
    after = next(iter(lowered.programs.values())).module
    assert "memref.dealloc" not in before
    live = live_bytes(after)
    # every buffer @main allocates and does not return is freed in @main, and at no point
    # are most of them live together: the forward's activations go once the backward has
    # read them, before the optimizer's buffers are made
    assert live["end"] == live["returned"], live
    assert live["peak"] < 0.6 * live["total"], live


def live_bytes(module: ir.Module) -> dict:
    """Bytes of @main's buffers: all it allocates, the most live at once, those still live
    when it returns and those it returns."""
    main = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
    )
    sizes, live, peak, total, returned = {}, 0, 0, 0, 0
    for op in main.regions[0].blocks[0].operations:
        name = op.operation.name
        if name == "memref.alloc":
            t = ir.MemRefType(op.results[0].type)
            size = (
                int(np.prod(t.shape)) * max(1, t.element_type.width // 8)
                if hasattr(t.element_type, "width")
                else int(np.prod(t.shape)) * 4
            )
            sizes[op.results[0].get_name()] = size
            live, total = live + size, total + size
            peak = max(peak, live)
        elif name == "memref.dealloc":
            live -= sizes.pop(op.operands[0].get_name(), 0)
        elif name == "func.return":
            returned = sum(sizes.get(v.get_name(), 0) for v in op.operands)
    return {"total": total, "peak": peak, "end": live, "returned": returned}


@pytest.mark.parametrize("opt_kind, update", [("sgd", "func.func @main"), ("adamw", '"hir.adam_update"')])
def test_saved_step_runs_one_step_in_hir_run(tmp_path, monkeypatch, capsys, opt_kind, update):
    """step.save writes the program and its state (weights, SGD momentum buffers or Adam's
    moments and step counts, the hyper-parameters); hir-opt prints the program (AdamW's
    update one hir.adam_update); hir-run runs the next step on the batch, prints the loss
    eager torch computes and writes the state eager torch has after it."""
    from safetensors.torch import load_file

    monkeypatch.chdir(tmp_path)
    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", opt_kind)
    data = batches(3)
    step = hir.train_step(model, opt, loss_fn, data[0])
    for batch in data[:2]:
        step(*batch)
        eager_step(ref, ref_opt, loss_fn, batch)
    assert step.save("step.mlir") == "step.safetensors"
    assert opt_cli.main(["step.mlir"]) == 0
    assert update in capsys.readouterr().out
    np.save("x.npy", data[2][0].numpy())
    np.save("y.npy", data[2][1].numpy())
    assert run_cli.main(["step.mlir", "x.npy", "y.npy", "--print", "--save-state", "next.safetensors"]) == 0
    printed = capsys.readouterr().out.splitlines()
    loss = eager_step(ref, ref_opt, loss_fn, data[2])
    assert printed[0] == "output 0: shape [] f32"
    assert float(printed[1]) == pytest.approx(loss.item(), rel=1e-5)
    state = load_file("next.safetensors")
    for name, p in ref.named_parameters():
        torch.testing.assert_close(state[f"model.{name}"], p.detach(), **TOL)
    for index, entry in ref_opt.state_dict()["state"].items():
        for key, value in entry.items():
            torch.testing.assert_close(
                state[f"optimizer.state.{index}.{key}"], value.to(state[f"optimizer.state.{index}.{key}"].dtype), **TOL
            )
    assert state["optimizer.param_groups.0.lr"].item() == ref_opt.param_groups[0]["lr"]
    assert run_cli.main(["step.mlir", "x.npy", "y.npy", "--nproc", "2", "--save-state", "s.safetensors"]) == 1
    assert "--save-state applies to single-process runs only" in capsys.readouterr().err
    # a program that writes no state has none to save
    hir.from_torch(ref, (data[0][0],)).save("forward.mlir")
    assert run_cli.main(["forward.mlir", "x.npy", "--save-state", "s.safetensors"]) == 1
    assert "--save-state: @main writes none of its weights" in capsys.readouterr().err


class _TwoLayers(torch.nn.Module):
    """``b`` takes no part in the output."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.a(x)


SGD = lambda p: torch.optim.SGD(p, lr=0.1)  # noqa: E731


@pytest.mark.parametrize(
    "make_optimizer, options, message",
    [
        (
            lambda p: torch.optim.RMSprop(p),
            {},
            "optimizer torch.optim.rmsprop.RMSprop is not supported "
            "(supported: torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW)",
        ),
        (lambda p: torch.optim.AdamW(p, amsgrad=True), {}, "AdamW(amsgrad=True) (param group 0) is not supported"),
        (lambda p: torch.optim.Adam(p, maximize=True), {}, "Adam(maximize=True) (param group 0) is not supported"),
        (lambda p: torch.optim.Adam(p, capturable=True), {}, "Adam(capturable=True) (param group 0) is not supported"),
        (
            lambda p: torch.optim.SGD(p, lr=0.1, differentiable=True),
            {},
            "SGD(differentiable=True) (param group 0) is not supported",
        ),
        (
            SGD,
            {"clip": 1.0},
            "unknown option(s) clip (options: max_grad_norm, accumulate, data_parallel, schedule, recompute, "
            "reshard_after_forward, device",
        ),
        (SGD, {"accumulate": 0}, "accumulate must be a positive int, got 0"),
        (SGD, {"max_grad_norm": -1.0}, "max_grad_norm must be a positive number, got -1.0"),
        (SGD, {"mesh": [0, 1]}, "training on several devices takes mesh= with data_parallel="),
        (SGD, {"data_parallel": "replicate"}, "training on several devices takes mesh= with data_parallel="),
        (SGD, {"placements": {}}, "or with placements= (tensor / sequence parallel)"),
        (
            SGD,
            {"mesh": [0, 1], "placements": {}, "data_parallel": "replicate"},
            "data_parallel with placements takes a 2-D mesh of every rank in order",
        ),
        (
            SGD,
            {"mesh": [[0, 1], [2, 3]], "placements": {"a": "colwise"}, "data_parallel": "fully_shard"},
            "the HF plan entry 'a' fixes layouts on a 1-D mesh",
        ),
        (
            SGD,
            {"mesh": [0, 1], "data_parallel": "replicate"},
            "mesh must list every rank of the process group in order ([0])",
        ),
        (SGD, {"mesh": [0], "data_parallel": "zero3"}, "data_parallel must be one of 'replicate', 'fully_shard'"),
        (
            lambda p: torch.optim.SGD(list(p)[:2], lr=0.1),
            {"with_b": True},
            "parameter(s) b.weight, b.bias of the model are not in the optimizer",
        ),
        (
            SGD,
            {"accumulate": 3},
            "accumulate=3: batch tensor 0 of shape (4, 4) does not split into 3 equal micro-batches",
        ),
        (SGD, {"loss": "vector"}, "loss_fn must return a scalar tensor, got a tensor of shape (4, 4)"),
        (SGD, {"with_b": True}, "parameter(s) b.weight, b.bias get no gradient from loss_fn"),
    ],
)
def test_refusals(make_optimizer, options, message):
    options = dict(options)
    vector = options.pop("loss", None) == "vector"
    model = _TwoLayers()
    if not options.pop("with_b", False):
        del model.b  # every parameter trained: the refusal under test is the only one

    def loss_fn(m, x):
        return m(x) if vector else m(x).sum()

    with pytest.raises(hir.HirError) as err:
        hir.train_step(model, make_optimizer(model.parameters()), loss_fn, (torch.randn(4, 4),), **options)
    assert message in str(err.value)


def test_a_frozen_parameter_in_the_optimizer_is_refused():
    model = torch.nn.Linear(4, 4)
    model.bias.requires_grad_(False)
    with pytest.raises(hir.HirError, match="parameter\\(s\\) bias of the optimizer do not require grad"):
        hir.train_step(
            model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m, x: m(x).sum(), (torch.randn(2, 4),)
        )


def test_accumulating_over_an_empty_batch_is_refused():
    """Micro-batches split the batch's tensors: with none to split there is no step to take."""
    model = torch.nn.Linear(4, 4)
    x = torch.randn(4, 4)
    with pytest.raises(hir.HirError, match="accumulate=2 needs batch tensors to split into micro-batches"):
        hir.train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m: m(x).sum(), (), accumulate=2)
