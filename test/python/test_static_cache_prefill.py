"""``StaticCachePrefill`` (issue 34): the prompt's prefill over an empty static cache as HF's
eager prefill runs it, SDPA over the call's own tokens with ``is_causal`` and no mask. Its
logits and cache writes equal ``StaticCacheStep``'s (the model's masked attention over the
whole cache) exactly in float32, eagerly and through an imported program (whose attention
is the causal, unmasked SDPA); models it would be wrong for are refused by name."""

import copy
import re

import pytest
import torch

import hir
from hir.frontend.hf_decode import PrefillRefused, StaticCachePrefill, StaticCacheStep

transformers = pytest.importorskip("transformers")

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
    "mistral": ("MistralConfig", "MistralForCausalLM", {}),  # sliding_window 4096 by default
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {}),
}
MHA = {"num_key_value_heads": None}  # (families without grouped KV heads take no num_key_value_heads)
EQUAL_FAMILIES = {  # family -> (config, model, overrides): the eager prefill equals the step
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "mistral_no_window": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
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
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {**MHA, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 128}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", MHA),
    "opt": ("OPTConfig", "OPTForCausalLM", {**MHA, "ffn_dim": 64, "word_embed_proj_dim": 32}),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {}),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", {}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", {}),
}
FAMILIES.update(EQUAL_FAMILIES)
CACHE = 32
# the imported attention: SDPA(q, k, v, attn_mask=None, dropout, is_causal=True, ...)
CAUSAL_SDPA = re.compile(r"torch\.aten\.scaled_dot_product_attention %\w+, %\w+, %\w+, %none\w*, %[\w.+-]+, %true\w*,")


def tiny(family: str, **overrides):
    config_class, model_class, extra = FAMILIES[family]
    torch.manual_seed(0)
    arguments = {k: v for k, v in {**TINY, **extra, **overrides}.items() if v is not None or k not in MHA}
    config = getattr(transformers, config_class)(**arguments)
    return getattr(transformers, model_class)(config).eval()


def prompt(batch: int, tokens: int):
    g = torch.Generator().manual_seed(tokens)
    return torch.randint(0, 128, (batch, tokens), generator=g), torch.arange(tokens)


def assert_same_state(got: dict, want: dict) -> None:
    """The caches (keys, values, lengths) equal exactly."""
    assert got.keys() == want.keys()
    for name, tensor in want.items():
        assert torch.equal(got[name], tensor), name


def caches(step: StaticCacheStep) -> dict:
    return {name: t.clone() for name, t in step.named_buffers()}


@pytest.mark.parametrize("family", ["llama", "qwen3", *EQUAL_FAMILIES])
def test_eager_prefill_equals_the_step(family):
    model = tiny(family)
    ids, pos = prompt(2, 7)
    step, prefill = StaticCacheStep(model, 2, CACHE), StaticCachePrefill(StaticCacheStep(model, 2, CACHE))
    with torch.no_grad():
        want = step(ids, pos)
        got = prefill(ids, pos)
    assert torch.equal(got, want)
    assert_same_state(caches(prefill.step), caches(step))
    assert model.config._attn_implementation == "sdpa"  # restored after the call


# llama in the fast default; qwen3 (another import) with HIR_TEST_SLOW=1
@pytest.mark.parametrize("family", ["llama", pytest.param("qwen3", marks=pytest.mark.slow)])
def test_imported_prefill_is_causal_sdpa_and_equals_the_step(family):
    model = tiny(family)
    prefill = StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    tokens = ("tokens", 2, CACHE - 1)
    program = hir.from_torch(prefill, prompt(1, 2), dynamic={"input0": {1: tokens}, "input1": {0: tokens}})
    text = str(program.module)
    assert len(CAUSAL_SDPA.findall(text)) == TINY["num_hidden_layers"], text
    assert "torch.aten.scaled_dot_product_attention" not in CAUSAL_SDPA.sub("", text)  # no masked one left
    state = program.state(prefill)
    assert all(name.startswith("step.") for name in state if "cache" in name)  # the step's buffers
    fn = program.compile(state, device="cpu")
    for tokens in (CACHE - 1, 5, 2):
        for t in prefill.step.buffers():
            t.zero_()  # an empty cache, every call
        ids, pos = prompt(1, tokens)
        step = StaticCacheStep(model, 1, CACHE)
        with torch.no_grad():
            want = step(ids, pos)
        got = fn(ids, pos)
        assert torch.equal(got, want), tokens
        assert_same_state(caches(prefill.step), caches(step))


