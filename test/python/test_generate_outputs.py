"""``hir.generate``'s outputs and inputs as HF's ``generate`` gives and reads them: the cache
it returns (``return_dict_in_generate=True``: a ``DynamicCache`` equal to HF's, layer by
layer), ``return_dict_in_generate`` / ``output_scores`` / ``output_logits`` read from the
model's or the passed generation config, and the attention mask inferred from pad tokens
when none is passed, with HF's warnings (tiny random Llama, float32, CPU)."""

import contextlib
import copy
import io
import logging

import pytest
import torch

import hir
from generate_util import PROMPT, shared, transformers
from hir.frontend.generate import GenerateOutput


@contextlib.contextmanager
def captured(logger: logging.Logger):
    """What ``logger`` writes inside the block (transformers.testing_utils' CaptureLogger,
    whose module needs transformers' training requirements)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def hf(model, ids, **options):
    with torch.no_grad():
        return model.generate(ids, **options)


def assert_caches_equal(mine, hfs, positions=None):
    """Layer by layer, the keys and values (of HF's first ``positions``, for a static cache)."""
    assert len(mine.layers) == len(hfs.layers)
    for i, (a, b) in enumerate(zip(mine.layers, hfs.layers)):
        for got, want in ((a.keys, b.keys), (a.values, b.values)):
            want = want if positions is None else want[:, :, :positions]
            assert got.shape == want.shape, (i, got.shape, want.shape)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_the_cache_equals_hfs():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    options = dict(max_new_tokens=8, min_new_tokens=8, do_sample=False, return_dict_in_generate=True)
    got = hir.generate(model, prompt, **options)
    want = hf(model, prompt, attention_mask=torch.ones_like(prompt), **options)
    assert got.sequences.tolist() == want.sequences.tolist()
    assert isinstance(got.cache, transformers.DynamicCache) and got.past_key_values is got.cache
    assert got.cache.layers[0].keys.shape == (2, 2, 5 + 8 - 1, 8)  # every position read: the last token never is
    assert_caches_equal(got.cache, want.cache)
    static = hf(model, prompt, attention_mask=torch.ones_like(prompt), cache_implementation="static", **options)
    assert isinstance(static.cache, transformers.StaticCache)
    assert_caches_equal(got.cache, static.cache, positions=5 + 8 - 1)
    # stopped early by a stop token; a left-padded batch (the padding's positions too)
    stop = [int(want.sequences[0, 7]), int(want.sequences[1, 8])]  # every row stops by its 4th new token
    early = dict(options, min_new_tokens=0, eos_token_id=stop, pad_token_id=1)
    got, want = hir.generate(model, prompt, **early), hf(model, prompt, attention_mask=torch.ones_like(prompt), **early)
    assert got.sequences.tolist() == want.sequences.tolist() and got.sequences.shape[1] < 5 + 8
    assert_caches_equal(got.cache, want.cache)
    ids, mask = torch.tensor([[0, 0, 3, 17, 42], [5, 6, 7, 8, 120]]), torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    got, want = hir.generate(model, ids, attention_mask=mask, **options), hf(model, ids, attention_mask=mask, **options)
    assert got.sequences.tolist() == want.sequences.tolist()
    assert_caches_equal(got.cache, want.cache)
    again = hir.generate(model, prompt, **options)  # the returned cache is a copy: the next call leaves it as it was
    assert again.cache.layers[0].keys.data_ptr() != got.cache.layers[0].keys.data_ptr()
    assert_caches_equal(got.cache, want.cache)


@pytest.mark.slow
def test_a_sliding_window_cache_keeps_its_window_as_hfs():
    model = shared("mistral_window_4")
    prompt = torch.tensor(PROMPT)
    options = dict(max_new_tokens=8, min_new_tokens=8, do_sample=False, return_dict_in_generate=True)
    got, want = (
        hir.generate(model, prompt, **options),
        hf(model, prompt, attention_mask=torch.ones_like(prompt), **options),
    )
    assert got.sequences.tolist() == want.sequences.tolist()
    assert got.cache.layers[0].keys.shape[2] == 3  # window - 1, as HF's DynamicSlidingWindowLayer keeps
    assert_caches_equal(got.cache, want.cache)


def test_return_dict_and_outputs_come_from_the_generation_config():
    model = shared("llama")
    prompt = torch.tensor(PROMPT)
    saved = copy.deepcopy(model.generation_config)
    try:
        model.generation_config.return_dict_in_generate = True
        model.generation_config.output_scores = True
        got, want = (
            hir.generate(model, prompt, max_new_tokens=4, do_sample=False),
            hf(model, prompt, max_new_tokens=4, do_sample=False),
        )
        assert isinstance(got, GenerateOutput) and got.sequences.tolist() == want.sequences.tolist()
        assert got.logits is None and want.logits is None and len(got.scores) == len(want.scores) == 4
        torch.testing.assert_close(got.scores, want.scores)
        # the call's arguments override the model's config, as in HF
        got, want = (
            hir.generate(model, prompt, max_new_tokens=4, return_dict_in_generate=False),
            hf(model, prompt, max_new_tokens=4, return_dict_in_generate=False),
        )
        assert isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) and got.tolist() == want.tolist()
    finally:
        model.generation_config = saved
    passed = transformers.GenerationConfig(
        max_new_tokens=4, do_sample=False, return_dict_in_generate=True, output_logits=True
    )
    got, want = hir.generate(model, prompt, generation_config=passed), hf(model, prompt, generation_config=passed)
    assert got.scores is None and want.scores is None and len(got.logits) == len(want.logits) == 4
    torch.testing.assert_close(got.logits, want.logits)
    assert_caches_equal(got.cache, want.cache)
    with pytest.raises(hir.HirError, match=r"output_attentions=True is not supported"):
        hir.generate(model, prompt, max_new_tokens=4, output_attentions=True)


