"""``torch.export`` of a module for :func:`hir.from_torch`: its whole state lifted to leading
graph inputs, the graph functionalized, its outputs flattened with names.

* **State**: every parameter and buffer, persistent or not (rotary ``inv_freq``, BERT's
  ``position_ids``), once per tensor: tied weights (``GPT2LMHeadModel``'s ``lm_head.weight``
  and ``transformer.wte.weight``) are one entry with both names (:attr:`Exported.aliases`).
  Tensors the module makes in ``forward`` that the export lifts as constants are state entries
  too (named ``<constant NAME>``). The values seen at import are kept (:attr:`Exported.captured`),
  so a ``state_dict()``, which leaves non-persistent buffers out, still runs the program.
* **Functionalized**, in one trace: the functional ATen graph that ``torch.export.export(...)
  .run_decompositions({})`` gives (no decompositions: ``linear`` or
  ``scaled_dot_product_attention`` stay single ops; no in-place ops such as ``masked_fill_``,
  no grad-mode wrappers such as ``wrap_with_set_grad_enabled`` from HF rotary's
  ``@torch.no_grad``), traced directly below autograd (:func:`functional_export`) instead of
  exporting the training graph and tracing that again: a 1B Llama's import took two traces of
  its whole forward (a first call's time). A state entry the module writes (a KV cache
  buffer) becomes a mutation output, :attr:`Exported.mutated` names its argument.
* **Outputs**: tuples, lists, dicts, dataclasses and HF ``ModelOutput`` are flattened into
  tensors named by their path (``last_hidden_state``, ``past_key_values.0.keys``); a
  transformers cache contributes its key/value tensors. The result's structure is kept
  (:attr:`Exported.output_tree`), so a compiled module returns it
  (:mod:`hir.frontend.output_tree`).
"""

import contextlib
import functools
import io
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hir.core import HirError
from hir.frontend.flash_rewrite import flash_attention_ops
from hir.frontend.fx_fusions import fuse_norm_products, fuse_residual_products
from hir.frontend.fx_rewrites import (
    drop_metadata_checks,
    forward_copies,
    fuse_projections,
    fuse_swiglu,
    group_query_heads,
)
from hir.frontend.output_tree import flatten_with_tree
from hir.interpreter import decode_kernels


@dataclass
class Exported:
    """A functionalized export: ``program``'s inputs are the state (``state_names``) then the
    user inputs; its outputs are the mutated state entries (``mutated``: argument index per
    leading output) then the module's outputs (``output_names``)."""

    program: torch.export.ExportedProgram
    state_names: list[str]
    aliases: dict[str, str]  # another name of a tied tensor -> its entry in state_names
    captured: dict[str, torch.Tensor]  # non-persistent buffers and lifted constants, as seen at import
    output_names: list[str]
    mutated: list[int]
    output_tree: list  # the module's result, its tensors by index (hir.frontend.output_tree)


