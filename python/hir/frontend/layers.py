"""The marks ``hir-recompute-layers`` reads (:mod:`hir.passes.training.recompute`), made
from the model's module structure when ``hir.train_step(..., recompute=True)`` imports a
step, or from the model's own ``torch.utils.checkpoint`` calls: every op of the forward gets
``hir.forward``, every op of one of the model's repeated blocks (of a checkpointed region,
:func:`marking_checkpoints`) ``hir.layer = "NAME"`` (the module path: ``model.layers.3``).

How: while the step is exported, ``torch.fx.traceback.annotate`` puts the marks in the
``custom`` metadata of the FX nodes it traces (around ``loss_fn``: :func:`forward_marks`;
around each block's ``forward``, by module hooks: :func:`marking_layers`); the FX importer
locates each marked node's op at a fused location carrying its marks
(:func:`mark_locations`), which the partition keeps on the ops it builds from it; and
:func:`marks_to_attributes` turns them into the attributes of ``@main``'s ops. The backward,
traced by autograd below the hooks, carries no marks.
"""

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
import torch.utils.checkpoint as checkpoint
from torch_mlir import ir
from torch_mlir.extras.fx_importer import ContextCache

FORWARD = "hir.forward"
LAYER = "hir.layer"


def repeated_blocks(model: torch.nn.Module) -> list:
    """``(module path, module)`` of each child of a ``ModuleList`` / ``Sequential`` whose
    children (two or more) are all of one class: a transformer's layers. The outermost such
    lists only (an MoE layer's experts are part of their layer)."""
    found: list = []

    def visit(prefix: str, module: torch.nn.Module) -> None:
        for name, child in module.named_children():
            kids = list(child.children()) if isinstance(child, (torch.nn.ModuleList, torch.nn.Sequential)) else []
            if len(kids) >= 2 and len({type(k) for k in kids}) == 1:
                found.extend((f"{prefix}{name}.{n}", k) for n, k in child.named_children())
            else:
                visit(f"{prefix}{name}.", child)

    visit("", model)
    return found


def forward_marks() -> contextlib.AbstractContextManager:
    """The ops traced inside get ``hir.forward`` (``loss_fn``'s call)."""
    import torch.fx.traceback as fx_traceback  # loaded on first use only

    return fx_traceback.annotate({FORWARD: True})


@contextlib.contextmanager
def marking_layers(blocks: list, prefix: str = "") -> Iterator[None]:
    """While exporting: the ops of each block's forward get ``hir.layer = prefix + path``
    (node metadata kept through the trace)."""
    import torch.fx.traceback as fx_traceback  # loaded on first use only

    entered: list = []
    handles = []

    def enter(name: str) -> Any:
        def hook(module: torch.nn.Module, args: Any) -> None:
            marks = fx_traceback.annotate({LAYER: name})
            marks.__enter__()
            entered.append(marks)

        return hook

    def leave(module: torch.nn.Module, args: Any, output: Any) -> None:
        entered.pop().__exit__(None, None, None)

    for name, block in blocks:
        handles.append(block.register_forward_pre_hook(enter(prefix + name)))
        handles.append(block.register_forward_hook(leave, always_call=True))
    try:
        with fx_traceback.preserve_node_meta():
            yield
    finally:
        for handle in handles:
            handle.remove()
        while entered:  # a trace that failed inside a block
            entered.pop().__exit__(None, None, None)


