"""hir: a host IR for multi-stream, multi-GPU tensor programs.

Entry points (importing ``hir`` does not import torch; ``hir.run`` does, on first use):

    module = hir.parse(text)                      # parse + verify
    hir.lower(module, pipeline="hir-lower")       # run passes in place
    outputs = hir.run(module, [x, y])             # execute with torch
    program = hir.from_torch(nn_module, (x,))     # import a PyTorch module (program.module)
    fn = hir.compile(nn_module, (x,))             # as torch.compile: fn(x) returns what the module returns
    fn = hir.compile(program, state, device="cuda")  # an imported program, its state bound
    tokens = hir.generate(hf_model, input_ids, max_new_tokens=32)   # HF generate's arguments
    step = hir.train_step(model, optimizer, loss_fn, batch); loss = step(*batch)  # training
    hir.from_shard(module)                        # annotated shard-dialect program -> hir
    program.save("m.mlir"); hir.load("m.mlir")    # the IR and its weights (safetensors) on disk
"""

from __future__ import annotations  # torch's types are named for type checking only

import inspect
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

from hir.core import HirError, new_context, parse
from hir.dialect.comm import BACKENDS
from hir.dialect.context import check_options
from hir.dialect.gc_stress import checkpoint

if TYPE_CHECKING:  # importing hir imports neither torch nor the frontend (cold start)
    import torch
    from torch_mlir import ir

    from hir.frontend.compiled import CompiledProgram
    from hir.frontend.compiled_module import CompiledModule
    from hir.frontend.torch_import import TorchProgram
    from hir.frontend.training import TrainStep
    from hir.interpreter import Program

__all__ = [
    "HirError",
    "new_context",
    "parse",
    "lower",
    "run",
    "compile",
    "from_torch",
    "from_shard",
    "generate",
    "train_step",
    "load",
    "__version__",
]

try:
    __version__ = metadata.version("hir")  # the installed distribution's (pyproject.toml)
except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
    __version__ = "0+unknown"


def lower(
    module: ir.Module, pipeline: str = "hir-lower", *, source_name: str | None = None, **instrumentation: Any
) -> ir.Module:
    """Run a textual pass pipeline on ``module`` in place, on one MLIR PassManager, and
    return it. Keyword options as hir-opt's flags: ``print_before_all``, ``print_after_all``
    (``--mlir-print-ir-*``), ``timing`` (``--mlir-timing``), ``statistics``
    (``--mlir-pass-statistics``), ``verify_each`` (``--verify-each``). The PassManager's
    reports go to ``out`` (a text stream; default ``sys.stderr``).

    The passes name the values they create (name locations); print them so, as
    ``hir-opt --print-value-names`` does, with
    ``module.operation.get_asm(use_name_loc_as_prefix=True)`` (``str(module)``: %0, %1, ...)."""
    from hir.passes import lower as _lower  # `import hir` loads neither torch nor the passes

    return _lower(module, pipeline, source_name=source_name, **instrumentation)


@checkpoint
def run(module: ir.Module, inputs: Sequence[Any], **options: Any) -> list[torch.Tensor]:
    """Execute ``module``'s entry function once with torch and return its outputs, a list
    of tensors (see :mod:`hir.interpreter`). ``inputs``: one value per argument of the
    entry (tensors; ints, floats and bools for host scalars). Options (those of
    :class:`hir.interpreter.Program`, which compiles once for many calls):

    - ``entry``: the function to run (default ``@main``, else the only public one)
    - ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` (default ``$HIR_DEVICE``, else this
      rank's GPU when there is one, else the CPU)
    - ``num_streams``: the stream pool's size when the module fixes none (default 4)
    - ``backend``: the process group's (``"nccl"`` / ``"gloo"``; default by device)
    - ``compile_kernels``: ``"auto"`` (inductor on CUDA), ``True`` or ``False``
    - ``autotune``: inductor's max-autotune for those kernels
    - ``regional``: a region's repeats (a model's layers) compiled once (default True)
    - ``graph``: ``"auto"``, ``True`` or ``False`` (CUDA graphs; for repeated calls)
    - ``static_outputs``, ``graph_cache_size``: the CUDA graphs' outputs and cache
    - ``track_memory``: count live allocation bytes
    - ``source_name``: the file name errors name
    - ``weights``: the safetensors file of the arguments the module names as weights

    An unknown option is an :class:`HirError` naming the ones there are."""
    from hir.interpreter import run as _run  # `import hir` loads neither torch nor the passes

    return _run(module, inputs, **options)


@checkpoint
def from_torch(module: torch.nn.Module, example_args: Sequence[Any], **options: Any) -> TorchProgram:
    """Import a ``torch.nn.Module`` as a program-level hir module (see :mod:`hir.frontend`)."""
    from hir.frontend import from_torch as _from_torch  # `import hir` loads neither torch nor the passes

    check_options("hir.from_torch", options, _from_torch)
    return _from_torch(module, example_args, **options)


_IMPORT_OPTIONS = (
    "mesh",
    "placements",
    "source_name",
    "dynamic_shapes",
    "dynamic",
    "example_kwargs",
    "grouped_attention",
    "fused_projections",
)


