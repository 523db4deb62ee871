"""The tiny random HF models of the hir.generate and StaticCachePrefill tests (no download):
one config (TINY) and one table of families; a fresh model per call (``tiny``) or one per
family and dtype for the whole test process (``shared``); the prompt they decode, and HF's
own ``generate`` to compare with."""

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
WINDOW = 4  # a sliding window shorter than the prompt and the new tokens
FAMILIES = {  # name -> (config class, model class, overrides of TINY)
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
    "mistral_window_4": ("MistralConfig", "MistralForCausalLM", {"sliding_window": WINDOW}),
    "mistral_window_4096": ("MistralConfig", "MistralForCausalLM", {}),  # its real default
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8}),  # sliding and full layers, window 4096
    "gemma2_window_4": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, "sliding_window": WINDOW}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 8, "sliding_window": WINDOW}),
    "ministral": ("MinistralConfig", "MinistralForCausalLM", {"head_dim": 8, "sliding_window": WINDOW}),
    "olmo3": ("Olmo3Config", "Olmo3ForCausalLM", {"sliding_window": WINDOW}),
    "gpt_oss": (
        "GptOssConfig",
        "GptOssForCausalLM",
        {"head_dim": 8, "sliding_window": WINDOW, "num_local_experts": 4, "num_experts_per_tok": 2},
    ),
    "falcon": ("FalconConfig", "FalconForCausalLM", {}),  # multi-query: one KV head
    "falcon_new_decoder": ("FalconConfig", "FalconForCausalLM", {"new_decoder_architecture": True}),
    "deepseek_v3": (
        "DeepseekV3Config",
        "DeepseekV3ForCausalLM",
        {
            "num_key_value_heads": 4,
            "kv_lora_rank": 16,
            "q_lora_rank": 16,
            "qk_rope_head_dim": 4,
            "qk_nope_head_dim": 8,
            "v_head_dim": 6,
            "head_dim": 4,
            "n_routed_experts": 4,
            "n_group": 1,
            "topk_group": 1,
            "num_experts_per_tok": 2,
            "first_k_dense_replace": 1,
            "moe_intermediate_size": 16,
        },
    ),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "phi": ("PhiConfig", "PhiForCausalLM", {}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 8}),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        {"num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": None},
    ),
    "qwen2_moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        {
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 32,
        },
    ),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "head_dim": 8},
    ),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {}),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", {}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", {}),
    # these attend with every head: TINY's num_key_value_heads=2 is unused by them
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}),
    "opt": ("OPTConfig", "OPTForCausalLM", {"ffn_dim": 64}),
}
EVERY_HEAD = ("gpt2", "gpt_neox", "opt")


def tiny(family: str, dtype: torch.dtype = torch.float32, without: tuple = (), **overrides):
    """A fresh model of ``family`` (seed 0): TINY less its keys named in ``without``, then the
    family's overrides, then ``overrides``."""
    config_class, model_class, extra = FAMILIES[family]
    torch.manual_seed(0)
    arguments = {key: value for key, value in TINY.items() if key not in without}
    config = getattr(transformers, config_class)(**{**arguments, **extra, **overrides})
    return getattr(transformers, model_class)(config).eval().to(dtype)


# StaticCachePrefill's attention: SDPA(q, k, v, attn_mask=None, dropout, is_causal=True, ...)
CAUSAL_SDPA = re.compile(r"torch\.aten\.scaled_dot_product_attention %\w+, %\w+, %\w+, %none\w*, %[\w.+-]+, %true\w*,")
_MODELS: dict = {}


def shared(family: str, dtype: torch.dtype = torch.float32):
    """One model per family and dtype for the whole test process (every file of a pytest
    worker): hir.generate keeps its compiled programs per model, so the tests share one
    import and compilation per model (each is seconds). A test that changes the model
    restores it."""
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