def test_the_mask_is_inferred_from_pad_tokens_as_hfs():
    """No attention_mask: the pad token's positions are masked (pad_token_id 0, left
    padding), each row equal to HF's (which infers the same) and to HF's of its prompt alone."""
    model = shared("llama")
    rows = [[3, 17, 42, 9, 11], [5, 6], [7, 8, 120]]
    ids = torch.tensor([[0] * (5 - len(row)) + row for row in rows])
    got = hir.generate(model, ids, max_new_tokens=6, do_sample=False)
    assert got.tolist() == hf(model, ids, max_new_tokens=6, min_new_tokens=6, do_sample=False).tolist()
    for i, row in enumerate(rows):
        alone = hf(model, torch.tensor([row]), max_new_tokens=6, min_new_tokens=6, do_sample=False)
        assert got[i, 5:].tolist() == alone[0, len(row) :].tolist(), i
    # a pad token that is also the stop token cannot mark padding: all ones, as HF (and its warning's case)
    same = dict(max_new_tokens=6, do_sample=False, pad_token_id=0, eos_token_id=0)
    assert hir.generate(model, ids, **same).tolist() == hf(model, ids, **same).tolist()


@pytest.mark.parametrize("case", ["no pad token", "right padding"])
def test_hfs_mask_warnings(case):
    """HF's warnings where the mask cannot be trusted, the same text on HF's logger."""
    from transformers.generation import utils

    model = shared("llama")
    ids = torch.tensor(PROMPT)
    options = dict(max_new_tokens=3, do_sample=False)
    if case == "no pad token":  # no mask, no pad token, a stop token: HF pads with it and warns
        options.update(pad_token_id=None, eos_token_id=2)
        saved, model.generation_config.pad_token_id = model.generation_config.pad_token_id, None
    else:
        ids[1, -1] = 0  # the last token of a row is the pad token
        saved = model.generation_config.pad_token_id
    try:
        with captured(utils.logger) as hf_log:
            want = hf(model, ids, **options)
        with captured(utils.logger) as hir_log:
            got = hir.generate(model, ids, **options)
    finally:
        model.generation_config.pad_token_id = saved
    assert got.tolist() == want.tolist()
    expected = (
        "attention mask and the pad token id were not set" if case == "no pad token" else "right-padding was detected"
    )
    assert expected in hf_log.getvalue() and hir_log.getvalue() == hf_log.getvalue()
