"""``hir-set-grid-shape{shape=AxB}``: give the dynamic extents of every ``shard.grid`` the
size the program will run on, before propagation and partitioning.

hir places buffers on named devices (``#hir.shard<array<i64: 0, 1, 2, 3>, ...>``), so a grid
of unknown size (``shape = ?``) cannot convert: the interpreter runs on a fixed world.
Upstream partitions a program on a dynamic grid into one of dynamic local shapes; fixing the
grid first partitions it for the world it runs on (``hir-run --nproc``). A ``?`` extent
takes the option's extent on that axis; a static extent must equal it. Before (with
``shape=4``)::

    shard.grid @g(shape = ?)
    func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> { ... }

After::

    shard.grid @g(shape = 4)
    func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> { ... }    // unchanged

Grids of another rank than ``shape``, and any dynamic grid when ``shape`` is not given, are
errors at the grid. One pattern, rooted on ``shard.grid``, applied by the walk driver (each
grid once: a dynamic one is replaced by its copy with static extents, nothing to iterate to
a fixpoint).
"""

from dataclasses import dataclass

from torch_mlir import ir, rewrite
from torch_mlir.dialects import shard

from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.patterns import GuardedRewritePatternSet


def _text(extents: list[int]) -> str:
    return "x".join("?" if ir.ShapedType.is_dynamic_size(e) else str(e) for e in extents)


@register_pass
@dataclass
class SetGridShape(ModulePass):
    name = "hir-set-grid-shape"
    description = "Give every dynamic shard.grid the extents of shape=AxB (the world it runs on), before partitioning."
    shape: str = ""  # "4", "2x2": the grid's extents, one per axis

    def run(self, module: ir.Module) -> None:
        texts = self.shape.split("x") if self.shape else []
        wanted = [int(e) for e in texts if e.isdigit()]
        if len(wanted) != len(texts) or 0 in wanted:
            raise PassFailure(
                f"hir-set-grid-shape: shape must be positive extents joined by 'x' (e.g. 4 or 2x2), got '{self.shape}'"
            )
        patterns = GuardedRewritePatternSet(module.context)
        populate_set_grid_shape_patterns(patterns, self.shape, wanted)
        patterns.walk(module)


def populate_set_grid_shape_patterns(patterns: GuardedRewritePatternSet, shape: str, wanted: list[int]) -> None:
    """A pattern rooted on ``shard.grid``: a dynamic grid takes the extents ``wanted`` (the
    pass's ``shape`` option, named in errors)."""

    def fix_extents(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        grid = root.operation
        extents = list(ir.DenseI64ArrayAttr(grid.attributes["shape"]))
        if not any(ir.ShapedType.is_dynamic_size(e) for e in extents):
            return True  # static already: no match
        if not wanted:
            raise PassFailure(
                f"'shard.grid' op has shape {_text(extents)}; give its extents "
                "with hir-set-grid-shape{shape=...} (the world it runs on)",
                grid.location,
            )
        if len(wanted) != len(extents) or any(
            not ir.ShapedType.is_dynamic_size(e) and e != w for e, w in zip(extents, wanted)
        ):
            raise PassFailure(
                f"'shard.grid' op has shape {_text(extents)}, which shape={shape} "
                "does not fit (one extent per axis; static ones kept)",
                grid.location,
            )
        fixed = grid.clone(ip=rewriter.ip)
        fixed.attributes["shape"] = ir.DenseI64ArrayAttr.get(wanted)
        rewriter.replace_op(grid, fixed)
        return False

    patterns.add(shard.GridOp, fix_extents)