def module_state(
    module: torch.nn.Module,
) -> tuple[list[str], dict[str, str], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(entry names, aliases, values, non-persistent buffers) of ``module``'s state: the
    ``state_dict`` order, then the non-persistent buffers; a tensor reached by several names
    is one entry (its first name)."""
    seen: dict[int, str] = {}
    names, aliases, values = [], {}, {}
    everything = list(module.state_dict(keep_vars=True).items())
    persistent = {n for n, _ in everything}
    everything += [(n, b) for n, b in module.named_buffers(remove_duplicate=False) if n not in persistent]
    for name, tensor in everything:
        if id(tensor) in seen:
            aliases[name] = seen[id(tensor)]
            continue
        seen[id(tensor)] = name
        names.append(name)
        values[name] = tensor.detach()
    transient = {n: values[n] for n in names if n not in persistent}
    return names, aliases, values, transient


class _Functional(torch.nn.Module):
    """``module`` with its state passed as leading arguments (so the export lifts it to graph
    inputs instead of freezing it) and its result flattened to a tuple of tensors."""

    inner: torch.nn.Module

    def __init__(
        self, module: torch.nn.Module, names: list[str], kwargs: dict, outputs: dict, keywords: Sequence[str] = ()
    ) -> None:
        super().__init__()
        # not a submodule: the export would lift the module's own tensors as well
        object.__setattr__(self, "inner", module)
        self.names = names
        self.kwargs = kwargs  # constant keyword arguments
        self.keywords = list(keywords)  # keyword inputs: the last arguments
        # set by the trace (the export restores attributes), by each run of forward: the
        # export runs it twice (aot's metadata pass, then the graph)
        self.record = outputs.update

    def forward(self, *args):
        state = dict(zip(self.names, args[: len(self.names)]))
        inputs = args[len(self.names) :]
        split = len(inputs) - len(self.keywords)
        keywords = {**self.kwargs, **dict(zip(self.keywords, inputs[split:]))}
        result = torch.func.functional_call(self.inner, state, tuple(inputs[:split]), keywords)
        names, tensors, tree = flatten_with_tree(result)
        self.record(names=names, tree=tree)
        return tuple(tensors)


def export(
    module: torch.nn.Module,
    example_args: Sequence[Any],
    kwargs: dict | None = None,
    dynamic_shapes: Sequence[Any] | None = None,
    keywords: Sequence[str] = (),
    group_heads: bool = False,
    fuse: bool = False,
    keep_composites: bool = True,
    state_shapes: dict | None = None,
) -> Exported:
    """The functionalized export of ``module(*example_args, **kwargs)`` (see the module
    docstring); the last ``len(keywords)`` example arguments are keyword inputs (graph
    inputs too), ``kwargs`` constant keyword arguments; ``dynamic_shapes``: one torch.export
    spec per example argument, ``state_shapes`` one per state entry that has dynamic dims
    (by name; an alias names its entry); ``group_heads``: grouped-query attention on un-repeated keys
    and values (:func:`hir.frontend.fx_rewrites.group_query_heads`); ``fuse``: one GEMM per
    group of projections of one input (:func:`hir.frontend.fx_rewrites.fuse_projections`), an
    MLP's gated product one op (:func:`~hir.frontend.fx_rewrites.fuse_swiglu`), and with
    ``HIR_DECODE_KERNELS``' ``norm-residual`` a one-row product with its RMSNorm or residual add
    (:mod:`hir.frontend.fx_fusions`);
    ``keep_composites``: see :func:`functional_export`."""
    names, aliases, values, transient = module_state(module)
    outputs: dict = {}  # names and tree of the module's result, recorded by the trace
    wrapper = _Functional(module, names, kwargs or {}, outputs, keywords)
    # Always a spec, static where hir asks for nothing: torch.export otherwise makes a dim
    # dynamic that dynamo marked on a tensor (a torch.compile of the same inputs, or
    # maybe_mark_dynamic), and hir would meet a symbolic size it never asked for.
    state_shapes = {aliases.get(n, n): dims for n, dims in (state_shapes or {}).items()}
    spec = (
        tuple(state_shapes.get(n) for n in names)
        + (tuple(dynamic_shapes) if dynamic_shapes is not None else (None,) * len(example_args)),
    )
    what = type(module).__name__
    # torch.export logs (at ERROR: fake_tensor) the traceback of a failed trace to stderr; the error says it.
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            program = functional_export(
                wrapper, tuple(values[n] for n in names) + tuple(example_args), spec, keep_composites
            )
            _views_as_reshapes(program.graph)
    except HirError:
        raise
    except Exception as err:  # torch.export raises many kinds (UserError, Unsupported, ...)
        raise HirError(
            f"error: torch.export cannot trace {what}: {type(err).__name__}: {_first_line(err)}{_hint(err)}"
        ) from None
    finally:
        logging.disable(logging.NOTSET)
    forward_copies(program.graph)
    flash_attention_ops(program.graph)
    if group_heads:  # (each rewrite leaves a match it cannot type as it was, with a warning)
        group_query_heads(program.graph)
    if fuse:
        parameters = _read_only_state(program, len(names))
        fuse_swiglu(program.graph, parameters)
        fuse_projections(program.graph, parameters)
        if decode_kernels.enabled("norm-residual"):
            fuse_norm_products(program.graph)
            fuse_residual_products(program.graph)
    arguments, constants, mutated = _signature(program, names)
    return Exported(program, arguments, aliases, {**constants, **transient}, outputs["names"], mutated, outputs["tree"])


def functional_export(
    module: torch.nn.Module, args: tuple, dynamic_shapes: Any, keep_composites: bool = True
) -> torch.export.ExportedProgram:
    """``torch.export.export(module, args, dynamic_shapes=..., strict=False)
    .run_decompositions({})`` in one trace: ``torch.export``'s ATen-level export (below
    autograd, functionalized) with every CompositeImplicitAutograd op kept whole, as
    ``run_decompositions({})`` keeps it. The same graph, less the training graph's
    ``_assert_tensor_metadata`` checks of ``.to()`` calls (made at trace time). These are
    torch.export's own internals (``run_decompositions`` is built from them); where a torch
    lacks them, the two public steps run instead, and their checks are erased
    (:func:`hir.frontend.fx_rewrites.drop_metadata_checks`), so both give the same graph.

    ``keep_composites=False`` traces with torch's own decompositions of those ops (``linear``
    as ``t`` + ``addmm``...): what a module that differentiates itself needs (a training step
    calling ``torch.autograd.grad``), since a composite kept whole has no derivative below
    autograd and the gradient would not reach the tensors it reads; ``nll_loss`` is decomposed
    too, and ``native_layer_norm_backward`` (:func:`_training_decompositions`)."""
    try:
        from torch.export._trace import _export  # torch.export's internals load only when a module is exported
        from torch.export.exported_program import (  # torch.export's internals load only when a module is exported
            _override_composite_implicit_decomp,
            _split_decomp_table_to_cia_and_python_decomp,
        )
    except ImportError:
        program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes, strict=False)
        program = program.run_decompositions({}) if keep_composites else program.run_decompositions()
        drop_metadata_checks(program.graph)
        return program
    if not keep_composites:
        with _decomposing(_training_decompositions()):
            return _export(module, args, dynamic_shapes=dynamic_shapes, strict=False, pre_dispatch=False)
    keep_whole, _ = _split_decomp_table_to_cia_and_python_decomp({})
    with _attention_by_shape(), _override_composite_implicit_decomp(keep_whole):
        return _export(module, args, dynamic_shapes=dynamic_shapes, strict=False, pre_dispatch=False)


@contextlib.contextmanager
def _attention_by_shape() -> Any:
    """``scaled_dot_product_attention``, kept whole, given its result's shape by
    :func:`_attention_result` while the export traces: torch's own rule runs the composite on
    the fake tensors, which picks the device's kernel and traces its checks, so a CUDA model's
    export met the memory-efficient kernel's mask alignment test (``cache % 16 == 0``), a guard
    that fails a dynamic cache length (the step was exported a second time, per bucket), and
    float32's math path its own guards. The graph holds the op either way; which kernel runs
    is chosen when it runs."""
    from torch._subclasses import fake_impls  # torch.export's internals load only when a module is exported

    op = torch.ops.aten.scaled_dot_product_attention.default
    if op in fake_impls.op_implementations_dict:  # someone else's rule: leave it
        yield
        return
    fake_impls.op_implementations_dict[op] = _attention_result
    try:
        yield
    finally:
        fake_impls.op_implementations_dict.pop(op, None)


def _attention_result(fake_mode: Any, func: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
    """The result of ``scaled_dot_product_attention(query, key, value, ...)`` on fake
    tensors: ``query``'s shape but ``value``'s last dim, in the layout of the fused kernels
    (flash, memory-efficient, the CPU's flash: heads innermost but one, ``[batch, tokens,
    heads, dim]`` transposed), so that the graph is the one those kernels' rules gave."""
    query = args[0] if args else kwargs["query"]
    value = args[2] if len(args) > 2 else kwargs["value"]
    shape = (*query.shape[:-1], value.shape[-1])
    with fake_mode:
        if len(shape) != 4:
            return query.new_empty(shape)
        batch, heads, tokens, dim = shape
        return query.new_empty((batch, tokens, heads, dim)).transpose(1, 2)


