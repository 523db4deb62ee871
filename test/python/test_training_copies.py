"""hir eager's training step (``graph=False, compile_kernels=False``: the imported step run op
by op) casts and copies what eager PyTorch's step does, counted per aten op with a
``TorchDispatchMode`` on a tiny Llama under bf16 autocast with ``AdamW(fused=True)`` (the
step of benchmarks/train.py), on the CPU; every step's loss, then the parameters and Adam's
state equal eager's.

Casts: autocast casts each weight of a linear to bf16 once per step, in the forward; the
backward reads the cast saved for it, in the traced joint graph as in eager autograd.
Copies: autograd saves tensors for the backward that view one another (a weight's bf16 cast
and its transpose, attention's output and its reshape) or one tensor twice (a norm's
``rsqrt``). A kernel segment's results that may view one fresh tensor were each copied
into their destination buffer (40 copies in this step, against eager's none); they are now
bound as those views (:mod:`hir.interpreter.destinations`)."""

import copy

import pytest
import torch

import hir
from dispatch_counts import DispatchCounts
from training_util import TOL, assert_same_training, eager_step, make

transformers = pytest.importorskip("transformers")

STEPS = 3


class Counts(DispatchCounts):
    """:class:`DispatchCounts`, and the casts of ``weights`` (tensors by storage address)."""

    def __init__(self, weights: set) -> None:
        super().__init__()
        self.weights, self.weight_casts = weights, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._to_copy.default and args[0].data_ptr() in self.weights:
            self.weight_casts += 1
        return super().__torch_dispatch__(func, types, args, kwargs)


def linear_weights(model: torch.nn.Module) -> set:
    """The storage addresses of the weights of ``model``'s linears."""
    return {m.weight.data_ptr() for m in model.modules() if isinstance(m, torch.nn.Linear)}


def autocast_loss(model, ids, labels):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return model(ids, labels=labels).loss


def test_an_autocast_step_casts_and_copies_as_eager_does():
    model, _, batches = make("llama")
    ref = copy.deepcopy(model)
    opt, ref_opt = (
        torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.1, eps=1e-6, fused=True) for m in (model, ref)
    )
    data = batches(STEPS)
    step = hir.train_step(model, opt, autocast_loss, data[0], graph=False, compile_kernels=False)
    weights = len(linear_weights(model))
    assert weights == 2 * 7 + 1  # per layer q, k, v, o, gate, up, down; the head
    for i, batch in enumerate(data):
        ours, eager = Counts(linear_weights(model)), Counts(linear_weights(ref))
        with ours:
            loss = step(*batch)
        with eager:
            want = eager_step(ref, ref_opt, autocast_loss, batch)
        torch.testing.assert_close(loss, want, **TOL, msg=lambda m, i=i: f"step {i + 1}: {m}")
        assert ours.weight_casts == eager.weight_casts == weights  # each once, in the forward
        # eager copies nothing with copy_; hir writes the loss into the program's returned buffer
        assert ours.seen["copy_"] <= eager.seen["copy_"] + 1, (ours.seen["copy_"], eager.seen["copy_"])
        assert ours.of(("clone", "contiguous")) == eager.of(("clone", "contiguous"))
        # (one cast more: the decomposed loss casts its count of labels to float, inside nll_loss in eager)
        assert ours.seen["_to_copy"] == eager.seen["_to_copy"] + 1
    assert_same_training(model, opt, ref, ref_opt)
