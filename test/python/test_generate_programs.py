"""``hir.generate``'s programs: the compiled program is made once per model and batch, not per
call; the prompt runs the causal prefill (a model it refuses prefills through the decode
program); bad arguments and a length beyond the position table are named up front; the static
cache step and the CUDA graphs' replay."""

import copy
import warnings

import pytest
import torch

import hir
from generate_util import CAUSAL_SDPA, PROMPT, TINY, hf_generate, shared, tiny
from hir.core import HirError
from hir.frontend import generate as generate_module
from hir.frontend import import_cache
from hir.frontend.hf_decode import StaticCachePrefill, StaticCacheStep

transformers = pytest.importorskip("transformers")


def test_programs_are_made_once_per_model_and_batch(monkeypatch):
    model = shared("llama")
    made = []
    original = generate_module.Generator.__init__

    def counted(self, *args, **kwargs):
        made.append(args[1:3])
        original(self, *args, **kwargs)

    monkeypatch.setattr(generate_module.Generator, "__init__", counted)
    prompt = torch.tensor(PROMPT)
    first = hir.generate(model, prompt, max_new_tokens=4, do_sample=False)
    hir.generate(model, prompt[:, :3], max_new_tokens=10, do_sample=False)  # same batch, fits the cache
    assert made in ([], [(2, 64)])  # made here unless an earlier test did
    before = len(made)
    hir.generate(model, prompt[:1], max_new_tokens=4, do_sample=False)
    hir.generate(model, prompt[:1], max_new_tokens=6, do_sample=False)
    assert len(made) - before <= 1 and set(made) <= {(2, 64), (1, 64)}
    count = len(made)
    try:
        with torch.no_grad():  # the model's weights change in place: the program sees it
            model.lm_head.weight.mul_(-1)
        flipped = hir.generate(model, prompt, max_new_tokens=4, do_sample=False)
        assert (
            flipped.tolist() == hf_generate(model, prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False).tolist()
        )
        assert flipped.tolist() != first.tolist() and len(made) == count  # rebound, not re-imported
    finally:
        with torch.no_grad():
            model.lm_head.weight.mul_(-1)


def test_prefill_runs_the_causal_program():
    """A prompt of a length met before runs StaticCachePrefill's program (SDPA over its own
    tokens, causal, no mask), built at that prefill and bound to the decode program's cache
    (the first of its length: the module, by PyTorch); a 1-token prompt and the decode steps
    run the decode program."""
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    for _ in range(2):
        got = hir.generate(model, prompt, max_new_tokens=4, do_sample=False)
        assert got.tolist() == hf_generate(model, prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False).tolist()
    gen = generate_module.generator(model, 2, prompt.shape[1] + 4)
    assert (
        gen.prefill_fn is not None
        and gen.prefill_fn.state["step.key_cache_0"].data_ptr() == gen.fn.state["key_cache_0"].data_ptr()
    )
    assert len(CAUSAL_SDPA.findall(str(gen.prefill_program.module))) == TINY["num_hidden_layers"]
    assert not CAUSAL_SDPA.findall(str(gen.program.module))  # the decode program attends over the cache, masked
    example = (
        torch.zeros(2, 2, dtype=torch.long),
        torch.arange(2),
    )  # the import cache tells the modules apart, whatever the options
    assert import_cache.fingerprint(gen.step, example, {}) != import_cache.fingerprint(gen.prefill_module, example, {})
    one = hir.generate(model, prompt[:, :1], max_new_tokens=6, do_sample=False)
    assert (
        one.tolist() == hf_generate(model, prompt[:, :1], max_new_tokens=6, min_new_tokens=6, do_sample=False).tolist()
    )


def test_a_model_the_prefill_refuses_still_generates():
    """A Llama with HF's eager attention (not SDPA): StaticCachePrefill refuses it, so its
    prompt runs the decode program; still HF's tokens."""
    model = tiny("llama", attn_implementation="eager")
    assert model.config._attn_implementation == "eager"
    prompt = torch.tensor(PROMPT)
    got = hir.generate(model, prompt, max_new_tokens=8, do_sample=False)
    assert got.tolist() == hf_generate(model, prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False).tolist()
    gen = generate_module.generator(model, 2, prompt.shape[1] + 8)
    assert gen.prefill_module is None and gen.prefill_program is None


def test_a_prefill_that_cannot_be_imported_falls_back_with_a_warning(monkeypatch):
    """Where the causal prefill module's import fails (a model whose code adds guards
    torch.export cannot prove over the token range), the prompt runs the decode program
    of any token count (imported then: the decode steps' takes one token), with a warning
    naming why; the tokens are HF's still."""
    from hir.frontend import import_cache as cache_module

    real = cache_module.cached_from_torch

    def failing(module, *args, **kwargs):
        if isinstance(module, StaticCachePrefill):
            raise HirError("error: torch.export cannot trace StaticCachePrefill: a guard (test)")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(cache_module, "cached_from_torch", failing)
    model = tiny("llama")
    prompt = torch.tensor(PROMPT)
    hir.generate(
        model, prompt, max_new_tokens=6, do_sample=False
    )  # the first of its length: prefilled by PyTorch, nothing imported
    with pytest.warns(
        RuntimeWarning, match=r"prefill through the decode program.*cannot trace StaticCachePrefill: a guard \(test\)"
    ) as caught:
        got = hir.generate(model, prompt, max_new_tokens=6, do_sample=False)
    assert caught[0].filename == __file__  # the warning names the user's call
    assert got.tolist() == hf_generate(model, prompt, max_new_tokens=6, min_new_tokens=6, do_sample=False).tolist()
    gen = generate_module.generator(model, 2, prompt.shape[1] + 6)
    assert gen.prefill_module is None and gen.prefill_program is None and gen.prefill_fn is None