@contextlib.contextmanager
def _decomposing(table: dict) -> Any:
    """``torch.export._trace._export`` tracing with ``table``'s decompositions applied as
    ops are traced (``_export_to_aten_ir``'s ``decomp_table``, which ``_export`` does not
    pass on): the graph ``.run_decompositions(table)`` would give, without that second
    trace of the whole graph (half of a training step's import)."""
    from torch.export import _trace  # torch.export's internals load only when a module is exported

    traced = _trace._export_to_aten_ir
    _trace._export_to_aten_ir = functools.partial(traced, decomp_table=table)
    try:
        yield
    finally:
        _trace._export_to_aten_ir = traced


def _training_decompositions() -> dict:
    """torch's own decompositions of ``nll_loss`` and its backward (``gather``, ``where``,
    ``sum``, ``div``; ``scatter``) and of ``native_layer_norm_backward`` (its weight and bias
    gradients as ``sum`` over the rows): over a batch split on devices these are sums the
    placer takes as partial sums, so a loss's mean is over the whole batch."""
    from torch._decomp import get_decompositions  # torch.export's internals load only when a module is exported

    aten = torch.ops.aten
    return get_decompositions([aten.nll_loss_forward, aten.nll_loss_backward, aten.native_layer_norm_backward])


def _read_only_state(program: torch.export.ExportedProgram, count: int) -> set:
    """The placeholder names of the first ``count`` inputs (the module's state) that the
    program does not write (its weights, not a KV cache)."""
    from torch.export.graph_signature import (  # torch.export's internals load only when a module is exported
        InputKind,
        OutputKind,
    )

    sig = program.graph_signature
    state = [s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT][:count]
    written = {s.target for s in sig.output_specs if s.kind == OutputKind.USER_INPUT_MUTATION}
    return set(state) - written


