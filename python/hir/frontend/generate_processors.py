"""The logits processors :func:`hir.generate` runs: Hugging Face's own, chosen and ordered as
``GenerationMixin._get_logits_processor`` chooses them for a generation config, so each step's
scores (and the token chosen from them) are HF's: repetition penalty, no-repeat n-grams,
minimum lengths, then, when sampling, temperature, top-k, top-p and min-p.

:data:`UNSUPPORTED` names the generation config fields whose processors (or decoding modes:
beam search, assisted decoding) hir.generate does not run, with the value that turns each
off; a config setting one is refused by name (:func:`refuse_unsupported`).
"""

from typing import Any

import torch

from hir.core import HirError

UNSUPPORTED = {
    "num_beams": 1,
    "num_return_sequences": 1,
    "bad_words_ids": None,
    "suppress_tokens": None,
    "begin_suppress_tokens": None,
    "forced_bos_token_id": None,
    "forced_eos_token_id": None,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "top_h": None,
    "sequence_bias": None,
    "guidance_scale": None,
    "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0,
    "exponential_decay_length_penalty": None,
    "renormalize_logits": False,
    "remove_invalid_values": False,
    "penalty_alpha": None,
    "watermarking_config": None,
    "assistant_model": None,
    "prompt_lookup_num_tokens": None,
    "output_attentions": False,
    "output_hidden_states": False,
}


def refuse_unsupported(config: Any) -> None:
    """An :class:`HirError` naming the first field of ``config`` that turns on something
    hir.generate does not run (beam search is one)."""
    for key, off in UNSUPPORTED.items():
        value = getattr(config, key, off)
        if value is not None and value != off:
            raise HirError(
                f"error: hir.generate: {key}={value!r} is not supported (hir.generate runs greedy "
                "and sampled decoding with temperature, top-k, top-p, min-p, repetition_penalty, "
                f"no_repeat_ngram_size and minimum lengths; leave {key} at {off!r})"
            )


def logits_processors(config: Any, prompt: int, eos: torch.Tensor | None, attention_mask: torch.Tensor | None) -> Any:
    """HF's ``LogitsProcessorList`` for ``config`` and a prompt of ``prompt`` positions
    (``attention_mask``: the call's, whose leading zeros the repetition penalty skips, as
    HF's), in ``GenerationMixin._get_logits_processor``'s order."""
    from transformers.generation.logits_process import (  # transformers loads only for Hugging Face models
        LogitsProcessorList,
        MinLengthLogitsProcessor,
        MinNewTokensLengthLogitsProcessor,
        MinPLogitsWarper,
        NoRepeatNGramLogitsProcessor,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    processors = LogitsProcessorList()
    if config.repetition_penalty is not None and config.repetition_penalty != 1.0:
        padding = (attention_mask != 0).int().argmax(dim=1) if attention_mask is not None else None
        processors.append(RepetitionPenaltyLogitsProcessor(config.repetition_penalty, prompt_ignore_length=padding))
    if config.no_repeat_ngram_size is not None and config.no_repeat_ngram_size > 0:
        processors.append(NoRepeatNGramLogitsProcessor(config.no_repeat_ngram_size))
    if eos is not None and config.min_length is not None and config.min_length > 0:
        processors.append(MinLengthLogitsProcessor(config.min_length, eos, device=str(eos.device)))
    if eos is not None and config.min_new_tokens is not None and config.min_new_tokens > 0:
        processors.append(MinNewTokensLengthLogitsProcessor(prompt, config.min_new_tokens, eos, device=str(eos.device)))
    if config.do_sample:
        if config.temperature is not None and config.temperature != 1.0:
            processors.append(TemperatureLogitsWarper(config.temperature))
        if config.top_k is not None and config.top_k != 0:
            processors.append(TopKLogitsWarper(top_k=config.top_k, min_tokens_to_keep=1))
        if config.top_p is not None and config.top_p < 1.0:
            processors.append(TopPLogitsWarper(top_p=config.top_p, min_tokens_to_keep=1))
        if config.min_p is not None:
            processors.append(MinPLogitsWarper(min_p=config.min_p, min_tokens_to_keep=1))
    return processors
