"""``hir-set-node-layout{ranks-per-node=N}``: record which ranks share a node, so the passes
after it keep copy engines inside nodes (``hir.dialect.nodes``).

Run it first (``hir-set-node-layout{ranks-per-node=2},hir-lower-overlap``): the backend
choices of hir-convert-to-communication and hir-p2p-pipeline read the attribute it sets, so
the lowered program is the same wherever it is lowered. Before (with ``ranks-per-node=2``)::

    module {
      func.func @main(...) { ... }
    }

After::

    module attributes {hir.ranks_per_node = 2 : i64} {
      func.func @main(...) { ... }
    }

A module that already says another count is an error (its backends may have been chosen
for that one), as is one that already runs copy engines (``backend = "cuda"``) on a team
the new layout puts on several nodes. The interpreter checks the attribute against the
launcher's ``LOCAL_WORLD_SIZE`` / ``GROUP_RANK`` at run start.

The pass is analysis only: it rewrites no op (one module attribute set after checks of the
ops), so it builds no pattern set.
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect.nodes import (
    RANKS_PER_NODE_ATTR,
    cross_node_copy_engine_op,
    describe_span,
    module_ranks_per_node,
    set_module_ranks_per_node,
)
from hir.passes.base import ModulePass, PassFailure, fail, register_pass


@register_pass
@dataclass
class SetNodeLayout(ModulePass):
    name = "hir-set-node-layout"
    description = (
        "Record ranks-per-node=N (module attribute hir.ranks_per_node): "
        "teams spanning nodes then get NCCL, not copy engines."
    )
    ranks_per_node: int = 0

    def run(self, module: ir.Module) -> bool:
        if self.ranks_per_node < 1:
            raise PassFailure(
                f"{self.name}: ranks-per-node must be a positive number of "
                f"ranks (torchrun's --nproc-per-node), got {self.ranks_per_node}"
            )
        try:
            fixed = module_ranks_per_node(module)
        except ValueError as err:
            raise PassFailure(f"{self.name}: {err}") from None
        if fixed == self.ranks_per_node:
            return False
        if fixed is not None:
            raise PassFailure(
                f"{self.name}: ranks-per-node={self.ranks_per_node} contradicts the module's "
                f"{RANKS_PER_NODE_ATTR} = {fixed} (its communication may already be placed for that layout)"
            )
        found = cross_node_copy_engine_op(module, self.ranks_per_node)
        if found is not None:
            op, team = found
            raise fail(
                op,
                f'runs on copy engines (backend = "cuda") but its {describe_span(team, self.ranks_per_node)}; '
                f"lower with {self.name} before hir-convert-to-communication / hir-p2p-pipeline",
            )
        set_module_ranks_per_node(module, self.ranks_per_node)
        return True
