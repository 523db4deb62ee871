"""``hir.generate`` across model families (tiny random configs, float32, CPU): greedy
decoding equals HF's ``model.generate(do_sample=False)`` token for token for families whose
cache is not the plain one: sliding-window attention (Mistral with its default window and
with a window shorter than the prompt and new tokens, Gemma2 / Gemma3 with their default
layer types, Ministral, OLMo3, GPT-OSS), cache shapes that are not the config's (Falcon's
multi-query, DeepSeek-V3's latent attention with different key and value head sizes, GPT-2 /
GPT-NeoX / OPT configs carrying an unused ``num_key_value_heads``), and models that read a
number from the cache's length (OPT) or index with a constant tensor (Falcon's new decoder
architecture). Encoder-decoder models and tensor-parallel (DTensor) models are refused up
front, by name. Each family is an import of seconds: Mistral with a short window in the fast
default, the others with HIR_TEST_SLOW=1."""

import pytest
import torch

import hir
from hir.core import HirError

transformers = pytest.importorskip("transformers")

PROMPT = [[3, 17, 42, 9, 11], [5, 6, 7, 8, 120]]
NEW_TOKENS = 8  # 13 positions: past every short window below
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
WINDOW = 4  # a sliding window shorter than the prompt and new tokens
FAMILIES = {  # name -> (config class, model class, overrides of TINY)
    "mistral_window_4": ("MistralConfig", "MistralForCausalLM", {"sliding_window": WINDOW}),
    "mistral_window_4096": ("MistralConfig", "MistralForCausalLM", {}),  # its real default
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, "sliding_window": WINDOW}),  # sliding, full
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
    # TINY's num_key_value_heads=2 is unused by these (they attend with every head)
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}),
    "opt": ("OPTConfig", "OPTForCausalLM", {"ffn_dim": 64}),
}
FAST = {"mistral_window_4"}


def tiny(family: str, **overrides):
    config_class, model_class, extra = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**{**TINY, **extra, **overrides})
    return getattr(transformers, model_class)(config).eval()


def hf_greedy(model, prompt):
    with torch.no_grad():
        return model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )


@pytest.mark.parametrize("family", [f if f in FAST else pytest.param(f, marks=pytest.mark.slow) for f in FAMILIES])
def test_greedy_equals_hf_generate(family):
    model = tiny(family)
    prompt = torch.tensor(PROMPT)
    got = hir.generate(model, prompt, max_new_tokens=NEW_TOKENS, do_sample=False)
    assert got.tolist() == hf_greedy(model, prompt).tolist()


def test_the_short_window_changes_the_tokens():
    """The short window is exercised: without it the same weights decode other tokens (so
    the equality above is not the full attention's)."""
    prompt = torch.tensor(PROMPT)
    assert (
        hf_greedy(tiny("mistral_window_4"), prompt).tolist()
        != hf_greedy(tiny("mistral_window_4", sliding_window=None), prompt).tolist()
    )


def test_an_encoder_decoder_is_refused_by_name():
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, decoder_start_token_id=0
    )
    model = transformers.T5ForConditionalGeneration(config).eval()
    with pytest.raises(
        HirError, match=r"hir.generate: T5ForConditionalGeneration \(t5\) is an encoder-decoder model; .*decoder-only"
    ):
        hir.generate(model, torch.tensor(PROMPT), max_new_tokens=2)


@pytest.fixture
def one_gloo_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()


def test_a_tensor_parallel_model_is_refused_by_name(one_gloo_rank):
    """Parameters that are DTensors (what ``from_pretrained(tp_plan=...)`` makes) are refused
    before anything is imported, naming one of them."""
    from torch.distributed.tensor import Shard, distribute_tensor, init_device_mesh

    model = tiny("mistral_window_4")
    mesh = init_device_mesh("cpu", (1,))
    projection = model.model.layers[0].self_attn.q_proj
    projection.weight = torch.nn.Parameter(distribute_tensor(projection.weight.detach(), mesh, [Shard(0)]))
    with pytest.raises(
        HirError,
        match=r"MistralForCausalLM \(mistral\) is tensor-parallel \(its parameter 'model.layers.0.self_attn.q_proj.weight' is a DTensor",
    ):
        hir.generate(model, torch.tensor(PROMPT), max_new_tokens=2)
