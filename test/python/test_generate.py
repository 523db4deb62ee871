"""``hir.generate`` (issue 34): HF ``generate``'s decoding through one compiled hir program
over a static KV cache. Greedy decoding equals ``model.generate(do_sample=False)`` token
for token in float32 (16 new tokens, three families, batch 2); stop tokens and padding as
HF; sampling follows HF's processors; the prompt runs the causal prefill (a model it
refuses prefills through the decode program); in bf16 each step's logits agree with HF's within a
stated tolerance; the compiled program is made once per model and batch, not per call."""

import copy
import re
import warnings

import pytest
import torch

import hir
from hir.core import HirError
from hir.frontend import generate as generate_module
from hir.frontend import import_cache
from hir.frontend.hf_decode import StaticCachePrefill, StaticCacheStep

transformers = pytest.importorskip("transformers")

PROMPT = [[3, 17, 42, 9, 11], [5, 6, 7, 8, 120]]
TINY = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=64, max_position_embeddings=128, bos_token_id=0, eos_token_id=None, pad_token_id=0)
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


# llama in the fast default; the other families (an import each) with HIR_TEST_SLOW=1
@pytest.mark.parametrize("family", [f if f == "llama" else pytest.param(f, marks=pytest.mark.slow) for f in sorted(FAMILIES)])
def test_greedy_equals_hf_generate(family):
    model = shared(family)
    prompt = torch.tensor(PROMPT)
    got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False)
    want = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False)
    assert got.tolist() == want.tolist()
    # a shorter prompt and a single row reuse nothing they must not: still HF's tokens
    got = hir.generate(model, prompt[1:, :3], max_new_tokens=16, do_sample=False)
    assert got.tolist() == hf_generate(model, prompt[1:, :3], max_new_tokens=16, min_new_tokens=16, do_sample=False).tolist()


def test_stop_tokens_and_padding_as_hf():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    free = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False)
    stop = [int(free[0, 7]), int(free[1, 9])]  # row 0 stops at its 3rd new token, row 1 later
    for eos in (stop, stop[0]):
        got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False, eos_token_id=eos, pad_token_id=1)
        want = hf_generate(model, prompt, max_new_tokens=16, do_sample=False, eos_token_id=eos, pad_token_id=1)
        assert got.tolist() == want.tolist()
    assert got.shape[1] < prompt.shape[1] + 16 or stop[0] not in free[1, 5:].tolist()
    # min_new_tokens holds a stop token back as HF does
    got = hir.generate(model, prompt, max_new_tokens=8, min_new_tokens=6, do_sample=False, eos_token_id=stop, pad_token_id=1)
    want = hf_generate(model, prompt, max_new_tokens=8, min_new_tokens=6, do_sample=False, eos_token_id=stop, pad_token_id=1)
    assert got.tolist() == want.tolist()


def left_padded(rows: list, pad: int = 0) -> tuple:
    """A tokenizer's batch for a decoder model: each row left-padded to the longest."""
    width = max(len(row) for row in rows)
    ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    return ids, mask


def test_left_padded_batch_equals_hf_per_row():
    """Prompts of different lengths in one left-padded batch: HF's positions (the mask's
    cumsum) and the padding masked for the whole generation; each row equals HF's batched
    generate and HF's generate of that prompt alone; stop tokens and sampling too."""
    model = shared("llama")
    rows = [[3, 17, 42, 9, 11], [5, 6], [7, 8, 120]]
    ids, mask = left_padded(rows)
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, max_new_tokens=10, min_new_tokens=10, do_sample=False)
    got = hir.generate(model, ids, attention_mask=mask, max_new_tokens=10, do_sample=False)
    assert got.tolist() == want.tolist()
    for i, row in enumerate(rows):
        alone = hf_generate(model, torch.tensor([row]), max_new_tokens=10, min_new_tokens=10, do_sample=False)
        assert got[i, ids.shape[1]:].tolist() == alone[0, len(row):].tolist(), i
    stop = int(want[1, ids.shape[1] + 2])
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=False, eos_token_id=stop, pad_token_id=1)
    assert hir.generate(model, ids, attention_mask=mask, max_new_tokens=10, do_sample=False, eos_token_id=stop, pad_token_id=1).tolist() == want.tolist()
    torch.manual_seed(4)
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=True)
    torch.manual_seed(4)
    assert hir.generate(model, ids, attention_mask=mask, max_new_tokens=10, do_sample=True).tolist() == want.tolist()


