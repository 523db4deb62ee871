"""The compiled decoding programs :func:`hir.generate` runs, per model, batch size and cache
length (:class:`Generator`), and the imports they share (:class:`ModelPrograms`).

**The decode step: one import per bucket, every dim static.** Each generator (a batch size
and a cache length: a bucket) imports its own :class:`~hir.frontend.hf_decode.StaticCacheStep`
with one token per row (what each decode step runs) and every dim static: the cheapest
export. torch.export's symbolic shapes cost per dynamic dim and per layer: a new bucket's
set-up on the CPU (``benchmarks/generate_buckets.py``) is ~0.4-1.1 CPU-s for the tiny Llama
(2 layers), ~2.7-3.7 for its 16-layer twin, where the one import with the batch size and
cache length dynamic, shared by the later buckets, cost the second bucket ~3.0 and ~17 (on
a GPU, inductor compiles each shape's regions either way). The token count is dynamic only
in the decode programs that also run prompts (a padded batch's, or a model's without a
causal prefill: imported where first needed). Imports are kept by shape
(:meth:`ModelPrograms.decode`) and on disk (:mod:`hir.frontend.import_cache`).

**The causal prefill: one import for every shape.** The prefill program (imported at the
second prompt of a length) is imported once, on a small example (:data:`EXAMPLE_BATCH` rows,
:data:`EXAMPLE_CACHE` positions), with the batch size, the cache length and the token count
dynamic (``?`` in the program's types: the KV cache buffers' first and third dims are state
entries with dynamic dims, :func:`hir.frontend.dynamic.export_spec`), and every bucket
compiles it on its own cache: the plan is built again (:class:`hir.interpreter.Program`, a
fraction of a second), nothing is exported, imported or lowered. A model whose prefill
torch.export cannot trace with those dims dynamic (its code branches on the cache's length
or the batch size) gets a prefill import per bucket (its token count dynamic):
:attr:`ModelPrograms.prefill_per_bucket` says why, for the tests and benchmarks (a prefill
import per bucket, token count dynamic, cost ~1.2-1.5 CPU-s a bucket on the tiny Llama, ~6-8
on its twin, against ~2.5-3.3 and ~14-17 once for the shared one). On CUDA the compute
regions are compiled per shape (inductor traces each input signature,
:mod:`hir.interpreter.kernels`).

The generators are kept per model (until it is garbage collected), per batch size, cache
length (the tokens needed, rounded up to a power of two, at least 64), device, options and
whether the batch is padded, and compiled again when a parameter of the model is replaced or
written in place.
"""

import warnings
import weakref
from typing import Any

import torch

from hir.core import HirError
from hir.dialect.context import api_stacklevel
from hir.frontend.hf_decode import PrefillRefused, StaticCachePrefill, StaticCacheStep
from hir.interpreter.decode_kernels import start_tuning
from hir.interpreter.kernels import warm_compile_workers

EXAMPLE_BATCH = 3  # the example the prefill is imported on: not 0 or 1 (export specialises those),
EXAMPLE_TOKENS = 2  # and sizes apart from each other, so no two dims are taken for one
EXAMPLE_CACHE = 64


