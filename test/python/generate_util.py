"""The tiny random HF models of the hir.generate tests (no download; one per family and dtype,
shared by a test file), the prompt they decode, and HF's own ``generate`` to compare with."""

import re

import pytest
import torch

transformers = pytest.importorskip("transformers")


PROMPT = [[3, 17, 42, 9, 11], [5, 6, 7, 8, 120]]
TINY = dict(
    vocab_size=128,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    max_position_embeddings=128,
    bos_token_id=0,
    eos_token_id=None,
    pad_token_id=0,
)
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
}


def tiny(family: str, dtype: torch.dtype = torch.float32, **overrides):
    config_class, model_class, extra = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**{**TINY, **extra, **overrides})
    return getattr(transformers, model_class)(config).eval().to(dtype)


# StaticCachePrefill's attention: SDPA(q, k, v, attn_mask=None, dropout, is_causal=True, ...)
CAUSAL_SDPA = re.compile(r"torch\.aten\.scaled_dot_product_attention %\w+, %\w+, %\w+, %none\w*, %[\w.+-]+, %true\w*,")
_MODELS: dict = {}


def shared(family: str, dtype: torch.dtype = torch.float32):
    """One model per family and dtype for the whole file: hir.generate keeps its compiled
    program per model, so the tests share one import per model (each import is seconds)."""
    key = (family, dtype)
    if key not in _MODELS:
        _MODELS[key] = tiny(family, dtype)
    return _MODELS[key]


def hf_generate(model, prompt, **options):
    with torch.no_grad():
        return model.generate(prompt, attention_mask=torch.ones_like(prompt), **options)


def left_padded(rows: list, pad: int = 0) -> tuple:
    """A tokenizer's batch for a decoder model: each row left-padded to the longest."""
    width = max(len(row) for row in rows)
    ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    return ids, mask
