"""``hir.from_torch``: a ``torch.nn.Module`` to a program-level hir module.

How: :mod:`hir.frontend.fx_import` exports the module and imports it as ``torch``-dialect ops
in an hir context; :mod:`hir.frontend.partition` then maps linear/matmul/binary/reduction ops
to hir compute ops and every maximal run of other ops to a kernel segment.

Arguments: the entry ``@main`` takes the module's state (``module.state_dict()`` entries, in
that order, then its non-persistent buffers; a tied tensor once; each a function argument, never
a constant; see :mod:`hir.frontend.export`) followed by the example inputs. A state entry the
module writes (a KV cache) is written in place, not returned. :meth:`TorchProgram.arguments`
orders a state dict and inputs that way (and cuts each into this rank's shard when the program
is sharded).
"""

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import func

from hir import progress
from hir.core import HirError, format_mlir_error, new_context
from hir.dialect.gc_stress import checkpoint
from hir.frontend.compiled import compile_program
from hir.frontend.dtensors import Distributed
from hir.frontend.dynamic import check_dims, dim_info, export_spec
from hir.frontend.fx_import import export_to_torch_mlir
from hir.frontend.hf_plans import plan_layouts, with_plan
from hir.frontend.main_signature import mark_parameters, scalar_argument, unsupported_reason
from hir.frontend.partition import Partitioner
from hir.frontend.placements import mesh_inputs, shard_arguments
from hir.frontend.placer import Placer
from hir.frontend.saving import save
from hir.interpreter import run
from hir.interpreter.buffers import buffer_spec, fmt_shape, is_memref
from hir.passes import lower, overlap_pipeline

if TYPE_CHECKING:
    from hir.frontend.compiled import CompiledProgram