@contextlib.contextmanager
def marking_checkpoints(model: torch.nn.Module, prefix: str = "") -> Iterator[list]:
    """While exporting: the ops of each region the model runs through
    ``torch.utils.checkpoint.checkpoint`` (non-reentrant: HF's
    ``gradient_checkpointing_enable()`` too) get ``hir.layer`` = the checkpointed module's
    path (``prefix + path``; ``checkpoint.N`` for a function that is no module of the model);
    yields the list of names marked. The export keeps one forward of such a region and the
    backward reads its activations (the recomputation torch would run is not traced):
    ``hir-recompute-layers`` then recomputes it as ``recompute=True`` does a layer.

    How: checkpoint's forward runs between the two steps of its generator
    (``torch.utils.checkpoint._checkpoint_without_reentrant_generator``, looked up when
    called), which is wrapped to mark the ops traced in between."""
    paths = {id(m): prefix + name for name, m in model.named_modules() if name}
    original = checkpoint._checkpoint_without_reentrant_generator
    marked: list = []

    def marking(fn: Any, *rest: Any, **kwargs: Any) -> Iterator[None]:
        name = paths.get(id(_checkpointed_module(fn)), f"checkpoint.{len(marked)}")
        marked.append(name)
        inner = original(fn, *rest, **kwargs)
        next(inner)
        with fx_traceback.annotate({LAYER: name}):
            yield
        yield from inner

    checkpoint._checkpoint_without_reentrant_generator = marking
    try:
        with fx_traceback.preserve_node_meta():
            yield marked
    finally:
        checkpoint._checkpoint_without_reentrant_generator = original


def _checkpointed_module(fn: Any) -> Any:
    """The module a checkpointed function runs: the module, its bound method, or a partial
    of either (HF's ``partial(forward, layer)``)."""
    if isinstance(fn, functools.partial):
        if fn.args and isinstance(fn.args[0], torch.nn.Module):
            return fn.args[0]
        fn = fn.func
    return fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)


def mark_locations(importer: Any, graph: torch.fx.Graph) -> None:
    """Locate each marked node's op (``importer``: torch-mlir's ``FxImporter``) at
    ``loc(fused<{hir.forward, hir.layer = ...}>[its own location])``; nothing when ``graph``
    has no marks. An unmarked node without a location of its own is located unknown
    instead of at the node before it (which may be marked)."""
    if any(LAYER in _marks(n) for n in graph.nodes):  # (forward marks alone recompute nothing)
        importer._cc.__class__ = _MarkingCache  # the importer's location hook: the only place that sees each node


class _MarkingCache(ContextCache):
    """torch-mlir's context cache, each node's location carrying its marks."""

    __slots__ = ()

    def get_node_location(self, node: torch.fx.Node) -> ir.Location:
        loc = super().get_node_location(node) or ir.Location.unknown()
        marks = _marks(node)
        if not marks:
            return loc
        entries: dict[str, ir.Attribute] = {
            k: ir.UnitAttr.get() if v is True else ir.StringAttr.get(str(v)) for k, v in marks.items()
        }
        return ir.Location.fused([loc], ir.DictAttr.get(entries))


def _marks(node: torch.fx.Node) -> dict:
    custom = node.meta.get("custom") or {}
    return {k: v for k, v in custom.items() if k in (FORWARD, LAYER)}


def marks_to_attributes(module: ir.Module) -> None:
    """The marks on the locations of ``@main``'s ops as their attributes. A kernel segment's
    call is located at the segment's first op, which may be unmarked (the segment starts
    before the forward, or before a block): it takes the marks of the segment's ops (forward
    if any is, the first block named)."""
    functions = {
        ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
        for op in module.body.operations
        if op.operation.name == "func.func"
    }
    for op in functions["main"].regions[0].blocks[0].operations:
        marks = _location_marks(op.location)
        if op.operation.name == "func.call":
            callee = functions.get(ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value)
            if callee is not None:
                marks = _segment_marks(callee)
        for name, value in marks.items():
            op.attributes[name] = value


def _location_marks(loc: ir.Location) -> dict:
    marks = loc.metadata.maybe_downcast() if isinstance(loc, ir.FusedLoc) and loc.metadata is not None else None
    if not isinstance(marks, ir.DictAttr):
        return {}
    return {name: marks[name] for name in (FORWARD, LAYER) if name in marks}


def _segment_marks(fn: ir.Operation) -> dict:
    found: dict = {}
    for op in fn.regions[0].blocks[0].operations:
        marks = _location_marks(op.location)
        for name, value in marks.items():
            found.setdefault(name, value)
    return found