def test_sampling():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    torch.manual_seed(1)
    a = hir.generate(model, prompt, max_new_tokens=12, do_sample=True, temperature=0.7, top_k=5)
    torch.manual_seed(1)
    b = hir.generate(model, prompt, max_new_tokens=12, do_sample=True, temperature=0.7, top_k=5)
    assert a.tolist() == b.tolist()  # reproducible from the seed
    # top_k=1 is greedy whatever the temperature
    greedy = hir.generate(model, prompt, max_new_tokens=12, do_sample=False)
    assert hir.generate(model, prompt, max_new_tokens=12, do_sample=True, temperature=3.0, top_k=1).tolist() == greedy.tolist()
    # every sampled token is among the top 5 of its step's logits (teacher-forced through HF)
    out = hir.generate(model, prompt, max_new_tokens=12, do_sample=True, top_k=5, return_dict_in_generate=True, output_logits=True)
    for step, logits in enumerate(out.logits):
        token = out.sequences[:, prompt.shape[1] + step]
        assert bool((logits.topk(5).indices == token[:, None]).any(dim=1).all())
    # top_p keeps the smallest set above p: p -> 0 is greedy
    assert hir.generate(model, prompt, max_new_tokens=12, do_sample=True, top_p=1e-6).tolist() == greedy.tolist()


def test_sampling_and_length_defaults_are_hfs():
    """Unset fields come from the model's generation_config, then HF's defaults (top_k=50
    when sampling; 20 new tokens when no length is given), as model.generate reads them."""
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    for seed in (1, 2):
        torch.manual_seed(seed)
        want = hf_generate(model, prompt, max_new_tokens=12, do_sample=True)
        torch.manual_seed(seed)
        assert hir.generate(model, prompt, max_new_tokens=12, do_sample=True).tolist() == want.tolist(), seed
    config = copy.deepcopy(model.generation_config)
    try:
        model.generation_config.top_k, model.generation_config.temperature = 3, 0.5  # the model's own defaults
        torch.manual_seed(3)
        want = hf_generate(model, prompt, max_new_tokens=12, do_sample=True)
        torch.manual_seed(3)
        assert hir.generate(model, prompt, max_new_tokens=12, do_sample=True).tolist() == want.tolist()
    finally:
        model.generation_config = config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HF's advice to set max_new_tokens
        got, want = hir.generate(model, prompt), hf_generate(model, prompt)
    assert got.shape == (2, 5 + 20) and got.tolist() == want.tolist()
    assert hir.generate(model, prompt, max_length=8).shape == (2, 8)