@dataclass
class TorchProgram:
    """An imported module: ``module`` (verified hir), the names of the state entries that come
    first among ``@main``'s arguments, and (when sharded) the devices of its ``mesh`` (each
    argument's placement is its type's ``#hir.shard``).

    ``aliases`` maps other names of a tied tensor to its entry (either name is accepted);
    ``captured`` holds the non-persistent buffers seen at import (``state_dict()`` leaves them
    out: :meth:`arguments` fills them in); ``output_names`` names ``@main``'s results (paths
    into the module's result: ``last_hidden_state``, ``output0``...) and ``output_tree``
    records the result's structure (a compiled program returns it; a program loaded from a
    file has none: its compiled form returns a list)."""

    module: ir.Module
    state_names: list[str]
    num_inputs: int
    mesh: tuple | None = field(repr=False)
    aliases: dict = field(default_factory=dict, repr=False)
    captured: dict = field(default_factory=dict, repr=False)
    output_names: list = field(default_factory=list)
    dynamic_dims: list = field(
        default_factory=list, repr=False
    )  # per input: {axis: (symbol, its name, min, max)}; bounds None: none declared
    weights: Mapping = field(default_factory=dict, repr=False)  # the state it was imported or loaded with
    lowered: bool = field(default=False, repr=False)  # lower() ran (compile does not lower again)
    keyword_inputs: list = field(default_factory=list)  # the last inputs' keywords (example_kwargs' tensors)
    output_tree: list | None = field(
        default=None, repr=False
    )  # the module's result (hir.frontend.output_tree); None: a list

    def state(self, module: torch.nn.Module) -> dict:
        """``module``'s whole state as ``@main`` takes it (non-persistent buffers included)."""
        return {**dict(module.named_buffers()), **module.state_dict()}

    def arguments(
        self, state_dict: Mapping | None, *inputs: torch.Tensor, rank: int | None = None, **keyword_inputs: torch.Tensor
    ) -> list:
        """``@main``'s arguments from a state dict (None: the state the program was imported
        or loaded with, :attr:`weights`) and the inputs: full tensors for an unsharded
        program, else rank ``rank``'s shards (default: this process's rank). Each state entry
        and input must have its ``@main`` argument's global shape and dtype; the error names the
        entry or input and the caller's line (not the torch source line ``@main`` is located at)."""
        inputs = self.with_keywords(inputs, keyword_inputs)
        if len(inputs) != self.num_inputs:
            raise HirError(f"error: the module takes {self.num_inputs} input(s), got {len(inputs)}")
        state = self.state_values(self.weights if state_dict is None else state_dict)
        self._check(state + list(inputs))
        full = [_full(t) for t in state] + list(inputs)

        return shard_arguments(self.module, self.mesh, full, rank)

    def with_keywords(self, inputs: tuple, keyword_inputs: dict) -> tuple:
        """The inputs in ``@main``'s order: positional, then the keyword inputs by keyword
        (none given: every input positional, the keyword ones last, as a compiled program takes them)."""
        if not keyword_inputs:
            return tuple(inputs)
        unknown = [k for k in keyword_inputs if k not in self.keyword_inputs]
        missing = [k for k in self.keyword_inputs if k not in keyword_inputs]
        if unknown or missing:
            raise HirError(
                f"{_caller()}: error: the module's keyword inputs are {self.keyword_inputs or 'none'}; "
                f"{f'got {unknown}' if unknown else f'{missing} missing'}"
            )
        return tuple(inputs) + tuple(keyword_inputs[k] for k in self.keyword_inputs)

    def state_values(self, state_dict: Mapping) -> list:
        """The state entries in ``@main``'s order from ``state_dict`` (a tied tensor under
        either name; non-persistent buffers from the import when absent)."""
        if not isinstance(state_dict, Mapping):
            raise HirError(
                f"{_caller()}: error: the state dict must be a dict of "
                f"tensors (module.state_dict()), got {type(state_dict).__name__}"
            )
        by_entry = {self.aliases.get(n, n): t for n, t in state_dict.items()}
        missing = [n for n in self.state_names if n not in by_entry and n not in self.captured]
        if missing:
            raise HirError(f"error: the state dict lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        return [by_entry[n] if n in by_entry else self.captured[n] for n in self.state_names]

    def save(self, path: str, state_dict: Mapping | None = None, *, weights: str | None = None) -> str:
        """Write :attr:`module` to ``path`` and the state (``state_dict``, default
        :attr:`weights`) as safetensors to ``weights`` (default: ``path`` with suffix
        ``.safetensors``), recording the file and each argument's key in the module;
        ``hir.load(path)``, ``hir-run path`` and ``hir.run`` read them back. Returns the
        weights path. See :mod:`hir.frontend.saving`."""
        return save(self.module, lambda: self.state_tensors(state_dict), path, weights)

    def state_tensors(self, state_dict: Mapping | None = None) -> dict:
        """``{state name: global CPU tensor}`` of every state entry from ``state_dict``
        (default: :attr:`weights`), checked against ``@main``'s argument types: what
        :meth:`save` writes."""
        values = self.state_values(self.weights if state_dict is None else state_dict)
        self._check(values)  # each entry's global shape and dtype
        # safetensors refuses tensors sharing memory (a view of another entry): own copies
        return {name: _full(value).to("cpu", copy=True).contiguous() for name, value in zip(self.state_names, values)}

    def _check(self, values: Sequence[Any]) -> None:
        """Each value (state entries, then inputs) must fit its ``@main`` argument."""
        types = _main_types(self.module)
        sizes: dict = {}  # dynamic dim symbol -> (extent, input, axis) first seen
        for i, (value, type_) in enumerate(zip(values, types)):
            if not is_memref(type_):
                continue
            state = i < len(self.state_names)
            what = f"state entry '{self.state_names[i]}'" if state else f"input {i - len(self.state_names)}"
            spec = buffer_spec(type_, 0)
            origin = "" if state else " (the example input hir.from_torch imported)"
            expected, got = f"a tensor of shape {fmt_shape(spec.shape)}{origin}", None
            if not isinstance(value, torch.Tensor):
                got = type(value).__name__
            elif not spec.fits(value.shape):
                got = fmt_shape(value.shape)
            elif value.dtype != spec.dtype:
                expected, got = f"dtype {spec.dtype}{origin}", value.dtype
            if got is not None:
                raise HirError(f"{_caller()}: error: {what}: expected {expected}, got {got}")
            if not state:
                self._check_dynamic(i - len(self.state_names), value, spec, sizes)

    def check_dynamic(self, inputs: Sequence[Any]) -> None:
        """The inputs' dynamic dims (``inputs``: global tensors, in ``@main``'s order after the
        state) fit (:func:`hir.frontend.dynamic.check_dims`); a compiled program checks each new input signature."""
        sizes: dict = {}
        for i, (value, type_) in enumerate(zip(inputs, _main_types(self.module)[len(self.state_names) :])):
            if is_memref(type_) and isinstance(value, torch.Tensor) and value.dim() == len(buffer_spec(type_, 0).shape):
                self._check_dynamic(i, value, buffer_spec(type_, 0), sizes)

    def _check_dynamic(self, i: int, value: torch.Tensor, spec: Any, sizes: dict) -> None:
        dims = self.dynamic_dims[i] if i < len(self.dynamic_dims) else {}
        if dims:
            check_dims(dims, i, value, spec.parts, sizes, _caller())

    def lower(self, overlap: str = "auto", pipeline: str | None = None, ranks_per_node: int | None = None) -> ir.Module:
        """Lower :attr:`module` in place (once) and return it. By default with
        ``hir-lower-overlap``: on several ranks, each collective in P2P form (the SP
        all-gather before a linear, the reduce-scatter after one) is pipelined on copy engines
        where the ``overlap=auto`` rule of hir-p2p-pipeline says it beats the whole collective
        (sizes and team size); ``overlap="on"`` / ``"off"`` forces the pipelined / whole form
        everywhere; ``pipeline`` replaces the whole pipeline. ``ranks_per_node``: the
        program runs on nodes of that many ranks (``hir-set-node-layout`` first): teams that
        span nodes get NCCL, never copy engines (docs/multi-node.md)."""

        if overlap not in ("auto", "on", "off"):
            raise HirError(f"error: TorchProgram.lower: overlap must be 'auto', 'on' or 'off', got {overlap!r}")
        steps = pipeline or overlap_pipeline(overlap)
        if ranks_per_node is not None:
            if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int) or ranks_per_node < 1:
                raise HirError(
                    f"error: TorchProgram.lower: ranks_per_node must be a positive int, got {ranks_per_node!r}"
                )
            steps = f"hir-set-node-layout{{ranks-per-node={ranks_per_node}}},{steps}"
        module = lower(self.module, steps, verify_each=False)  # verified once, after the last pass
        self.lowered = True
        return module

    def compile(self, state: Mapping | None = None, **options: Any) -> "CompiledProgram":
        """This program with ``state`` bound (None: its own :attr:`weights`), compiled once:
        ``fn = program.compile(state, device="cuda")``, then ``fn(*inputs)`` (what the module
        returns: :attr:`output_tree`) as often as needed, each call costing only the
        interpreter's run (CUDA graph replays on GPU); ``fn.run(*inputs)``: the list of results.
        Lowers the module first unless it was (``lower=False``: run it as it is); other
        options are :class:`hir.interpreter.Program`'s. See :mod:`hir.frontend.compiled`."""
        return compile_program(self, self.weights if state is None else state, **options)

    @checkpoint
    def run(self, state_dict: Mapping | None, *inputs: torch.Tensor, **options: Any) -> list:
        """Run ``@main`` once on this rank with :func:`hir.run` options (``state_dict`` None:
        the program's own :attr:`weights`): builds the interpreter's plan on every call (a
        one-shot check); for repeated calls, :meth:`compile` once and call the result."""
        keyword_inputs = {k: options.pop(k) for k in self.keyword_inputs if k in options}
        return run(self.module, self.arguments(state_dict, *inputs, **keyword_inputs), **options)


