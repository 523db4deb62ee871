"""hir.train_step with its compute regions compiled by inductor (``compile_kernels=True``:
its C++ backend on the CPU) equals eager PyTorch step by step, and a model's identical
layers are compiled once: the step's region is cut at its repeats
(:mod:`hir.interpreter.repeats`) and a region whose traced graph was compiled already reuses
that compile."""

import copy

import pytest
import torch

import hir
from training_util import TOL, ResidualMLP, assert_same_training, eager_step, optimizer

LAYERS = 4


def squared_loss(model, x):
    return model(x).square().mean()


@pytest.mark.slow
def test_identical_layers_compile_once_and_equal_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[ResidualMLP() for _ in range(LAYERS)])
    ref = copy.deepcopy(model)
    opt, ref_opt = optimizer("sgd", model), optimizer("sgd", ref)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 8, generator=g),) for _ in range(3)]
    step = hir.train_step(model, opt, squared_loss, batches[0], compile_kernels=True)
    for i, batch in enumerate(batches):
        torch.testing.assert_close(step(*batch), eager_step(ref, ref_opt, squared_loss, batch), **TOL, msg=lambda m, i=i: f"step {i + 1}: {m}")
    assert_same_training(model, opt, ref, ref_opt)
    (compiled, _), = step._compiled.values()
    stats = compiled.kernel_compile
    # the forward's and the backward's layers: one region each, all but one per kind reusing its compile
    assert stats.regions >= 2 * LAYERS - 2 and stats.reuses >= 2 * LAYERS - 4, stats.summary()
    assert stats.compiles + stats.reuses == stats.regions and stats.fallbacks == 0, stats.summary()
