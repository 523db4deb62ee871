"""``hir.generate``: a Hugging Face causal LM's ``generate`` (greedy, or sampled with
temperature / top-k / top-p; stop tokens; batch > 1) run through hir programs over a static
KV cache.

How: the model is wrapped in a :class:`~hir.frontend.hf_decode.StaticCacheStep` (batch size
and cache length fixed, the logits of the last position only) and imported ONCE with a
dynamic token count: this program runs every decode step (one token); it is compiled once
with its state bound (:class:`~hir.frontend.compiled.CompiledProgram`): on CUDA each decode
step is a CUDA graph replay on the same buffers (the second step captures it), the compute
compiled by inductor. The prefill (a prompt of 2 tokens or more) runs a second program,
imported (at the first prefill) from :class:`~hir.frontend.hf_decode.StaticCachePrefill`
over the same step (attention over the prompt's own tokens, causally, no mask: HF's eager
prefill; the step's export would attend over the whole cache through a mask), compiled with
the same options and bound to the same tensors, so it fills the cache the decode steps read.
A left-padded batch (prompts of different lengths: zeros at the start of
``attention_mask``'s rows, what HF tokenizers give decoder models) runs programs of its own
that also take the padding mask over the cache and each row's positions, as HF's
``generate`` derives them (the mask's cumsum; the padding masked for the whole generation),
and prefills through the decode program. Models ``StaticCachePrefill`` refuses (sliding-window attention, not SDPA, ...) and 1-token
prompts prefill through the decode program; so does a model whose prefill module torch.export
cannot trace with a dynamic token count (float32 on CUDA: SDPA's math path adds shape guards
the token range fails), with a ``RuntimeWarning`` naming why.
The generation config is HF's (the model's ``generation_config``, then HF's defaults such as
``top_k=50``, and 20 new tokens where no length is given, then the call's arguments: HF's
own rule), and the
tokens are chosen as HF's ``generate`` chooses them, with HF's own logits processors
(:mod:`hir.frontend.generate_processors`: repetition penalty, no-repeat n-grams, minimum
lengths, temperature, top-k, top-p, min-p) on float32 logits, ``argmax`` or
``torch.multinomial``; a ``streamer`` gets the prompt, then each step's tokens; a finished
row gets ``pad_token_id``; decoding stops when every row has produced a stop token or after
``max_new_tokens``. Greedy decoding equals ``model.generate(..., do_sample=False)`` token
for token (``test/python/test_generate.py``).

Whether every row has finished is read one step late on CUDA (a non-blocking copy), so the
host never waits for the step it has just queued; a step run after the last row finished
is dropped from the result.

The import is cached on disk (:mod:`hir.frontend.import_cache`), so another process
imports nothing; the compiled programs are kept per model (until it is garbage collected), per batch size,
cache length (the tokens needed, rounded up to a power of two, at least 64), device,
options and whether the batch is padded, and rebuilt when a parameter of the model is replaced or written in place.
"""

import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Optional

import torch

from hir.core import HirError
from hir.dialect.context import api_stacklevel
from hir.frontend.generate_processors import UNSUPPORTED, logits_processors, refuse_unsupported
from hir.frontend.hf_decode import PrefillRefused, StaticCachePrefill, StaticCacheStep
from hir.interpreter.backends.process_groups import default_device
from hir.frontend.import_cache import cached_from_torch
from hir.interpreter.kernels import warm_compile_workers

_ARGUMENTS = ("max_new_tokens", "max_length", "min_new_tokens", "min_length", "do_sample", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
              "no_repeat_ngram_size", "eos_token_id", "pad_token_id")


@dataclass
class GenerateOutput:
    """``return_dict_in_generate=True``: the sequences (prompt then new tokens) and, with
    ``output_scores=True``, each step's processed scores (what the token was chosen from),
    with ``output_logits=True`` its raw logits (each ``[batch, vocab]`` float32), as HF's
    ``GenerateDecoderOnlyOutput``."""

    sequences: torch.Tensor
    scores: Optional[tuple] = None
    logits: Optional[tuple] = None