def test_one_token_prefill_equals_the_step():
    model = tiny("llama")
    ids, pos = prompt(1, 1)
    step, prefill = StaticCacheStep(model, 1, CACHE), StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    with torch.no_grad():
        assert torch.equal(prefill(ids, pos), step(ids, pos))
    assert_same_state(caches(prefill.step), caches(step))


@pytest.mark.parametrize(
    "family, overrides, reason",
    [
        ("mistral", {}, r"MistralForCausalLM \(mistral\): it has sliding-window attention \(sliding_window=4096\)"),
        (
            "gemma2",
            {},
            r"Gemma2ForCausalLM \(gemma2\): .*not all its layers are full attention .*softcaps its attention scores",
        ),
        (
            "llama",
            {"attn_implementation": "eager"},
            r"LlamaForCausalLM \(llama\): its attention is 'eager', not 'sdpa'",
        ),
        (
            "falcon",
            {},
            r"FalconForCausalLM \(falcon\): its attention does not run through transformers' AttentionInterface",
        ),
    ],
)
def test_models_it_would_be_wrong_for_are_refused(family, overrides, reason):
    model = tiny(family)
    if "attn_implementation" in overrides:
        model.config._attn_implementation = overrides["attn_implementation"]
    with pytest.raises(PrefillRefused, match=f"error: StaticCachePrefill: {reason}"):
        StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    assert issubclass(PrefillRefused, hir.HirError)


def test_a_layer_outside_the_attention_interface_is_refused():
    """A layer whose attention does not dispatch through transformers' AttentionInterface
    (here: its own copy of the config, still "sdpa") would attend without a mask: the call
    counts the layers that went through the prefill's attention and refuses."""
    model = tiny("llama")
    attention = model.model.layers[1].self_attn
    attention.config = copy.copy(attention.config)
    prefill = StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    refused = r"LlamaForCausalLM: 1 of its 2 attention layers ran through transformers' AttentionInterface"
    with pytest.raises(PrefillRefused, match=refused):
        with torch.no_grad():
            prefill(*prompt(1, 4))
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(hir.HirError, match=refused):  # and its import
        hir.from_torch(prefill, prompt(1, 4))
    assert model.config._attn_implementation == "sdpa"


def test_prefill_copies_and_moves():
    """A prefill deep-copies (its step's cache layers hold no tensors between calls) and
    follows ``.to()`` (the state is the step's buffers)."""
    model = tiny("llama")
    prefill = StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    hir.from_torch(prefill, prompt(1, 4))
    twin = copy.deepcopy(prefill).to(torch.float64)
    ids, pos = prompt(1, 4)
    with torch.no_grad():
        want = prefill(ids, pos)
        got = twin(ids, pos)
    assert got.dtype == torch.float64 and twin.step.key_cache_0.dtype == torch.float64
    torch.testing.assert_close(got.float(), want)
    assert twin.step.key_cache_0.data_ptr() != prefill.step.key_cache_0.data_ptr()
    assert prefill.step.key_cache_0[:, :, :4].abs().sum() > 0 and twin.step.key_cache_0[:, :, :4].abs().sum() > 0


def test_non_causal_attention_is_refused_at_the_call():
    """An attention layer marked non-causal (``is_causal = False``: bidirectional) would run
    unmasked over the whole prompt: the prefill's attention refuses it."""
    model = tiny("llama")
    model.model.layers[0].self_attn.is_causal = False
    prefill = StaticCachePrefill(StaticCacheStep(model, 1, CACHE))
    with pytest.raises(
        PrefillRefused, match=r"StaticCachePrefill: LlamaAttention passes is_causal=False to its attention"
    ):
        with torch.no_grad():
            prefill(*prompt(1, 4))