def compile(target: Any, state_or_args: Any = None, **options: Any) -> CompiledModule | CompiledProgram | Program:
    """Compile once, call many times; each call costs only the interpreter's run (a CUDA
    graph replay on GPU).

    - ``hir.compile(nn_module, example_args, ...)``: as ``torch.compile(nn_module)``: each
      call returns what the module returns (a tensor, a tuple, a dict, a ``ModelOutput``).
      Imports the module with :func:`from_torch` (its options: ``mesh``, ``placements``,
      ``dynamic``, ``dynamic_shapes``, ``example_kwargs``...; cached on disk,
      :mod:`hir.frontend.import_cache`) and binds the module's own state. A call with new
      input shapes compiles another program; from the second input signature on, the dims
      that changed (batch size, sequence length) are imported dynamic, one program for
      every size of them (torch.compile's ``dynamic=None``); ``recompile_limit`` (default
      8) bounds the programs, a call needing one more is refused. Replaced parameters are
      bound again at the next call; a backward through the results raises (the compiled
      module does not differentiate: ``hir.train_step`` trains).
      :class:`hir.frontend.compiled_module.CompiledModule`.
    - ``hir.compile(program, state, device=..., graph="auto", ...)``: an imported program
      (:func:`from_torch`) with its state bound, for its one input signature (or its
      dynamic dims): :meth:`hir.frontend.TorchProgram.compile`; a call returns what the
      module returns, ``fn.run(...)`` the list of ``@main``'s results.
    - ``hir.compile(exported_program, example_args=None, ...)``: a
      ``torch.export.ExportedProgram``, as its module (``ep.module()``) with the module
      form's options; the example inputs default to those the export recorded, and the dims
      it made dynamic are dynamic (with its bounds) from the start
      (:mod:`hir.frontend.pt2`).
    - ``hir.compile(ir_module, ...)``: an hir module: :class:`hir.interpreter.Program`
      (call it with the list of ``@main``'s arguments; it returns a list).
    Other options are :class:`hir.interpreter.Program`'s (``device``, ``graph``,
    ``compile_kernels``, ``static_outputs``, ``num_streams``...)."""
    from hir.frontend.torch_import import TorchProgram  # `import hir` loads neither torch nor the passes
    from hir.interpreter import Program  # `import hir` loads neither torch nor the passes

    compile_options = [p for p in inspect.signature(Program.__init__).parameters if p not in ("self", "module")] + [
        "lower"
    ]
    if isinstance(target, TorchProgram):
        check_options("hir.compile", options, compile_options)
        if state_or_args is None:
            raise HirError(
                "error: hir.compile(program, state): an imported program "
                "needs its state (program.state(module) or module.state_dict())"
            )
        return target.compile(state_or_args, **options)
    exported = _is_exported_program(target)
    if exported:
        from hir.frontend.pt2 import exported_inputs  # `import hir` loads neither torch nor the passes

        target, state_or_args, kwargs, dynamic = exported_inputs(target, state_or_args)
        if kwargs and "example_kwargs" not in options:
            options["example_kwargs"] = kwargs
        if dynamic and "dynamic" not in options and "dynamic_shapes" not in options:
            options["dynamic"] = dynamic
    if _is_torch_module(target):
        if state_or_args is None:
            raise HirError(
                "error: hir.compile(module, example_args): a torch module needs example inputs to import it with"
            )
        check_options("hir.compile", options, dict.fromkeys([*compile_options, *_IMPORT_OPTIONS, "recompile_limit"]))
        from hir.frontend.compiled_module import (  # `import hir` loads neither torch nor the passes
            RECOMPILE_LIMIT,
            CompiledModule,
        )
        from hir.interpreter.kernels import warm_compile_workers  # `import hir` loads neither torch nor the passes

        warm_compile_workers(
            options.get("compile_kernels", "auto"), options.get("device")
        )  # starting up while it imports
        imports = {k: options.pop(k) for k in _IMPORT_OPTIONS if k in options}
        limit = options.pop("recompile_limit", RECOMPILE_LIMIT)
        example = state_or_args if isinstance(state_or_args, (tuple, list)) else (state_or_args,)
        return CompiledModule(target, tuple(example), imports, options, limit)
    if state_or_args is not None:
        raise HirError("error: hir.compile(module): an hir module takes no state; pass @main's arguments to each call")
    check_options("hir.compile", options, Program.__init__)
    return Program(target, **options)