class ModelPrograms:
    """The imported programs of one model (and padding) the :class:`Generator` s use:
    :meth:`decode` (the step, per bucket) and :meth:`prefill` (the causal prefill, shared:
    see the module docstring)."""

    def __init__(self, model: torch.nn.Module, padded: bool) -> None:
        self.model = weakref.ref(model)
        self.padded = padded
        self.prefill_per_bucket: str | None = None  # why the prefill is imported per bucket (None: it is not)
        self.prefill_refused: str | None = None  # why there is no causal prefill program (warned once)
        self._decode: dict[tuple, Any] = {}  # by (batch size, cache length, any number of tokens per row)
        self._prefill: Any = None
        self._example: StaticCacheStep | None = None

    def example_step(self) -> StaticCacheStep:
        """The step the shared prefill is imported from (the example's cache)."""
        if self._example is None:
            model = self.model()
            assert model is not None  # alive: the generator asking holds it (its step's model)
            self._example = StaticCacheStep(model, EXAMPLE_BATCH, EXAMPLE_CACHE, logits_to_keep=1)
        return self._example

    def decode(self, step: StaticCacheStep, prompts: bool = False) -> Any:
        """The decode program for ``step``'s batch size and cache length, imported on them
        (static: the cheapest export, see the module docstring); ``prompts``: one that takes
        any number of tokens per row (a padded batch's always does), else one token."""
        from hir.frontend.import_cache import cached_from_torch

        tokens = prompts or self.padded
        key = (step.key_cache_0.shape[0], step.key_cache_0.shape[2], tokens)
        if key not in self._decode:
            dynamic: dict | None = None
            if tokens:
                dynamic = {"input0": {1: "tokens"}, "input1": {0: "tokens"}}
                if self.padded:
                    dynamic["input3"] = {1: "tokens"}
            self._decode[key] = cached_from_torch(step, self._inputs(step, tokens), dynamic=dynamic)
        return self._decode[key]

    def prefill(self, module: StaticCachePrefill) -> Any:
        """The causal prefill program for ``module``'s step: the shared one (the bucket's own
        where the shared import fails); None, warned once, where it cannot be imported (the
        prompt then runs the decode program)."""
        from hir.frontend.import_cache import cached_from_torch

        if self.prefill_refused is not None:
            return None
        if self._prefill is not None:
            return self._prefill
        shared_failed = None
        if self.prefill_per_bucket is None:
            example = StaticCachePrefill(self.example_step())
            try:
                self._prefill = cached_from_torch(
                    example, self._inputs(example.step)[:2], dynamic=self._dims(example.step)
                )
                return self._prefill
            except HirError as err:
                shared_failed = err.message.splitlines()[0]
        tokens = ("tokens", 2, module.step.key_cache_0.shape[2] - 1)  # (0/1 specialise)
        try:
            program = cached_from_torch(
                module, self._inputs(module.step)[:2], dynamic={"input0": {1: tokens}, "input1": {0: tokens}}
            )
        except HirError as err:
            # a model whose code adds guards torch.export cannot prove over the token range
            self.refuse_prefill(module, err, "program could not be imported")
            return None
        if shared_failed is not None:  # its own shapes import: the model's code fixes the batch size or cache length
            self.prefill_per_bucket = shared_failed
        return program

    def refuse_prefill(self, module: StaticCachePrefill, err: HirError, what: str = "module refused the model") -> None:
        """No causal prefill for this model from now on (its prompts run the decode program): warned, naming why."""
        self.prefill_refused = err.message.splitlines()[0][:400]
        warnings.warn(
            f"hir.generate: {type(module.step.model).__name__}'s causal prefill {what}, so its prompts "
            f"prefill through the decode program (masked, over the whole cache): {self.prefill_refused}",
            RuntimeWarning,
            stacklevel=api_stacklevel(),
        )

    def _inputs(self, step: StaticCacheStep, tokens: bool = True) -> tuple:
        """Example inputs of ``step``: ``EXAMPLE_TOKENS`` tokens per row (one where
        ``tokens`` is false: a decode step), their positions (and, padded, the padding mask
        over the cache and the tokens' positions per row)."""
        batch, length = step.key_cache_0.shape[0], step.key_cache_0.shape[2]
        count = EXAMPLE_TOKENS if tokens else 1
        ids = torch.zeros(batch, count, dtype=torch.long, device=step.key_cache_0.device)
        inputs: tuple = (ids, torch.arange(count, device=ids.device))
        if self.padded:
            inputs += (torch.ones(batch, length, dtype=torch.long, device=ids.device), ids)
        return inputs

    def _dims(self, step: StaticCacheStep) -> dict:
        """``dynamic=`` of the shared prefill import: batch, tokens (at least 2) and the
        cache's length (the cache buffers are ``step.``-named state entries)."""
        tokens = ("tokens", 2, None)
        dims: dict = {"input0": {0: "batch", 1: tokens}, "input1": {0: tokens}}
        for i in step.cached_layers:
            dims[f"step.key_cache_{i}"] = dims[f"step.value_cache_{i}"] = {0: "batch", 2: "cache"}
        return dims


