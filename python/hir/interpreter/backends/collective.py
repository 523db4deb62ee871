"""The compile-time facts of a collective on this rank, which every backend's builder
(``process_group.BUILDERS``, ``copy_engine.BUILDERS``) turns into ``issue(env) -> work``."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch.distributed as dist
from torch_mlir import ir

from hir.dialect import teams as team_ops
from hir.dialect.base import DYNAMIC, get_int
from hir.interpreter.backends.headers import Headers
from hir.interpreter.buffers import BufferSpec

if TYPE_CHECKING:
    from hir.interpreter.plan import Compiler


@dataclass
class CommOp:
    """Compile-time facts shared by the collective handlers."""

    c: "Compiler"
    op: ir.OpView
    team: list[int]
    members: list[int]  # sorted team: index = rank in the sub-group
    group: dist.ProcessGroup | None  # None: the default (world) group
    inp: int
    out: int
    in_spec: BufferSpec
    out_spec: BufferSpec
    headers: Headers | None = None  # the cross-rank shape / dtype check, when on for the group

    def check(self, t) -> None:
        """Refuse, on every member, a ``t`` (this rank's part of the collective) whose shape
        or dtype differs across the team (``backends/headers.py``), when the check is on."""
        if self.headers is not None:
            self.headers.collective(t, self.group)

    def attr(self, name: str) -> int:
        return get_int(self.op, name)  # pyright: ignore[reportReturnType]  # the op's verifier requires it

    @property
    def root(self) -> int:
        """The root of this rank's team (a team layout has one per row)."""
        return team_ops.root_of(self.op, self.team)

    def mesh_order(self, mesh) -> list[int]:
        """For each group rank, the mesh position of that member (-1: not on the mesh)."""
        return [list(mesh).index(m) if m in mesh else -1 for m in self.members]

    def static_local(self, spec: BufferSpec, what: str) -> list[int]:
        shape = spec.local_static()
        if DYNAMIC in shape:
            raise self.c.error(self.op, f"{what} needs a static shape on rank {self.c.rank}, which holds no part of it")
        return shape
