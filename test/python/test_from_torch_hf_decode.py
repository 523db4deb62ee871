"""A KV-cache decode step: a tiny Llama over transformers' ``StaticCache``
(:class:`hir.frontend.hf_decode.StaticCacheStep`) imports as a program whose cache buffers
are ``@main`` arguments written in place; greedy decoding of 8 tokens through hir equals
``model.generate(..., do_sample=False)``. A prefill program (the whole prompt at once) and the
one-token step share one state dict, so the step continues from the prefill's cache."""

import pytest
import torch

from hir.frontend import from_torch
from hir.frontend.hf_decode import StaticCacheStep

transformers = pytest.importorskip("transformers")

PROMPT = [[3, 17, 42, 9]]
NEW_TOKENS = 8
MAX_LEN = 16


def tiny_llama():
    T = transformers
    torch.manual_seed(0)
    config = T.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
    model = T.LlamaForCausalLM(config).eval()
    model.generation_config.cache_implementation = "static"
    return model


@pytest.mark.slow  # the fast default: the same decode in docs/from-pytorch.md ("A decode step")
def test_greedy_decode_equals_generate():
    model = tiny_llama()
    step = StaticCacheStep(model, batch_size=1, max_cache_len=MAX_LEN)
    prompt = torch.tensor(PROMPT)
    prefill = from_torch(step, (prompt, torch.arange(prompt.shape[1])))
    decode = from_torch(step, (prompt[:, :1], torch.tensor([0])))
    # the cache is state, not an output: @main returns the logits only and writes the cache
    assert decode.output_names == ["output"]
    assert {f"{kind}_cache_{i}" for kind in ("key", "value") for i in range(2)} <= set(decode.state_names)
    state = decode.state(step)
    for tensor in state.values():
        if tensor.dtype.is_floating_point and tensor.dim() == 4:
            tensor.zero_()  # the cache starts empty; the run must fill it
    (logits,) = prefill.run(state, prompt, torch.arange(prompt.shape[1]), device="cpu")
    tokens = PROMPT[0] + [int(logits[0, -1].argmax())]
    while len(tokens) < len(PROMPT[0]) + NEW_TOKENS:
        (logits,) = decode.run(state, torch.tensor([[tokens[-1]]]), torch.tensor([len(tokens) - 1]), device="cpu")
        tokens.append(int(logits[0, -1].argmax()))
    # the cache holds every position fed so far, and nothing after
    filled = len(tokens) - 1
    assert state["key_cache_1"][:, :, :filled].abs().sum() > 0 and state["key_cache_1"][:, :, filled:].abs().sum() == 0
    with torch.no_grad():
        want = model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)
    assert tokens == want[0].tolist()