def test_bad_arguments_are_named():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    with pytest.raises(hir.HirError, match="num_beams=4 is not supported"):  # beam search stays refused
        hir.generate(model, prompt, max_new_tokens=4, num_beams=4)
    with pytest.raises(hir.HirError, match=r"unsupported argument\(s\) logits_processor"):
        hir.generate(model, prompt, max_new_tokens=4, logits_processor=[])
    with pytest.raises(
        hir.HirError,
        match=r"attention_mask must be a tensor of input_ids' shape \[2, 5\], "
        r"got a 2-d tensor of torch.int64 of shape \[2, 4\]",
    ):
        hir.generate(model, prompt, max_new_tokens=4, attention_mask=torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(hir.HirError, match=r"attention_mask must hold 0 \(padding\) and 1 \(a token\) only"):
        hir.generate(model, prompt, max_new_tokens=4, attention_mask=torch.full((2, 5), 2))
    with pytest.raises(hir.HirError, match="input_ids must be a \\[batch, tokens\\] tensor"):
        hir.generate(model, prompt[0], max_new_tokens=4)


def test_a_length_beyond_the_position_table_is_refused_up_front(monkeypatch):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=128,
        n_positions=16,
        n_embd=32,
        n_layer=1,
        n_head=4,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    monkeypatch.setattr(
        generate_module, "generator", lambda *args, **kwargs: pytest.fail("imported a model it should refuse")
    )
    with pytest.raises(
        hir.HirError,
        match=r"test_generate_programs.py:\d+: error: hir.generate: "
        r"GPT2LMHeadModel has a learned table of 16 positions .*"
        r"a prompt of 5 tokens and 12 new tokens need 17: ask for at most 11 new tokens",
    ):
        hir.generate(model, torch.tensor(PROMPT), max_new_tokens=12)
    llama = shared("llama")  # rotary positions: max_position_embeddings (128) bounds nothing
    assert generate_module._position_limit(llama) is None


def test_static_cache_step_moves_and_copies():
    """The step's cache follows ``.to()`` (its buffers are the cache) and a step that was
    imported deep-copies (no export tensors left in the cache layers)."""
    model = shared("llama")
    step = StaticCacheStep(model, batch_size=1, max_cache_len=16)
    hir.from_torch(step, (torch.tensor([[1]]), torch.tensor([0])))
    twin = copy.deepcopy(step).to(torch.float64)
    ids, pos = torch.tensor([[3]]), torch.tensor([0])
    with torch.no_grad():
        want = step(ids, pos)
        got = twin(ids, pos)
    assert got.dtype == torch.float64 and twin.key_cache_0.dtype == torch.float64
    torch.testing.assert_close(got.float(), want)
    assert step.key_cache_0.data_ptr() != twin.key_cache_0.data_ptr()


@pytest.mark.gpu
def test_generate_on_cuda_replays_graphs():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model = tiny("llama").cuda()
    prompt = torch.tensor(PROMPT, device="cuda")
    got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False)
    want = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False)
    assert got.tolist() == want.tolist()
    gen = generate_module.generator(model, 2, prompt.shape[1] + 16)
    assert gen.fn.graph_state.last == "replay (bound)" and gen.fn.graph_state.captures >= 1
    # float32 on CUDA may prefill through the decode program (warned); bfloat16 takes the
    # flash kernel's path and gets the causal prefill program, bound to the decode program's cache
    half = tiny("llama", torch.bfloat16).cuda()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(2):  # the second prompt of its length runs the prefill program
            out = hir.generate(half, prompt, max_new_tokens=4, do_sample=False)
    assert out.shape == (2, prompt.shape[1] + 4)
    gen = generate_module.generator(half, 2, prompt.shape[1] + 4)
    # the shared (dynamic cache length) prefill import holds on CUDA too: the export does not
    # run CUDA's attention kernel choice (whose mask alignment test would guard it)
    assert gen.programs.prefill_per_bucket is None
    assert (
        gen.prefill_fn is not None
        and gen.prefill_fn.state["step.key_cache_0"].data_ptr() == gen.fn.state["key_cache_0"].data_ptr()
    )
    # a StaticCacheStep moved to the GPU runs there (its cache layers follow)
    step = StaticCacheStep(model.cpu(), batch_size=1, max_cache_len=16).to("cuda")
    with torch.no_grad():
        assert step(torch.tensor([[3]], device="cuda"), torch.tensor([0], device="cuda")).device.type == "cuda"