def _views_as_reshapes(graph: torch.fx.Graph) -> None:
    """``aten.view`` / ``_unsafe_view`` -> ``aten.reshape``: whether a view is legal depends on
    strides the trace's fake kernels chose (SDPA's output layout makes HF's ``.contiguous()`` a
    no-op in the graph; a decomposed reshape's ``clone`` keeps strides), which the interpreter's
    kernels (and local shards) need not reproduce; on value tensors a reshape means the same."""
    views = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in views:
            node.target = torch.ops.aten.reshape.default


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


_SUGGESTED_DIM = re.compile(r"^\s*(\w+) = Dim\('(\w+)'(?:, min=(\d+))?(?:, max=(\d+))?\)\s*$")


def _hint(err: Exception) -> str:
    """What a dynamic-shape failure needs: torch's reasons (the guards the code generated)
    and its suggested fixes, each also in hir's short form (``dynamic=``)."""
    text = str(err)
    if "Constraints violated" not in text and "specialized" not in text.lower():
        return ""
    lines = text.splitlines()
    reasons = [line.strip().lstrip("- ") for line in lines if line.strip().startswith("- ")]
    fixes = []
    if "Suggested fixes:" in lines:
        for line in lines[lines.index("Suggested fixes:") + 1 :]:
            m = _SUGGESTED_DIM.match(line)
            if not line.strip() or m is None:
                break
            low, high = (None if v is None else int(v) for v in (m[3], m[4]))
            fixes.append(f"{line.strip()} (with dynamic=: {{dim: ({m[2]!r}, {low}, {high})}})")
    if not fixes:
        return (
            " (a dimension marked dynamic is fixed by the module's code: mark "
            "fewer dims dynamic, or give an example whose size is not 0 or 1)"
        ) + "".join(f"; {r}" for r in reasons)
    return "".join(f"; {r}" for r in reasons) + "; torch suggests: " + "; ".join(fixes)


def _signature(
    program: torch.export.ExportedProgram, names: list[str]
) -> tuple[list[str], dict[str, torch.Tensor], list[int]]:
    """(argument names, lifted constants' values, mutated argument per leading output) of
    ``program``, whose graph inputs are the constants it lifted (tensors the module makes in
    ``forward``) then the wrapper's arguments: each constant becomes a state entry too."""
    from torch.export.graph_signature import (  # torch.export's internals load only when a module is exported
        InputKind,
        OutputKind,
    )

    sig = program.graph_signature
    arguments, constants = [], {}
    for spec in sig.input_specs:
        if spec.kind == InputKind.CONSTANT_TENSOR:
            assert spec.target is not None  # a lifted constant always names its tensor
            arguments.append(f"<constant {spec.target}>")
            constants[arguments[-1]] = program.constants[spec.target]
        elif spec.kind != InputKind.USER_INPUT:
            raise HirError(
                f"error: the export lifted a {spec.kind.name} input hir does "
                "not pass in; keep the state as module parameters and buffers"
            )
    user = [s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    mutated = []
    for spec in sig.output_specs:
        if spec.kind == OutputKind.USER_INPUT_MUTATION:
            assert spec.target is not None  # a mutation always names the input it writes
            mutated.append(len(arguments) + user.index(spec.target))
        elif spec.kind != OutputKind.USER_OUTPUT:
            raise HirError(f"error: the exported program has a {spec.kind.name} output hir does not support")
    return arguments + names, constants, mutated