def _main_types(module: ir.Module) -> list:
    """``@main``'s argument types."""
    main = next(op for op in module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME)
    return list(ir.FunctionType(ir.TypeAttr(main.operation.attributes["function_type"]).value).inputs)


def _caller() -> str:
    """``file:line`` of the innermost frame outside hir: the user's call."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != "hir" and not name.startswith("hir."):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<hir>"


def _full(tensor: torch.Tensor) -> torch.Tensor:
    """A state entry as a plain tensor (a DTensor is gathered: a collective on its mesh)."""
    full_tensor = getattr(tensor, "full_tensor", None)  # a DTensor's; checked without importing DTensor
    return (full_tensor() if full_tensor is not None else tensor).detach()


def from_torch(
    module: torch.nn.Module,
    example_args: Sequence[Any],
    *,
    example_kwargs: dict | None = None,
    mesh: Sequence[int] | None = None,
    placements: dict | None = None,
    source_name: str | None = None,
    dynamic_shapes: Any = None,
    dynamic: dict | None = None,
    grouped_attention: bool = True,
    fused_projections: bool = True,
    keep_composites: bool = True,
    replicate_fallback: bool = True,
) -> TorchProgram:
    """Import ``module`` (called on ``example_args`` and ``example_kwargs``) as a program-level
    hir module. The tensors of ``example_kwargs`` are inputs after the positional ones
    (``input<N>`` in order, or their keyword in ``placements`` / ``dynamic``; pass them to
    :meth:`TorchProgram.run` by keyword); its other values are constants of the program.

    ``mesh``: the device ids of a 1-D mesh, a nested list for a multi-D mesh (``[[0, 1],
    [2, 3]]``) or a ``torch.distributed.DeviceMesh``, with ``placements`` mapping state names,
    input positions (``"input0"``...) and outputs (``"output0"``...) to DTensor placements
    (``Shard(dim)``/``Replicate()``, a tuple of one per mesh dimension; alone on a 1-D mesh); a module
    parallelized with ``torch.distributed.tensor.parallel`` brings its own placements on
    its DTensor parameters. See :mod:`hir.frontend.placements`.

    ``dynamic_shapes`` (torch.export's spec: a ``torch.export.Dim`` per dynamic dim, one
    entry per example argument or a dict by ``forward``'s parameter names) or ``dynamic``
    (``{"input0": {0: "batch", 1: "seq"}}``; equal names are one dim) mark dims dynamic:
    they are ``?`` in the program's types and one program runs every size (a dim split over
    devices must divide; checked at run time). See :mod:`hir.frontend.dynamic`.

    ``grouped_attention`` (default on; unsharded imports only): grouped-query attention
    reads each key/value head once instead of a copy per query head;
    ``fused_projections`` (default on; unsharded imports only): the projections of one input
    (attention's q, k, v) run as one GEMM on their weights concatenated once per set of
    weights, which the program keeps (:mod:`hir.frontend.fx_rewrites`).

    ``keep_composites`` (default on): ``linear``, ``layer_norm``, attention... stay single
    ops; off, torch decomposes them as autograd does, which a module that calls
    ``torch.autograd.grad`` in its ``forward`` needs (:func:`hir.train_step` imports so).

    ``replicate_fallback=False``: an op with no placement for its operands' splits is an error
    naming it, not replicated copies (:mod:`hir.frontend.data_parallel`)."""
    if not isinstance(module, torch.nn.Module):
        raise HirError(f"error: hir.from_torch: module must be a torch.nn.Module, got {type(module).__name__}")
    if placements is not None and not isinstance(placements, dict):
        raise HirError(
            "error: hir.from_torch: placements must be a dict (state name / "
            f"'input0' / 'output0' -> placement), got {type(placements).__name__}"
        )
    if not isinstance(example_args, (tuple, list)):
        example_args = (example_args,)
    if example_kwargs is not None and not isinstance(example_kwargs, dict):
        raise HirError(
            "error: hir.from_torch: example_kwargs must be a dict "
            f"(keyword -> value), got {type(example_kwargs).__name__}"
        )
    kwargs = example_kwargs or {}
    keywords = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]  # inputs; the rest are constants
    constants = {k: v for k, v in kwargs.items() if k not in keywords}
    example_args = tuple(example_args) + tuple(kwargs[k] for k in keywords)
    placements = {
        (f"input{len(example_args) - len(keywords) + keywords.index(k)}" if k in keywords else k): v
        for k, v in (placements or {}).items()
    }
    context = new_context()
    source = source_name or f"<{type(module).__name__}>"
    distributed = Distributed(module)
    if mesh is None:
        mesh = distributed.mesh
    placements, plan = with_plan(module, placements or {})
    plan = {**distributed.plan, **plan}  # an HF TP model's own styles fix its layouts too
    with context, ir.Location.unknown():
        spec, state_spec = export_spec(module, len(example_args), dynamic_shapes, dynamic, keywords)
        try:
            unsharded = mesh is None and not placements
            with distributed.whole(), plan_layouts(module, plan):
                torch_module, exported, shapes = export_to_torch_mlir(
                    module,
                    example_args,
                    context,
                    spec,
                    keywords,
                    constants,
                    grouped_attention and unsharded,
                    fused_projections and unsharded,
                    keep_composites,
                    state_spec,
                )
        except HirError as err:  # located at the user's file (hir-import) or call
            raise HirError(
                f"{source_name}: {err.message}" if source_name and err.message.startswith("error:") else err.message
            ) from None
        names = exported.state_names
        torch_func = next(op for op in torch_module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME)
        try:
            grid, arguments, outputs = mesh_inputs(
                torch_func, names, len(example_args), mesh, {**distributed.placements, **placements}
            )
        except HirError:
            raise
        except (TypeError, ValueError) as err:
            raise HirError(f"error: hir.from_torch: mesh={mesh!r}: {err}") from None
        scalar = scalar_argument(torch_func)
        if scalar is not None:  # the partition would stop at its first use, less clearly
            raise HirError(f"{source}: error: cannot import {type(module).__name__}: {scalar}")
        try:
            with progress.task("partitioning into hir ops and kernel segments"):
                plan = Placer(torch_func, grid, arguments, outputs, source, names, replicate_fallback).plan(
                    exported.mutated
                )
                hir_module = Partitioner(torch_func, plan, source, shapes).build(mutated=exported.mutated)
        except HirError:
            raise
        except ValueError as err:  # a value the partitioner cannot place (see unsupported_reason)
            raise HirError(
                f"{source}: error: cannot import {type(module).__name__}: "
                f"{unsupported_reason(torch_func, err, spec is not None)}"
            ) from None
        mark_parameters(hir_module, len(names), exported.mutated)
        try:
            hir_module.operation.verify()
        except ir.MLIRError as err:
            raise HirError(format_mlir_error(err, source)) from None
    inputs = torch_func.regions[0].blocks[0].arguments[len(names) :]
    dynamic_dims = [
        {a: (str(e), *dim_info(spec, i, a, e)) for a, e in enumerate(shapes.get(v, ())) if not isinstance(e, int)}
        for i, v in enumerate(inputs)
    ]
    weights = {**dict(module.named_buffers()), **module.state_dict()}  # references: later updates are seen
    return TorchProgram(
        hir_module,
        names,
        len(example_args),
        None if grid is None else grid.devices,
        exported.aliases,
        exported.captured,
        exported.output_names,
        dynamic_dims,
        weights,
        keyword_inputs=keywords,
        output_tree=exported.output_tree,
    )
