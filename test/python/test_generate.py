"""``hir.generate``: HF ``generate``'s decoding through one compiled hir program over a static KV
cache, token for token. Greedy decoding equals ``model.generate(do_sample=False)`` in float32 (16
new tokens, three families, batch 2); stop tokens and padding as HF; sampling follows HF's
processors; in bf16 each step's logits agree with HF's within a stated tolerance; scores, logits
and the text streamer as HF's (test_generate_programs.py: the programs it makes)."""

import copy
import warnings

import pytest
import torch

import hir
from generate_util import PROMPT, hf_generate, left_padded, shared

transformers = pytest.importorskip("transformers")


# llama in the fast default; the other families (an import each) with HIR_TEST_SLOW=1
@pytest.mark.parametrize("family", ["llama", *(pytest.param(f, marks=pytest.mark.slow) for f in ("mistral", "qwen3"))])
def test_greedy_equals_hf_generate(family):
    model = shared(family)
    prompt = torch.tensor(PROMPT)
    got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False)
    want = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False)
    assert got.tolist() == want.tolist()
    # a shorter prompt and a single row reuse nothing they must not: still HF's tokens
    got = hir.generate(model, prompt[1:, :3], max_new_tokens=16, do_sample=False)
    assert (
        got.tolist()
        == hf_generate(model, prompt[1:, :3], max_new_tokens=16, min_new_tokens=16, do_sample=False).tolist()
    )


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
    got = hir.generate(
        model, prompt, max_new_tokens=8, min_new_tokens=6, do_sample=False, eos_token_id=stop, pad_token_id=1
    )
    want = hf_generate(
        model, prompt, max_new_tokens=8, min_new_tokens=6, do_sample=False, eos_token_id=stop, pad_token_id=1
    )
    assert got.tolist() == want.tolist()


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
        assert got[i, ids.shape[1] :].tolist() == alone[0, len(row) :].tolist(), i
    stop = int(want[1, ids.shape[1] + 2])
    with torch.no_grad():
        want = model.generate(
            ids, attention_mask=mask, max_new_tokens=10, do_sample=False, eos_token_id=stop, pad_token_id=1
        )
    assert (
        hir.generate(
            model, ids, attention_mask=mask, max_new_tokens=10, do_sample=False, eos_token_id=stop, pad_token_id=1
        ).tolist()
        == want.tolist()
    )
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
    assert (
        hir.generate(model, prompt, max_new_tokens=12, do_sample=True, temperature=3.0, top_k=1).tolist()
        == greedy.tolist()
    )
    # every sampled token is among the top 5 of its step's logits (teacher-forced through HF)
    out = hir.generate(
        model, prompt, max_new_tokens=12, do_sample=True, top_k=5, return_dict_in_generate=True, output_logits=True
    )
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
    out = hir.generate(
        model, prompt, max_new_tokens=16, do_sample=False, return_dict_in_generate=True, output_logits=True
    )
    assert len(out.logits) == 16 and out.logits[0].dtype == torch.float32
    with torch.no_grad():
        reference = model(out.sequences).logits.float()
    for step, logits in enumerate(out.logits):
        want = reference[:, prompt.shape[1] - 1 + step]
        assert (logits - want).abs().max() <= 0.05 * want.abs().max(), step


def test_penalties_and_min_p_equal_hf():
    """repetition_penalty, no_repeat_ngram_size (greedy) and min_p (sampled) run HF's own
    processors: the tokens equal HF's, and each step's processed scores too."""
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    plain = hir.generate(model, prompt, max_new_tokens=16, do_sample=False)
    penalized = []
    for options in (
        {"repetition_penalty": 1.5},
        {"no_repeat_ngram_size": 2},
        {"repetition_penalty": 0.8, "no_repeat_ngram_size": 3},
    ):
        want = hf_generate(model, prompt, max_new_tokens=16, min_new_tokens=16, do_sample=False, **options)
        got = hir.generate(model, prompt, max_new_tokens=16, do_sample=False, **options)
        assert got.tolist() == want.tolist(), options
        penalized.append(got.tolist())
    assert penalized[0] != plain.tolist() and penalized[1] != plain.tolist()  # each bites
    for seed in (1, 2):
        torch.manual_seed(seed)
        want = hf_generate(model, prompt, max_new_tokens=12, do_sample=True, top_k=0, min_p=0.3, temperature=1.5)
        torch.manual_seed(seed)
        assert (
            hir.generate(model, prompt, max_new_tokens=12, do_sample=True, top_k=0, min_p=0.3, temperature=1.5).tolist()
            == want.tolist()
        ), seed
    # a left-padded batch: the penalty skips each row's padding, as HF's
    ids, mask = left_padded([[3, 17, 42, 9, 11], [5, 6]])
    with torch.no_grad():
        want = model.generate(
            ids, attention_mask=mask, max_new_tokens=10, min_new_tokens=10, do_sample=False, repetition_penalty=1.3
        )
    assert (
        hir.generate(
            model, ids, attention_mask=mask, max_new_tokens=10, do_sample=False, repetition_penalty=1.3
        ).tolist()
        == want.tolist()
    )


def test_scores_and_logits_equal_hf():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    options = dict(
        max_new_tokens=8, do_sample=False, repetition_penalty=1.5, eos_token_id=3, pad_token_id=1, min_new_tokens=4
    )
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
    hf_generate(
        model,
        prompt,
        max_new_tokens=10,
        min_new_tokens=10,
        do_sample=False,
        streamer=transformers.TextStreamer(tokenizer),
    )
    want = capsys.readouterr().out
    got = hir.generate(model, prompt, max_new_tokens=10, do_sample=False, streamer=transformers.TextStreamer(tokenizer))
    assert capsys.readouterr().out == want
    assert want.startswith("w3 w17 w42 w9 ") and want.endswith("\n") and len(want.split()) == 14
    assert tokenizer.decode(got[0]) == want.strip()
    skipped = hir.generate(
        model,
        prompt,
        max_new_tokens=10,
        do_sample=False,
        streamer=transformers.TextStreamer(tokenizer, skip_prompt=True),
    )
    assert capsys.readouterr().out == tokenizer.decode(skipped[0, 4:]) + "\n"
