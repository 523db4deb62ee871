"""Annotating a tensor program (e.g. one imported from PyTorch by torch-mlir's FX importer at
the ``linalg-on-tensors`` level) with MLIR ``shard`` dialect shardings, for
:func:`hir.from_shard`:

    module = torch_mlir.fx.export_and_import(mlp, x, w1, w2, output_type="linalg-on-tensors")
    with module.context:
        fn = add_grid(module, "tp", 4)                  # shard.grid @tp(shape = 4)
        x, w1, w2 = fn.arguments
        shard_value(w1, "tp", [[], [0]])                 # columns split over the grid
        shard_value(w2, "tp", [[0]])                     # rows split
        shard_value(result(fn), "tp", [[]], for_users=True)  # the result is replicated
    hir.from_shard(module)

``split_axes`` lists, per tensor dim, the grid axes it is split over (``[[], [0]]``: dim 1
over grid axis 0), as in ``shard.sharding``.
"""

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import func, shard


def add_grid(module: ir.Module, name: str, size: int) -> func.FuncOp:
    """Add ``shard.grid @name(shape = size)`` at the top of ``module``; return its (single)
    public function."""
    with module.context, ir.Location.unknown():
        shard.grid(name, [size], ip=ir.InsertionPoint.at_block_begin(module.body))
    funcs = [op for op in module.body.operations if isinstance(op, func.FuncOp)]
    if len(funcs) != 1:
        raise ValueError(f"expected one function in the module, found {len(funcs)}")
    return funcs[0]


def result(fn: func.FuncOp, index: int = 0) -> ir.Value:
    """The value ``fn`` returns at ``index``."""
    block = fn.regions[0].blocks[0]
    return block.operations[len(block.operations) - 1].operands[index]


def _axes_attr(split_axes: Sequence[Sequence[int]]) -> ir.Attribute:
    groups = ", ".join("[" + ", ".join(map(str, axes)) + "]" for axes in split_axes)
    return ir.Attribute.parse(f"#shard<axisarray[{groups}]>")


def shard_value(
    value: ir.Value, grid: str, split_axes: Sequence[Sequence[int]], *, for_users: bool = False
) -> ir.Value:
    """Annotate ``value`` with a sharding right after its definition and make every other use
    read the annotated value; return it. ``for_users``: the sharding its users need
    (``annotate_for_users``: the partitioner reshards into it) rather than the one it has."""
    defined_by = value.owner
    if isinstance(defined_by, ir.Block):  # a block argument
        ip = ir.InsertionPoint(defined_by.operations[0])  # before the body, after earlier annotations
    else:
        owner = defined_by.operation
        block = owner.block
        ops = list(block.operations)
        position = next(i for i, op in enumerate(ops) if op.operation == owner)
        ip = ir.InsertionPoint(ops[position + 1]) if position + 1 < len(ops) else ir.InsertionPoint(block)
    with value.context, ir.Location.unknown():
        sharding = shard.sharding(grid, _axes_attr(split_axes), [], [], ip=ip)
        annotated = shard.shard(value, sharding, annotate_for_users=for_users or None, ip=ip)
    value.replace_all_uses_except(annotated, annotated.owner.operation)
    return annotated
