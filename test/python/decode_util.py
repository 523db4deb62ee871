"""A tiny random bf16 Llama as hir's batch-1 static-cache decode step, for the decode kernel
tests (test_fx_fusions.py, test_fused_gemv.py, test_dependent_launch.py)."""

import torch


def bf16_llama_step(hidden: int, intermediate: int, vocab: int, max_cache_len: int, layers: int = 2):
    """A :class:`hir.frontend.hf_decode.StaticCacheStep` of batch 1 over a random bf16
    ``LlamaForCausalLM`` (4 query heads over 2 KV heads; seeded)."""
    import transformers

    from hir.frontend.hf_decode import StaticCacheStep

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=None,
    )
    model = transformers.LlamaForCausalLM(config).eval().to(torch.bfloat16)
    return StaticCacheStep(model, batch_size=1, max_cache_len=max_cache_len)
