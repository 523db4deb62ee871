"""A compiled region keeps the program's order (``reorder_for_locality`` off in
:func:`hir.interpreter.kernels.inductor_options`): inductor's locality pass would sink every
product used only by the region's outputs (a training step's weight gradients) to the end of
the generated code, holding its inputs (the saved activations, the output head's logits
gradient) through the whole backward. CPU: a tiny Llama's training step compiled as one
region (``regional=False``: cut at its layers, no piece holds both the head's gradient and
the layers' backward), inductor's generated code read back."""

import re

import torch
from torch._inductor.utils import run_and_get_code

import hir

VOCAB, HIDDEN = 1000, 64


def _step_code() -> str:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    ids = torch.randint(0, VOCAB, (2, 32))
    step = hir.train_step(
        model, optimizer, lambda m, i, t: m(i, labels=t).loss, (ids, ids), compile_kernels=True, regional=False
    )
    _, codes = run_and_get_code(step, ids, ids)
    return max(codes, key=len)  # the step's region


def test_the_output_heads_gradient_comes_before_the_layers_backward():
    """The output head's weight gradient (a [vocab, hidden] product) is computed where the
    program computes it, right after the loss's backward: before the first attention backward
    in the generated code, not after the last one."""
    code = _step_code()
    # dlogits transposed (its [tokens, vocab] buffer read as [vocab, tokens]) times the last hidden states
    head = re.search(rf"extern_kernels\.mm\(reinterpret_tensor\(\w+, \({VOCAB}, \d+\), \(1, {VOCAB}\)", code)
    attention = [m.start() for m in re.finditer(r"flash_attention\w*backward\w*\.default\(", code)]
    assert head is not None and len(attention) == 2
    assert head.start() < attention[0]