def test_bf16_logits_agree_with_hf_per_step():
    """bf16: each step's logits, read by hir.generate, against HF's forward over the same
    tokens (the whole sequence at once, no cache): max |diff| <= 0.05 * max |logit|
    (bf16 keeps 8 bits of mantissa; two layers of differently ordered sums)."""
    model = shared("llama", torch.bfloat16)
    prompt = torch.tensor(PROMPT)
    out = hir.generate(model, prompt, max_new_tokens=16, do_sample=False, return_dict_in_generate=True, output_logits=True)
    assert len(out.logits) == 16 and out.logits[0].dtype == torch.float32
    with torch.no_grad():
        reference = model(out.sequences).logits.float()
    for step, logits in enumerate(out.logits):
        want = reference[:, prompt.shape[1] - 1 + step]
        assert (logits - want).abs().max() <= 0.05 * want.abs().max(), step


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
        assert flipped.tolist() == hf_generate(model, prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False).tolist()
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
    assert gen.prefill_fn is not None and gen.prefill_fn.state["step.key_cache_0"].data_ptr() == gen.fn.state["key_cache_0"].data_ptr()
    assert len(CAUSAL_SDPA.findall(str(gen.prefill_program.module))) == TINY["num_hidden_layers"]
    assert not CAUSAL_SDPA.findall(str(gen.program.module))  # the decode program attends over the cache, masked
    example = (torch.zeros(2, 2, dtype=torch.long), torch.arange(2))  # the import cache tells the modules apart, whatever the options
    assert import_cache.fingerprint(gen.step, example, {}) != import_cache.fingerprint(gen.prefill_module, example, {})
    one = hir.generate(model, prompt[:, :1], max_new_tokens=6, do_sample=False)
    assert one.tolist() == hf_generate(model, prompt[:, :1], max_new_tokens=6, min_new_tokens=6, do_sample=False).tolist()


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
    """Where the causal prefill module's import fails (on CUDA in float32, torch.export's
    trace of SDPA's math path adds guards the token range fails), the prompt runs the
    decode program, with a warning naming why; the tokens are HF's still."""
    from hir.frontend import import_cache as cache_module

    real = cache_module.cached_from_torch

    def failing(module, *args, **kwargs):
        if isinstance(module, StaticCachePrefill):
            raise HirError("error: torch.export cannot trace StaticCachePrefill: a guard (test)")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(cache_module, "cached_from_torch", failing)
    model = tiny("llama")
    prompt = torch.tensor(PROMPT)
    hir.generate(model, prompt, max_new_tokens=6, do_sample=False)  # the first of its length: prefilled by PyTorch, nothing imported
    with pytest.warns(RuntimeWarning, match=r"prefill through the decode program.*cannot trace StaticCachePrefill: a guard \(test\)") as caught:
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
    with pytest.raises(hir.HirError, match=r"attention_mask must be a tensor of input_ids' shape \[2, 5\], got a 2-d tensor of torch.int64 of shape \[2, 4\]"):
        hir.generate(model, prompt, max_new_tokens=4, attention_mask=torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(hir.HirError, match=r"attention_mask must hold 0 \(padding\) and 1 \(a token\) only"):
        hir.generate(model, prompt, max_new_tokens=4, attention_mask=torch.full((2, 5), 2))
    with pytest.raises(hir.HirError, match="input_ids must be a \\[batch, tokens\\] tensor"):
        hir.generate(model, prompt[0], max_new_tokens=4)


def test_a_length_beyond_the_position_table_is_refused_up_front(monkeypatch):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=128, n_positions=16, n_embd=32, n_layer=1, n_head=4, bos_token_id=0, eos_token_id=None, pad_token_id=0)
    model = transformers.GPT2LMHeadModel(config).eval()
    monkeypatch.setattr(generate_module, "generator", lambda *args, **kwargs: pytest.fail("imported a model it should refuse"))
    with pytest.raises(hir.HirError, match=r"test_generate.py:\d+: error: hir.generate: GPT2LMHeadModel has a learned table of 16 positions .*"
                                           r"a prompt of 5 tokens and 12 new tokens need 17: ask for at most 11 new tokens"):
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
    assert gen.prefill_fn is not None and gen.prefill_fn.state["step.key_cache_0"].data_ptr() == gen.fn.state["key_cache_0"].data_ptr()
    # a StaticCacheStep moved to the GPU runs there (its cache layers follow)
    step = StaticCacheStep(model.cpu(), batch_size=1, max_cache_len=16).to("cuda")
    with torch.no_grad():
        assert step(torch.tensor([[3]], device="cuda"), torch.tensor([0], device="cuda")).device.type == "cuda"


