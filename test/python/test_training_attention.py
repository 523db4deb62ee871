"""A training step's attention is traced as eager transformers runs it: with no padding mask,
SDPA with ``is_causal=True`` on the un-repeated key and value heads and no materialized mask
(the flash kernel's form); with a padding mask among the step's inputs, the mask. Both equal
eager PyTorch step by step. CPU, float32, a tiny random Llama (grouped-query heads)."""

import re

import torch
import transformers.masking_utils as masking

import hir
from training_util import steps_equal_eager, twins

SDPA = re.compile(r'"torch\.aten\._scaled_dot_product_flash_attention_for_cpu"\(([^)]*)\) : \(([^)]*)\)')


def sdpa_calls(step) -> list:
    """(operands, operand types) of each forward SDPA call in the step's program."""
    text = str(next(iter(step.programs.values())).module)
    return SDPA.findall(text)


def test_no_padding_mask_traces_causal_sdpa_without_a_mask():
    model, opt, ref, ref_opt, loss_fn, batches = twins("llama", "adamw")
    data = batches(3)
    original = masking.is_torchdynamo_exporting
    step = hir.train_step(model, opt, loss_fn, data[0])
    assert masking.is_torchdynamo_exporting is original  # restored after the export
    calls = sdpa_calls(step)
    assert len(calls) == 2  # one per layer
    for operands, types in calls:
        causal, mask = [o.strip() for o in operands.split(",")][4:6]
        assert causal.startswith("%true") and mask.startswith("%none"), operands
        query, key = [t.strip() for t in types.split("!torch.vtensor")[1:3]]
        assert query.startswith("<[4,4,8,8]") and key.startswith("<[4,2,8,8]"), types  # 4 query heads, 2 key heads
    assert steps_equal_eager(step, loss_fn, data, model, opt, ref, ref_opt, "llama") == ""


def test_a_padding_mask_input_keeps_the_mask():
    model, opt, ref, ref_opt, _, batches = twins("llama", "adamw")

    def loss_fn(model, ids, labels, mask):
        return model(ids, attention_mask=mask, labels=labels).loss

    data = []
    for ids, labels in batches(3):
        mask = torch.ones_like(ids)
        mask[0, :3] = 0  # left padding in the first row
        data.append((ids, labels, mask))
    step = hir.train_step(model, opt, loss_fn, data[0])
    for operands, _ in sdpa_calls(step):
        assert not [o.strip() for o in operands.split(",")][5].startswith("%none"), operands
    assert steps_equal_eager(step, loss_fn, data, model, opt, ref, ref_opt, "llama, padding mask") == ""
