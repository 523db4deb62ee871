"""``hir.generate``: a Hugging Face causal LM's ``generate`` (greedy, or sampled with
temperature / top-k / top-p; stop tokens; batch > 1) run through hir programs over a static
KV cache.

How: the model is wrapped in a :class:`~hir.frontend.hf_decode.StaticCacheStep` (the
logits of the last position only) and imported on each batch size and cache length's own
shapes (one token per row, every dim static: the cheapest export, see
:mod:`hir.frontend.generators`): this program runs every decode step; it is compiled with
its state bound (:class:`~hir.frontend.compiled.CompiledProgram`):
on CUDA each decode step is a CUDA graph replay on the same buffers (the second step captures
it), the compute compiled by inductor. The prefill (a prompt of 2 tokens or more) runs
:class:`~hir.frontend.hf_decode.StaticCachePrefill` over the same step (attention over the
prompt's own tokens, causally, no mask: HF's eager prefill; the step's export would attend
over the whole cache through a mask), so it fills the cache the decode steps read. The
first prompt of each length runs it by PyTorch, op by op, on the step's own buffers (HF's
eager prefill, exactly): its compiled regions are compiled per prompt length, so a program
for a length met once would cost a first call an export, an import and a whole-model
compile for one run. A length met again runs a second program, imported from it (at that
prompt), compiled with the same options and bound to the same tensors (where the decode
program holds copies of the step's tensors on another device, every prompt runs it).
A left-padded batch (prompts of different lengths: zeros at the start of
``attention_mask``'s rows, what HF tokenizers give decoder models) runs programs of its own
that also take the padding mask over the cache and each row's positions, as HF's
``generate`` derives them (the mask's cumsum; the padding masked for the whole generation),
and prefills through the decode program. Models ``StaticCachePrefill`` refuses
(sliding-window attention, not SDPA, ...) and 1-token prompts prefill through the decode
program; so does a model whose prefill module torch.export cannot trace with a dynamic token
count, with a ``RuntimeWarning`` naming why.
The generation config is HF's (the model's ``generation_config``, then HF's defaults such as
``top_k=50``, and 20 new tokens where no length is given, then the call's arguments: HF's
own rule), and the tokens are chosen as HF's ``generate`` chooses them, with HF's own logits processors
(:mod:`hir.frontend.generate_processors`: repetition penalty, no-repeat n-grams, minimum
lengths, temperature, top-k, top-p, min-p) on float32 logits, ``argmax`` or
``torch.multinomial``; a ``streamer`` gets the prompt, then each step's tokens; a finished
row gets ``pad_token_id``; decoding stops when every row has produced a stop token or after
``max_new_tokens``. Greedy decoding equals ``model.generate(..., do_sample=False)`` token
for token (``test/python/test_generate.py``).

Whether every row has finished is read one step late on CUDA (a non-blocking copy), so the
host never waits for the step it has just queued; a step run after the last row finished
is dropped from the result.

The decode program is imported and compiled per batch size and cache length bucket, the
prefill program imported once per model (dynamic dims) and compiled per bucket
(:mod:`hir.frontend.generators`); the imports are cached on disk
(:mod:`hir.frontend.import_cache`), so another process imports nothing.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch

from hir.core import HirError
from hir.frontend.generate_processors import UNSUPPORTED, logits_processors, refuse_unsupported
from hir.frontend.generators import Generator, generator
from hir.frontend.hf_cache import model_config

if TYPE_CHECKING:
    from hir.frontend.hf_cache import CausalLM

_ARGUMENTS = (
    "max_new_tokens",
    "max_length",
    "min_new_tokens",
    "min_length",
    "do_sample",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "repetition_penalty",
    "no_repeat_ngram_size",
    "eos_token_id",
    "pad_token_id",
    "return_dict_in_generate",
    "output_scores",
    "output_logits",
)


@dataclass
class GenerateOutput:
    """``return_dict_in_generate=True``: the sequences (prompt then new tokens) and, with
    ``output_scores=True``, each step's processed scores (what the token was chosen from),
    with ``output_logits=True`` its raw logits (each ``[batch, vocab]`` float32), as HF's
    ``GenerateDecoderOnlyOutput``; ``cache`` (also ``past_key_values``, its older name, as
    in HF's): a transformers ``DynamicCache`` of the keys and values of every position the
    model read (the sequences but the last token; a sliding-window layer keeps its last
    ``window - 1``, as HF's), copies of hir's static cache: what HF's ``generate`` returns
    with its default (dynamic) cache; HF's static cache holds the same in its first positions."""

    sequences: torch.Tensor
    scores: tuple | None = None
    logits: tuple | None = None
    cache: Any = None

    @property
    def past_key_values(self) -> Any:
        """:attr:`cache` (HF's older name of the field)."""
        return self.cache


def generate(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    generation_config: Any = None,
    attention_mask: torch.Tensor | None = None,
    streamer: Any = None,
    return_dict_in_generate: bool | None = None,
    output_scores: bool | None = None,
    output_logits: bool | None = None,
    device: str | None = None,
    max_cache_len: int | None = None,
    compile_options: dict | None = None,
    **kwargs: Any,
) -> Any:
    """``model.generate(input_ids, ...)`` through hir (see the module docstring). HF's
    arguments: ``max_new_tokens`` / ``max_length``, ``min_new_tokens``, ``do_sample``,
    ``temperature``, ``top_k``, ``top_p``, ``min_p``, ``repetition_penalty``,
    ``no_repeat_ngram_size``, ``eos_token_id`` (an int or a list),
    ``pad_token_id``, ``generation_config`` (unset fields: the model's, then HF's defaults:
    sampling keeps the 50 likeliest tokens unless ``top_k`` says otherwise; no length: 20
    new tokens, HF's ``max_length`` default), ``attention_mask`` (zeros:
    left padding; none given: inferred from ``pad_token_id`` in the ids, as HF's),
    ``streamer`` (``put`` the prompt, then each step's tokens; ``end``),
    ``return_dict_in_generate`` with ``output_scores`` / ``output_logits`` (unset: the
    generation config's, as every field). hir's: ``device``
    (default: the model's), ``max_cache_len``, ``compile_options`` (``CompiledProgram``'s:
    ``graph``, ``compile_kernels``, ``autotune``, ``regional``...). Returns the ``[batch, prompt + new]``
    token ids (a :class:`GenerateOutput` with ``return_dict_in_generate=True``)."""
    kwargs.update(
        {
            k: v
            for k, v in (
                ("return_dict_in_generate", return_dict_in_generate),
                ("output_scores", output_scores),
                ("output_logits", output_logits),
            )
            if v is not None
        }
    )
    default_length = (
        kwargs.get("max_length") is None
        and getattr(generation_config, "max_length", None) is None
        and getattr(getattr(model, "generation_config", None), "max_length", None) is None
    )
    config = _config(model, generation_config, kwargs)
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
        raise HirError(
            "error: hir.generate: input_ids must be a [batch, tokens] tensor of token ids (torch.long), got "
            f"{_describe(input_ids)}"
        )
    mask = _padding(_attention_mask(model, config, attention_mask, input_ids))
    batch, prompt = input_ids.shape
    new = _new_tokens(model, config, prompt, default_length)
    if new < 1:
        raise HirError(
            f"error: hir.generate: nothing to generate: max_new_tokens={config.max_new_tokens}, "
            f"max_length={config.max_length}, prompt of {prompt} tokens"
        )
    limit = _position_limit(model)
    if limit is not None and prompt + new > limit:
        raise HirError(
            f"error: hir.generate: {type(model).__name__} has a learned table of {limit} positions (its config's "
            f"n_positions / max_position_embeddings); a prompt of {prompt} tokens and {new} new tokens need "
            f"{prompt + new}: ask for at most {max(limit - prompt, 0)} new tokens"
        )
    gen = generator(model, batch, prompt + new, device, max_cache_len, compile_options, padded=mask is not None)
    keep = tuple(
        name for name, wanted in (("scores", config.output_scores), ("logits", config.output_logits)) if wanted
    )
    return _decode(
        gen,
        input_ids.to(gen.device),
        None if mask is None else mask.to(gen.device),
        new,
        config,
        streamer,
        config.return_dict_in_generate,
        keep,
    )


def _config(model: torch.nn.Module, generation_config: Any, kwargs: dict) -> Any:
    """The generation config ``generate`` would use, by HF's own rule
    (``GenerationMixin._prepare_generation_config``): the given config (or a fresh one), its
    unset fields from the model's ``generation_config``, then from HF's global defaults
    (``top_k=50``, ``max_length=20``...), then the keyword overrides; refusing what
    hir.generate does not run."""
    unknown = [k for k in kwargs if k not in _ARGUMENTS and k not in UNSUPPORTED and k != "use_cache"]
    if unknown:
        raise HirError(
            f"error: hir.generate: unsupported argument(s) {', '.join(unknown)} (supported: {', '.join(_ARGUMENTS)}, "
            "generation_config, attention_mask, streamer, device, max_cache_len, compile_options)"
        )
    prepare = getattr(model, "_prepare_generation_config", None)
    if getattr(model, "generation_config", None) is None or prepare is None:
        raise HirError(
            f"error: hir.generate: {type(model).__name__} has no generation_config (hir.generate takes Hugging Face "
            "causal LMs)"
        )
    try:
        config, _ = prepare(generation_config, **kwargs)
    except ValueError as err:  # a model config carrying generation fields (HF refuses it too)
        raise HirError(f"error: hir.generate: {err}") from None
    refuse_unsupported(config)
    return config


def _new_tokens(model: torch.nn.Module, config: Any, prompt: int, default_length: bool) -> int:
    """How many tokens to generate, as ``GenerationMixin._prepare_generated_length``:
    ``max_new_tokens``, else ``max_length`` less the prompt, where a ``max_length`` nobody set
    (HF's default, 20) counts new tokens (capped at ``max_position_embeddings`` in all)."""
    if config.max_new_tokens is not None:
        return config.max_new_tokens
    if not default_length:
        return config.max_length - prompt
    total = config.max_length + prompt
    limit = getattr(model_config(model), "max_position_embeddings", None)
    return (min(total, limit) if isinstance(limit, int) else total) - prompt


_POSITION_TABLES = ("wpe", "embed_positions", "position_embeddings")  # HF's names of a learned position embedding


def _position_limit(model: torch.nn.Module) -> int | None:
    """How many positions the model's learned position table holds (GPT-2's ``n_positions``,
    OPT's ``max_position_embeddings``); None where positions are computed (rotary, ALiBi:
    any length runs, as in HF)."""
    config = model_config(model)
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    tables = any(
        isinstance(m, torch.nn.Embedding) and name.rsplit(".", 1)[-1] in _POSITION_TABLES
        for name, m in model.named_modules()
    )
    return limit if tables else None


def _attention_mask(
    model: torch.nn.Module, config: Any, attention_mask: torch.Tensor | None, input_ids: torch.Tensor
) -> torch.Tensor:
    """The prompt's attention mask as HF's ``generate`` makes it, with HF's warnings (its
    own ``_prepare_special_tokens`` and ``_prepare_attention_mask_for_generation``, and its
    right-padding check): the given one, else zeros where the ids are ``pad_token_id``
    (unless the pad token is a stop token, or does not occur: all ones)."""
    from transformers.generation.utils import logger

    given = attention_mask is not None
    if given and (not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape):
        raise HirError(
            f"error: hir.generate: attention_mask must be a tensor of input_ids' shape {list(input_ids.shape)}, got "
            f"{_describe(attention_mask)}"
            f"{f' of shape {list(attention_mask.shape)}' if isinstance(attention_mask, torch.Tensor) else ''}"
        )
    hf = cast("CausalLM", model)  # a Hugging Face LM (_config refuses others)
    hf._prepare_special_tokens(config, given, device=input_ids.device, batch_size=input_ids.shape[0])
    pad = config._pad_token_tensor
    if pad is not None and input_ids.shape[0] > 1:
        right = bool((attention_mask[:, -1] == 0).any()) if given else bool((input_ids[:, -1] == pad).any())
        if right:
            logger.warning(
                "A decoder-only architecture is being used, but right-padding was detected! For correct "
                "generation results, please set `padding_side='left'` when initializing the tokenizer."
            )
    if given:
        return attention_mask
    return hf._prepare_attention_mask_for_generation(input_ids, config, {})


def _padding(attention_mask: torch.Tensor) -> torch.Tensor | None:
    """The prompt's attention mask where it has padding (zeros: a left-padded batch of
    prompts of different lengths); None where there is none (all ones)."""
    if not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise HirError("error: hir.generate: attention_mask must hold 0 (padding) and 1 (a token) only")
    return None if bool((attention_mask == 1).all()) else attention_mask.long()


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dim()}-d tensor of {value.dtype}"
    return type(value).__name__


def _decode(
    gen: Generator,
    input_ids: torch.Tensor,
    mask: torch.Tensor | None,
    new: int,
    config: Any,
    streamer: Any,
    as_dict: bool,
    keep: tuple,
) -> Any:
    """The decoding loop (see the module docstring); ``mask``: the prompt's padding;
    ``keep``: what a :class:`GenerateOutput` holds besides the sequences (``"scores"``, ``"logits"``)."""
    batch, prompt = input_ids.shape
    dev = input_ids.device
    eos_ids = config.eos_token_id
    eos = (
        None if eos_ids is None else torch.tensor([eos_ids] if isinstance(eos_ids, int) else list(eos_ids), device=dev)
    )
    pad = config.pad_token_id if config.pad_token_id is not None else (int(eos[0]) if eos is not None else 0)
    processors = logits_processors(config, prompt, eos, mask)
    sequences = torch.empty(batch, prompt + new, dtype=torch.long, device=dev)
    sequences[:, :prompt] = input_ids
    unfinished = torch.ones(batch, dtype=torch.bool, device=dev)
    lagged = dev.type == "cuda" and streamer is None  # a streamer reads each token as it comes: nothing to trim
    done = torch.zeros((), dtype=torch.bool, pin_memory=lagged)  # every row finished (a step late on CUDA)
    ready = torch.cuda.Event() if lagged else None
    kept: dict = {name: [] for name in keep}
    padding: tuple = ()
    if mask is not None:  # HF's: positions count each row's tokens; padding masked for the whole generation
        cache_mask = torch.ones(batch, gen.step.key_cache_0.shape[2], dtype=torch.long, device=dev)
        cache_mask[:, :prompt] = mask
        positions = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        padding = (cache_mask, positions)
    if streamer is not None:
        streamer.put(input_ids.cpu())
    logits = gen.prefill(input_ids, *padding)
    if mask is not None:
        padding = (cache_mask, positions[:, -1:] + 1)
    position = torch.tensor([prompt], device=dev)
    length = prompt
    for _ in range(new):
        if "logits" in kept:
            kept["logits"].append(logits.clone())
        scores = processors(sequences[:, :length], logits)
        if "scores" in kept:
            kept["scores"].append(scores)
        if config.do_sample:
            tokens = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        else:
            tokens = torch.argmax(scores, dim=-1)
        if eos is not None:
            tokens = torch.where(unfinished, tokens, pad)
            unfinished &= ~torch.isin(tokens, eos)
        sequences[:, length] = tokens
        length += 1
        if streamer is not None:
            streamer.put(tokens.cpu())
        if length == prompt + new:
            break
        if eos is not None:
            if ready is not None:  # (lagged)
                if _finished(done, ready):
                    break
                done.copy_(~unfinished.any(), non_blocking=True)
                ready.record()
            elif not unfinished.any():
                break
        logits = gen(tokens[:, None], position, *padding)
        position += 1
        if padding:
            padding[1].add_(1)
    if eos is not None and lagged:
        length = _trim(sequences, prompt, length, eos, pad)
    if streamer is not None:
        streamer.end()
    out = sequences[:, :length]
    if not as_dict:
        return out
    return GenerateOutput(
        out,
        cache=_dynamic_cache(gen, length - 1),
        **{name: tuple(values[: length - prompt]) for name, values in kept.items()},
    )


def _dynamic_cache(gen: Generator, positions: int) -> Any:
    """A transformers ``DynamicCache`` (of the model's config, as HF's ``generate`` makes it)
    holding copies of the generator's cache's first ``positions`` keys and values per layer
    (see :class:`GenerateOutput`)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model_config(gen.step.model).get_text_config(decoder=True))
    for i in gen.step.cached_layers:
        keys, values = (gen.fn.state[f"{kind}_cache_{i}"][:, :, :positions].clone() for kind in ("key", "value"))
        cache.update(keys, values, i)
    return cache


def _finished(done: torch.Tensor, ready: Any) -> bool:
    """Whether every row had finished at the step before the last (its flag's copy done)."""
    ready.synchronize()
    return bool(done)


def _trim(sequences: torch.Tensor, prompt: int, length: int, eos: torch.Tensor, pad: int) -> int:
    """The length HF's loop stops at: after the first step at which every row has produced
    a stop token (the lagged check may have run one step more)."""
    new = sequences[:, prompt:length]
    stopped = torch.isin(new, eos).int().cummax(dim=1).values.bool()  # row finished by step j
    all_done = stopped.all(dim=0).nonzero()
    return prompt + int(all_done[0]) + 1 if all_done.numel() else length