def test_penalties_and_min_p_equal_hf():
    """repetition_penalty, no_repeat_ngram_size (greedy) and min_p (sampled) run HF's own
    processors: the tokens equal HF's, and each step's processed scores too."""
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    plain = hir.generate(model, prompt, max_new_tokens=16, do_sample=False)
    for options in ({"repetition_penalty": 1.5}, {"no_repeat_ngram_size": 2}, {"repetition_penalty": 0.8, "no_repeat_ngram_size": 3}):
        want = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False, **options)
        got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False, **options)
        assert got.tolist() == want.tolist(), options
    assert hir.generate(model, prompt, max_new_tokens=16, do_sample=False, repetition_penalty=1.5).tolist() != plain.tolist()  # it bites
    assert hir.generate(model, prompt, max_new_tokens=16, do_sample=False, no_repeat_ngram_size=2).tolist() != plain.tolist()
    for seed in (1, 2):
        torch.manual_seed(seed)
        want = hf_generate(model, prompt, max_new_tokens=12, do_sample=True, top_k=0, min_p=0.3, temperature=1.5)
        torch.manual_seed(seed)
        assert hir.generate(model, prompt, max_new_tokens=12, do_sample=True, top_k=0, min_p=0.3, temperature=1.5).tolist() == want.tolist(), seed
    # a left-padded batch: the penalty skips each row's padding, as HF's
    ids, mask = left_padded([[3, 17, 42, 9, 11], [5, 6]])
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, max_new_tokens=10, min_new_tokens=10, do_sample=False, repetition_penalty=1.3)
    assert hir.generate(model, ids, attention_mask=mask, max_new_tokens=10, do_sample=False, repetition_penalty=1.3).tolist() == want.tolist()


def test_scores_and_logits_equal_hf():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    options = dict(max_new_tokens=8, do_sample=False, repetition_penalty=1.5, eos_token_id=3, pad_token_id=1, min_new_tokens=4)
    want = hf_generate(model, prompt, return_dict_in_generate=True, output_scores=True, output_logits=True, **options)
    got = hir.generate(model, prompt, return_dict_in_generate=True, output_scores=True, output_logits=True, **options)
    assert got.sequences.tolist() == want.sequences.tolist()
    assert len(got.scores) == len(want.scores) == len(got.logits) == got.sequences.shape[1] - prompt.shape[1]
    for mine, hfs in zip(got.scores + got.logits, want.scores + want.logits):
        torch.testing.assert_close(mine, hfs, atol=1e-4, rtol=1e-4)
    assert bool((got.scores[0][:, 3] == float("-inf")).all())  # min_new_tokens held the stop token back
    only = hir.generate(model, prompt, return_dict_in_generate=True, output_scores=True, **options)
    assert only.logits is None and len(only.scores) == len(got.scores)


def word_tokenizer():
    """A tokenizer over the tiny models' 128 ids, built here (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {**{f"w{i}": i for i in range(126)}, "<pad>": 126, "<unk>": 127}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>")


def test_text_streamer_prints_what_hf_prints(capsys):
    model = shared("llama")
    tokenizer = word_tokenizer()
    prompt = tokenizer("w3 w17 w42 w9", return_tensors="pt").input_ids
    assert prompt.tolist() == [[3, 17, 42, 9]]
    hf_generate(model, prompt, max_new_tokens=10, min_new_tokens=10, do_sample=False, streamer=transformers.TextStreamer(tokenizer))
    want = capsys.readouterr().out
    got = hir.generate(model, prompt, max_new_tokens=10, do_sample=False, streamer=transformers.TextStreamer(tokenizer))
    assert capsys.readouterr().out == want
    assert want.startswith("w3 w17 w42 w9 ") and want.endswith("\n") and len(want.split()) == 14
    assert tokenizer.decode(got[0]) == want.strip()
    skipped = hir.generate(model, prompt, max_new_tokens=10, do_sample=False, streamer=transformers.TextStreamer(tokenizer, skip_prompt=True))
    assert capsys.readouterr().out == tokenizer.decode(skipped[0, 4:]) + "\n"
