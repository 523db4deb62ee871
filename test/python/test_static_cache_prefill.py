"""``StaticCachePrefill`` (issue 34): the prompt's prefill over an empty static cache as HF's
eager prefill runs it, SDPA over the call's own tokens with ``is_causal`` and no mask. Its
logits and cache writes equal ``StaticCacheStep``'s (the model's masked attention over the
whole cache) exactly in float32, eagerly and through an imported program (whose attention
is the causal, unmasked SDPA); models it would be wrong for are refused by name."""

import copy

import pytest
import torch

import generate_util
import hir
from generate_util import CAUSAL_SDPA, EVERY_HEAD, TINY
from hir.frontend.hf_decode import PrefillRefused, StaticCachePrefill, StaticCacheStep

# the eager prefill equals the step for these (llama and qwen3 are also imported below)
EQUAL_FAMILIES = ["qwen2", "mistral", "phi", "phi3", "gemma", "mixtral", "qwen2_moe", "qwen3_moe"]
EQUAL_FAMILIES += ["gpt2", "gpt_neox", "opt", "stablelm", "olmo", "granite"]
CACHE = 32


def tiny(family: str):
    """The family's model; those that attend with every head take no num_key_value_heads."""
    return generate_util.tiny(family, without=("num_key_value_heads",) if family in EVERY_HEAD else ())


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


# in the fast default: grouped KV heads with rotary positions (llama), per-head norms (qwen3),
# experts (qwen2_moe) and every head with learned positions (gpt2); the others with HIR_TEST_SLOW=1
FAST = ("llama", "qwen3", "qwen2_moe", "gpt2")


@pytest.mark.parametrize(
    "family", [f if f in FAST else pytest.param(f, marks=pytest.mark.slow) for f in ("llama", "qwen3", *EQUAL_FAMILIES)]
)
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
        (
            "mistral_window_4096",
            {},
            r"MistralForCausalLM \(mistral\): it has sliding-window attention \(sliding_window=4096\)",
        ),
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