def _is_torch_module(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _is_exported_program(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.export.ExportedProgram)


def generate(model: torch.nn.Module, input_ids: torch.Tensor, **options: Any) -> Any:
    """``model.generate(input_ids, **options)``'s greedy and sampled decoding through hir
    programs over a static KV cache (:func:`hir.frontend.generate.generate`). Returns the
    ``[batch, prompt + new]`` token ids (a ``GenerateOutput`` with
    ``return_dict_in_generate=True``).

    Options with Hugging Face's names and meanings:

    - ``max_new_tokens`` / ``max_length``: the tokens to add / the total length
    - ``min_new_tokens`` / ``min_length``: no stop token before then
    - ``do_sample``, ``temperature``, ``top_k``, ``top_p``, ``min_p``: sampling (else greedy)
    - ``repetition_penalty``, ``no_repeat_ngram_size``: HF's penalties
    - ``streamer``: gets the prompt, then each step's tokens (a ``TextStreamer`` prints them)
    - ``eos_token_id``: the stop token(s), an int or a list; ``pad_token_id``: what a
      finished row gets
    - ``generation_config``: the defaults of those (default: the model's)
    - ``attention_mask``: zeros at the padding of a left-padded batch of prompts (none
      given: inferred from ``pad_token_id`` in the ids, as HF's)
    - ``return_dict_in_generate``, ``output_scores``, ``output_logits`` (unset: the
      generation config's): a ``GenerateOutput``, with each step's processed scores / raw
      logits and the KV cache (``cache`` / ``past_key_values``: a ``DynamicCache``, HF's)

    hir's own:

    - ``device``: where the programs run (default: the model's)
    - ``max_cache_len``: the static cache's length (default: the tokens needed, rounded up
      to a power of two, at least 64)
    - ``compile_options``: :class:`~hir.frontend.compiled.CompiledProgram`'s (``graph``,
      ``compile_kernels``, ``autotune``, ...)

    HF options hir does not run (beam search, ``bad_words_ids``, ...) are an
    :class:`HirError`."""
    from hir.frontend.generate import generate as _generate  # `import hir` loads neither torch nor the passes

    return _generate(model, input_ids, **options)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[..., torch.Tensor],
    example_batch: Sequence[torch.Tensor],
    *,
    mesh: Any = None,
    placements: dict | None = None,
    **options: Any,
) -> TrainStep:
    """A training step (forward, backward, ``optimizer``'s update) as one hir program:
    ``step = hir.train_step(model, optimizer, loss_fn, (ids, labels))``, then ``loss =
    step(ids, labels)`` updates the model and the optimizer in place
    (:func:`hir.frontend.training.train_step`: its options; docs/training.md)."""
    from hir.frontend.training import train_step as _train_step  # `import hir` loads neither torch nor the passes

    return _train_step(model, optimizer, loss_fn, example_batch, mesh=mesh, placements=placements, **options)


def from_shard(
    module: ir.Module,
    *,
    backend: str = "nccl",
    propagate: bool = True,
    grid_shape: str | None = None,
    source_name: str | None = None,
    **instrumentation: Any,
) -> ir.Module:
    """Turn a module of MLIR's ``shard`` dialect (a ``shard.grid`` and tensor functions with
    ``shard.shard`` annotations) into an hir program in place and return it: the
    ``hir-from-shard`` pipeline (record the signature's shardings, upstream
    sharding-propagation / shard-partition / shard-simplify, hir-convert-shard-to-hir),
    its collectives on ``backend``. ``propagate=False`` runs no sharding-propagation
    (``hir-from-shard-no-propagation``: every value annotated, e.g. with
    ``sharded_dims_offsets``). ``grid_shape="4"`` (``"2x2"``) gives a dynamic grid
    (``shape = ?``) its extents first (``hir-set-grid-shape``). ``hir.lower`` then applies
    as to any hir program."""
    from hir.passes import PIPELINES  # `import hir` loads neither torch nor the passes

    if backend not in BACKENDS:
        raise HirError(f"error: hir.from_shard: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    pipeline = PIPELINES["hir-from-shard" if propagate else "hir-from-shard-no-propagation"].replace(
        "hir-convert-shard-to-hir", f"hir-convert-shard-to-hir{{backend={backend}}}"
    )
    if grid_shape is not None:
        pipeline = pipeline.replace("hir-set-grid-shape", f"hir-set-grid-shape{{shape={grid_shape}}}", 1)
    return lower(module, pipeline, source_name=source_name, **instrumentation)


def load(path: str | os.PathLike[str], *, weights: str | None = None) -> TorchProgram:
    """The imported program that ``TorchProgram.save(path)`` or ``hir-import -o path`` wrote:
    its module, and its weights (read from the recorded safetensors file, or ``weights``) as
    the program's state: ``hir.load(path).run(None, x)`` runs the saved model on ``x``.
    A ``.pt2`` file that ``torch.export.save`` wrote is imported from its exported program
    (its weights the state; an archive holding pickled objects or compiled code is refused
    before torch reads it: :mod:`hir.frontend.pt2`)."""
    from hir.frontend.pt2 import is_archive, load_pt2  # `import hir` loads neither torch nor the passes
    from hir.frontend.saving import load as _load  # `import hir` loads neither torch nor the passes
    from hir.frontend.torch_import import TorchProgram  # `import hir` loads neither torch nor the passes

    if isinstance(path, (str, os.PathLike)) and is_archive(os.fspath(path)):
        if weights is not None:
            raise HirError(
                f"{os.fspath(path)}: error: hir.load: a .pt2 archive "
                "holds its weights; weights= is for a saved hir program"
            )
        return load_pt2(os.fspath(path))
    return TorchProgram(**_load(path, weights)._asdict())
