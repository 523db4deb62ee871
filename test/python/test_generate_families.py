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
from generate_util import PROMPT, hf_generate, tiny, transformers
from hir.core import HirError

NEW_TOKENS = 8  # 13 positions: past every short window below (generate_util.WINDOW)
FAMILIES = ["mistral_window_4", "mistral_window_4096", "gemma2_window_4", "gemma3", "ministral", "olmo3", "gpt_oss"]
FAMILIES += ["falcon", "falcon_new_decoder", "deepseek_v3", "gpt2", "gpt_neox", "opt"]  # (last three: every head)
FAST = {"mistral_window_4"}


def hf_greedy(model, prompt):
    return hf_generate(model, prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)


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
        match=r"MistralForCausalLM \(mistral\) is tensor-parallel "
        r"\(its parameter 'model.layers.0.self_attn.q_proj.weight' is a DTensor",
    ):
        hir.generate(model, torch.tensor(PROMPT), max_new_tokens=2)