class Generator:
    """The compiled decoding program of ``model`` for one batch size and cache length."""

    def __init__(self, model: torch.nn.Module, batch_size: int, max_cache_len: int, device: torch.device, options: dict, padded: bool = False) -> None:
        warm_compile_workers(options.get("compile_kernels", "auto"), device)  # starting up while it imports
        self.step = StaticCacheStep(model, batch_size, max_cache_len, logits_to_keep=1)
        self.example = torch.zeros(batch_size, 2, dtype=torch.long, device=self.step.key_cache_0.device)
        example = (self.example, torch.arange(2, device=self.example.device))
        dynamic = {"input0": {1: "tokens"}, "input1": {0: "tokens"}}
        if padded:  # the padding mask over the cache and each row's positions (StaticCacheStep.forward)
            example += (torch.ones(batch_size, max_cache_len, dtype=torch.long, device=self.example.device), self.example)
            dynamic["input3"] = {1: "tokens"}
        self.program = cached_from_torch(self.step, example, dynamic=dynamic)
        try:  # the causal prefill takes no mask: a padded batch prefills through the decode program
            self.prefill_module: Optional[StaticCachePrefill] = None if padded else StaticCachePrefill(self.step)
        except PrefillRefused:
            self.prefill_module = None
        self.prefill_program: Any = None  # imported at the first prefill
        self.device = device
        self.options = {"static_outputs": True, **options}
        self.bind(model)

    def bind(self, model: torch.nn.Module) -> None:
        """Compile the program with the step's current state (again after the model's
        tensors were replaced, or, when the program holds copies of them on another
        device, written); the prefill program is compiled again at the next prefill."""
        state = self.program.state(self.step)
        self.fn = self.program.compile(state, device=str(self.device), **self.options)
        self.prefill_fn: Any = None
        self.copied = any(self.fn.state[name].data_ptr() != tensor.data_ptr() for name, tensor in state.items() if name in self.fn.state)
        self.fingerprint = _fingerprint(model, self.copied)

    def __call__(self, tokens: torch.Tensor, positions: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        """The float32 logits ``[batch, vocab]`` after ``tokens`` at ``positions`` (cache
        positions; a padded generator also takes the padding mask over the cache and the
        tokens' positions per row)."""
        logits = self.fn(tokens, positions, *padding)
        return logits[:, -1, :].float()

    def prefill(self, prompt: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        """The float32 logits ``[batch, vocab]`` after ``prompt`` (``[batch, tokens]``) from
        an empty cache: the prefill program where there is one (see the module docstring)."""
        positions = torch.arange(prompt.shape[1], device=prompt.device)
        if self.prefill_fn is None and self.prefill_module is not None and prompt.shape[1] >= 2:
            self.prefill_fn = self._compile_prefill()
        if self.prefill_fn is None or prompt.shape[1] < 2:
            return self(prompt, positions, *padding)
        logits = self.prefill_fn(prompt, positions)
        return logits[:, -1, :].float()

    def _compile_prefill(self) -> Any:
        """The prefill program compiled on the decode program's state tensors (``step.``
        names in the prefill module): both write one cache, also where the compiled decode
        program holds copies on another device; None (warned) where the prefill module
        cannot be imported: the prompt then runs the decode program."""
        if self.prefill_program is None:
            tokens = ("tokens", 2, self.step.key_cache_0.shape[2] - 1)  # export: 0/1 specialise; a full-length prompt is a guard
            try:
                self.prefill_program = cached_from_torch(self.prefill_module, (self.example, torch.arange(2, device=self.example.device)),
                                                         dynamic={"input0": {1: tokens}, "input1": {0: tokens}})
            except HirError as err:
                # e.g. float32 on CUDA: SDPA's math path (no fused kernel takes float32 GQA)
                # adds shape guards torch.export cannot prove over the token range
                warnings.warn(f"hir.generate: {type(self.step.model).__name__}'s causal prefill program could not be imported, so its prompts "
                              f"prefill through the decode program (masked, over the whole cache): {err.message.splitlines()[0][:400]}", RuntimeWarning, stacklevel=api_stacklevel())
                self.prefill_module = None
                return None
        state = {**self.prefill_program.state(self.prefill_module), **{f"step.{name}": t for name, t in self.fn.state.items()}}
        return self.prefill_program.compile(state, device=str(self.device), **self.options)


_GENERATORS: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()


def generator(model: torch.nn.Module, batch_size: int, tokens: int, device: Optional[str] = None, max_cache_len: Optional[int] = None, options: Optional[dict] = None,
              padded: bool = False) -> Generator:
    """The cached :class:`Generator` of ``model`` for ``batch_size`` rows of ``tokens``
    positions (see the module docstring); ``padded``: its programs take a padding mask."""
    try:
        dev = default_device(device or str(next(model.parameters()).device))
    except (RuntimeError, ValueError) as err:
        raise HirError(f"error: hir.generate: {err}") from None
    length = max_cache_len or max(64, 1 << (tokens - 1).bit_length())
    if length < tokens:
        raise HirError(f"error: hir.generate: max_cache_len={length} is shorter than the prompt and new tokens ({tokens})")
    options = dict(options or {})
    key = (batch_size, length, str(dev), tuple(sorted(options.items())), padded)
    cached = _GENERATORS.setdefault(model, {})
    found = cached.get(key)
    if found is None:
        found = cached[key] = Generator(model, batch_size, length, dev, options, padded)
    elif found.fingerprint != _fingerprint(model, found.copied):
        found.bind(model)
    return found


def _fingerprint(model: torch.nn.Module, versions: bool) -> tuple:
    """Which tensors the model's state is (and how often each was written: ``versions``)."""
    return tuple((t.data_ptr(), _version(t) if versions else 0) for t in model.state_dict().values())


def _version(tensor: torch.Tensor) -> Any:
    try:
        return tensor._version
    except RuntimeError:  # an inference tensor has no version counter: never the same
        return object()


def generate(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    generation_config: Any = None,
    attention_mask: Optional[torch.Tensor] = None,
    streamer: Any = None,
    return_dict_in_generate: bool = False,
    output_scores: bool = False,
    output_logits: bool = False,
    device: Optional[str] = None,
    max_cache_len: Optional[int] = None,
    compile_options: Optional[dict] = None,
    **kwargs: Any,
) -> Any:
    """``model.generate(input_ids, ...)`` through hir (see the module docstring). HF's
    arguments: ``max_new_tokens`` / ``max_length``, ``min_new_tokens``, ``do_sample``,
    ``temperature``, ``top_k``, ``top_p``, ``min_p``, ``repetition_penalty``,
    ``no_repeat_ngram_size``, ``eos_token_id`` (an int or a list),
    ``pad_token_id``, ``generation_config`` (unset fields: the model's, then HF's defaults:
    sampling keeps the 50 likeliest tokens unless ``top_k`` says otherwise; no length: 20
    new tokens, HF's ``max_length`` default), ``attention_mask`` (zeros:
    left padding), ``streamer`` (``put`` the prompt, then each step's tokens; ``end``),
    ``return_dict_in_generate`` with ``output_scores`` / ``output_logits``. hir's: ``device``
    (default: the model's), ``max_cache_len``, ``compile_options`` (``CompiledProgram``'s:
    ``graph``, ``compile_kernels``, ``autotune``...). Returns the ``[batch, prompt + new]``
    token ids (a :class:`GenerateOutput` with ``return_dict_in_generate=True``)."""
    default_length = kwargs.get("max_length") is None and getattr(generation_config, "max_length", None) is None and getattr(getattr(model, "generation_config", None), "max_length", None) is None
    config = _config(model, generation_config, kwargs)
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
        raise HirError(f"error: hir.generate: input_ids must be a [batch, tokens] tensor of token ids (torch.long), got {_describe(input_ids)}")
    mask = _padding(attention_mask, input_ids)
    batch, prompt = input_ids.shape
    new = _new_tokens(model, config, prompt, default_length)
    if new < 1:
        raise HirError(f"error: hir.generate: nothing to generate: max_new_tokens={config.max_new_tokens}, max_length={config.max_length}, prompt of {prompt} tokens")
    limit = _position_limit(model)
    if limit is not None and prompt + new > limit:
        raise HirError(f"error: hir.generate: {type(model).__name__} has a learned table of {limit} positions (its config's n_positions / max_position_embeddings); "
                       f"a prompt of {prompt} tokens and {new} new tokens need {prompt + new}: ask for at most {max(limit - prompt, 0)} new tokens")
    gen = generator(model, batch, prompt + new, device, max_cache_len, compile_options, padded=mask is not None)
    keep = tuple(name for name, wanted in (("scores", output_scores), ("logits", output_logits)) if wanted)
    return _decode(gen, input_ids.to(gen.device), None if mask is None else mask.to(gen.device), new, config, streamer, return_dict_in_generate, keep)


def _config(model: torch.nn.Module, generation_config: Any, kwargs: dict) -> Any:
    """The generation config ``generate`` would use, by HF's own rule
    (``GenerationMixin._prepare_generation_config``): the given config (or a fresh one), its
    unset fields from the model's ``generation_config``, then from HF's global defaults
    (``top_k=50``, ``max_length=20``...), then the keyword overrides; refusing what
    hir.generate does not run."""
    unknown = [k for k in kwargs if k not in _ARGUMENTS and k not in UNSUPPORTED and k != "use_cache"]
    if unknown:
        raise HirError(f"error: hir.generate: unsupported argument(s) {', '.join(unknown)} (supported: {', '.join(_ARGUMENTS)}, generation_config, attention_mask, "
                       "streamer, return_dict_in_generate, output_scores, output_logits, device, max_cache_len, compile_options)")
    prepare = getattr(model, "_prepare_generation_config", None)
    if getattr(model, "generation_config", None) is None or prepare is None:
        raise HirError(f"error: hir.generate: {type(model).__name__} has no generation_config (hir.generate takes Hugging Face causal LMs)")
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
    limit = getattr(model.config, "max_position_embeddings", None)
    return (min(total, limit) if isinstance(limit, int) else total) - prompt


_POSITION_TABLES = ("wpe", "embed_positions", "position_embeddings")  # HF's names of a learned position embedding


def _position_limit(model: torch.nn.Module) -> Optional[int]:
    """How many positions the model's learned position table holds (GPT-2's ``n_positions``,
    OPT's ``max_position_embeddings``); None where positions are computed (rotary, ALiBi:
    any length runs, as in HF)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    limit = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    tables = any(isinstance(m, torch.nn.Embedding) and name.rsplit(".", 1)[-1] in _POSITION_TABLES for name, m in model.named_modules())
    return limit if tables else None


def _padding(attention_mask: Optional[torch.Tensor], input_ids: torch.Tensor) -> Optional[torch.Tensor]:
    """The prompt's attention mask where it has padding (zeros: a left-padded batch of
    prompts of different lengths); None where there is none (all ones, or no mask)."""
    if attention_mask is None:
        return None
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
        raise HirError(f"error: hir.generate: attention_mask must be a tensor of input_ids' shape {list(input_ids.shape)}, got {_describe(attention_mask)}"
                       f"{f' of shape {list(attention_mask.shape)}' if isinstance(attention_mask, torch.Tensor) else ''}")
    if not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise HirError("error: hir.generate: attention_mask must hold 0 (padding) and 1 (a token) only")
    return None if bool((attention_mask == 1).all()) else attention_mask.long()


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dim()}-d tensor of {value.dtype}"
    return type(value).__name__


def _decode(gen: Generator, input_ids: torch.Tensor, mask: Optional[torch.Tensor], new: int, config: Any, streamer: Any, as_dict: bool, keep: tuple) -> Any:
    """The decoding loop (see the module docstring); ``mask``: the prompt's padding;
    ``keep``: what a :class:`GenerateOutput` holds besides the sequences (``"scores"``, ``"logits"``)."""
    batch, prompt = input_ids.shape
    dev = input_ids.device
    eos_ids = config.eos_token_id
    eos = None if eos_ids is None else torch.tensor([eos_ids] if isinstance(eos_ids, int) else list(eos_ids), device=dev)
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
            if lagged:
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
    return GenerateOutput(out, **{name: tuple(values[: length - prompt]) for name, values in kept.items()})


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
