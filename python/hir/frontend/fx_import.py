"""A ``torch.nn.Module`` as a ``torch``-dialect module: :mod:`hir.frontend.export` exports and
functionalizes it, then torch-mlir's FX importer (``FxImporter.import_stateless_graph``: every
placeholder an argument) turns the exported graph into ``torch``-dialect ops in an hir context,
without decompositions, so ``aten.linear``, ``layer_norm`` or ``scaled_dot_product_attention``
stay single ops. Why the importer rather than our own FX walk: it already knows every schema,
constant, list and literal form of the exported graph (and emits ``torch.operator`` for ops
torch-mlir has no class for), and its output is the IR that upstream torch-mlir passes
understand; the partition step (:mod:`hir.frontend.partition`) only needs op names and operand
constants."""

from collections.abc import Sequence
from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.extras.fx_importer import FxImporter, GraphNodeImporter

from hir import progress
from hir.core import HirError
from hir.frontend.dynamic import symbolic_shapes
from hir.frontend.export import Exported, export
from hir.frontend.layers import mark_locations


def export_to_torch_mlir(
    module: torch.nn.Module,
    example_args: Sequence[Any],
    context: ir.Context,
    dynamic_shapes: tuple | None = None,
    keywords: Sequence[str] = (),
    constants: dict | None = None,
    group_heads: bool = False,
    fuse: bool = False,
    keep_composites: bool = True,
    state_shapes: dict | None = None,
) -> tuple[ir.Module, Exported, dict]:
    """The ``torch``-dialect module of ``module`` (state first, then inputs: the last
    ``len(keywords)`` are keyword inputs; ``constants``: constant keyword arguments), its
    export and the symbolic shape of each tensor value
    (:func:`hir.frontend.dynamic.symbolic_shapes`; empty without ``dynamic_shapes``).
    ``group_heads`` / ``fuse``: :func:`hir.frontend.fx_rewrites.group_query_heads` /
    :func:`~hir.frontend.fx_rewrites.fuse_projections`; ``keep_composites``:
    :func:`hir.frontend.export.functional_export`; ``state_shapes``: the dynamic dims of
    state entries (:func:`hir.frontend.dynamic.export_spec`)."""
    with progress.task(f"exporting {type(module).__name__} (torch.export)"):
        exported = export(
            module,
            example_args,
            constants,
            dynamic_shapes=dynamic_shapes,
            keywords=keywords,
            group_heads=group_heads,
            fuse=fuse,
            keep_composites=keep_composites,
            state_shapes=state_shapes,
        )
    node_importers: list[GraphNodeImporter] = []

    class RecordedNodeImporter(GraphNodeImporter):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            node_importers.append(self)

    importer = FxImporter(context=context, graph_node_importer_cls=RecordedNodeImporter)
    mark_locations(importer, exported.program.graph)  # hir.train_step(recompute=True)'s layer marks, if any
    try:
        # every placeholder an argument: lifted constants are state entries (see export.py)
        with progress.task("importing the graph into MLIR (torch-mlir's FX importer)"):
            importer.import_stateless_graph(exported.program.graph, func_name="main")
    except (AssertionError, NotImplementedError, KeyError, ValueError) as err:
        raise HirError(
            f"error: torch-mlir's FX importer cannot import {type(module).__name__}: {type(err).__name__}: {err}"
        ) from None
    shapes = symbolic_shapes(node_importers[0]) if dynamic_shapes is not None or state_shapes else {}
    return importer.module, exported, shapes