class Generator:
    """The compiled decoding program of ``model`` for one batch size and cache length."""

    def __init__(
        self,
        model: torch.nn.Module,
        batch_size: int,
        max_cache_len: int,
        device: torch.device,
        options: dict,
        padded: bool = False,
        programs: ModelPrograms | None = None,
    ) -> None:
        warm_compile_workers(options.get("compile_kernels", "auto"), device)  # starting up while it imports
        start_tuning(device, next(model.parameters()).dtype)  # likewise
        self.programs = programs or ModelPrograms(model, padded)
        self.step = StaticCacheStep(model, batch_size, max_cache_len, logits_to_keep=1)
        try:  # the causal prefill takes no mask: a padded batch prefills through the decode program
            self.prefill_module: StaticCachePrefill | None = (
                None if padded or self.programs.prefill_refused else StaticCachePrefill(self.step)
            )
        except PrefillRefused:
            self.prefill_module = None
        # prompts run the decode program where there is no causal prefill: then it takes any token count
        self.prompts = padded or self.prefill_module is None
        self.program = self.programs.decode(self.step, prompts=self.prompts)
        self.prefill_program: Any = None  # imported (or shared) at the first prefill it runs
        self.prefill_lengths: set[int] = (
            set()
        )  # prompt lengths prefilled eagerly (the next prompt of one runs the program)
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
        self.prompt_fn: Any = None  # the decode program of any token count, where self.fn takes one
        self.copied = any(
            self.fn.state[name].data_ptr() != tensor.data_ptr()
            for name, tensor in state.items()
            if name in self.fn.state
        )
        self.fingerprint = _fingerprint(model, self.copied)

    def __call__(self, tokens: torch.Tensor, positions: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        """The float32 logits ``[batch, vocab]`` after ``tokens`` at ``positions`` (cache
        positions; a padded generator also takes the padding mask over the cache and the
        tokens' positions per row)."""
        logits = self.fn(tokens, positions, *padding)
        return logits[:, -1, :].float()

    def prefill(self, prompt: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        """The float32 logits ``[batch, vocab]`` after ``prompt`` (``[batch, tokens]``) from
        an empty cache: the prefill module run eagerly for a prompt length met for the first
        time, the prefill program from its second prompt on (see :mod:`hir.frontend.generate`);
        the decode program where there is no prefill module."""
        tokens = prompt.shape[1]
        positions = torch.arange(tokens, device=prompt.device)
        if self.prefill_module is not None and tokens >= 2 and tokens not in self.prefill_lengths and not self.copied:
            self.prefill_lengths.add(tokens)
            logits = self._eager_prefill(self.prefill_module, prompt, positions)
            if logits is not None:
                return logits[:, -1, :].float()
        if self.prefill_fn is None and self.prefill_module is not None and tokens >= 2:
            self.prefill_fn = self._compile_prefill(self.prefill_module)
        if self.prefill_fn is None or tokens < 2:
            return self._through_decode(prompt, positions, *padding)
        logits = self.prefill_fn(prompt, positions)
        return logits[:, -1, :].float()

    def _through_decode(self, prompt: torch.Tensor, positions: torch.Tensor, *padding: torch.Tensor) -> torch.Tensor:
        """:meth:`__call__` for a prompt (the prefill, where no prefill module or program
        runs it): prompts of 2 tokens or more need the decode program of any token count,
        imported and compiled here where the generator's own takes one token (the causal
        prefill was refused after it was made), on the tensors of the generator's program."""
        if prompt.shape[1] < 2 or self.prompts:
            return self(prompt, positions, *padding)
        if self.prompt_fn is None:
            program = self.programs.decode(self.step, prompts=True)
            state = {**program.state(self.step), **self.fn.state}
            self.prompt_fn = program.compile(state, device=str(self.device), **self.options)
        return self.prompt_fn(prompt, positions, *padding)[:, -1, :].float()

    def _eager_prefill(
        self, module: StaticCachePrefill, prompt: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor | None:
        """The prefill module run by PyTorch (HF's eager prefill), on the step's buffers: the
        decode program's state, so it fills the cache the decode steps read. None where the
        model's attention turns out not to run through the prefill's entry (the module
        refuses it after the call): the prompt then runs the decode program, which writes
        the same positions of the cache again (warned once)."""
        try:
            with torch.no_grad():
                return module(prompt, positions)
        except PrefillRefused as refused:
            self.programs.refuse_prefill(module, refused)
            self.prefill_module = None
            return None

    def _compile_prefill(self, module: StaticCachePrefill) -> Any:
        """The prefill program of ``module`` (the prefill module) compiled on the decode
        program's state tensors (``step.`` names in it): both write one cache, also where the compiled decode
        program holds copies on another device; None where the prefill module cannot be
        imported (:meth:`ModelPrograms.prefill`): the prompt then runs the decode program."""
        if self.prefill_program is None:
            self.prefill_program = self.programs.prefill(module)
            if self.prefill_program is None:
                self.prefill_module = None
                return None
        state = {
            **self.prefill_program.state(module),
            **{f"step.{name}": t for name, t in self.fn.state.items()},
        }
        return self.prefill_program.compile(state, device=str(self.device), **self.options)


_GENERATORS: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()


def generator(
    model: torch.nn.Module,
    batch_size: int,
    tokens: int,
    device: str | None = None,
    max_cache_len: int | None = None,
    options: dict | None = None,
    padded: bool = False,
) -> Generator:
    """The cached :class:`Generator` of ``model`` for ``batch_size`` rows of ``tokens``
    positions (see the module docstring); ``padded``: its programs take a padding mask."""
    from hir.interpreter.backends.process_groups import default_device

    try:
        dev = default_device(device or str(next(model.parameters()).device))
    except (RuntimeError, ValueError) as err:
        raise HirError(f"error: hir.generate: {err}") from None
    length = max_cache_len or max(64, 1 << (tokens - 1).bit_length())
    if length < tokens:
        raise HirError(
            f"error: hir.generate: max_cache_len={length} is shorter than the prompt and new tokens ({tokens})"
        )
    options = dict(options or {})
    key = (batch_size, length, str(dev), tuple(sorted(options.items())), padded)
    cached = _GENERATORS.setdefault(model, {})
    found = cached.get(key)
    if found is None:
        programs_key = (
            "programs",
            str(next(model.parameters()).device),
            padded,
        )  # (the import follows the model's device, not the run's)
        programs = cached.setdefault(programs_key, ModelPrograms(model, padded))
        found = cached[key] = Generator(model, batch_size, length, dev, options, padded, programs)
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
