"""Teams of communicating ops: ``team = array<i64: ...>`` is one team; on a multi-dimensional
mesh ``team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`` is a device layout with one team
per row (the mesh's lines along one mesh axis, or planes along several), each rank taking
part in the row that holds it. Rooted ops name one root per team (``root = 0 : i64``, or
``root = array<i64: ...>`` with a layout). Read by the verifiers (``checked_teams`` in
``hir.dialect.collective``), the passes that emit teams and the interpreter."""

from typing import Any

from torch_mlir import ir

from hir.dialect.base import i64_elements
from hir.dialect.sharding import Sharding


def is_multi_team(op: Any, name: str = "team") -> bool:
    """Whether ``op``'s teams are given as a device layout (one team per row)."""
    attrs = op.operation.attributes
    try:
        ir.DenseI64ArrayAttr(attrs[name])
        return False
    except (ValueError, TypeError, KeyError):
        return True


def teams_of(op: Any, name: str = "team") -> list[list[int]]:
    """The teams of a communication of verified IR: ``team = array<i64: ...>`` is one team;
    ``team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`` (on a multi-D mesh) one team per
    row, each rank taking part in the row that holds it."""
    return teams_in(op.operation.attributes[name])


def teams_in(attr: ir.Attribute) -> list[list[int]]:
    """The teams a verified ``team`` attribute lists (see :func:`teams_of`)."""
    try:
        return [list(ir.DenseI64ArrayAttr(attr))]
    except (ValueError, TypeError):
        pass  # a device layout: one team per row
    layout = ir.DenseIntElementsAttr(attr)
    width = ir.RankedTensorType(layout.type).shape[-1]
    flat = [int(d) for d in layout]
    return [flat[i : i + width] for i in range(0, len(flat), width)]


def roots_of(op: Any) -> list[int]:
    """The root device of each team of a rooted communication of verified IR: ``root = 0 :
    i64`` for one team; ``root = array<i64: 0, 1>`` one per row of a team layout (a
    broadcast on a multi-D mesh: each line of the mesh has its own root)."""
    attr = op.operation.attributes["root"]
    try:
        return list(ir.DenseI64ArrayAttr(attr))
    except (ValueError, TypeError):
        return [ir.IntegerAttr(attr).value]


def root_of(op: Any, team: list[int]) -> int:
    """The root of ``team``, one of ``op``'s teams."""
    return roots_of(op)[teams_of(op).index(list(team))]


def teams_attr(teams: list[list[int]]) -> ir.Attribute:
    """The ``team`` attribute of collectives run by several disjoint teams (one per row)."""
    return i64_elements([d for team in teams for d in team], [len(teams), len(teams[0])])


def team_mesh_axes(sharding: Sharding, teams: list[list[int]]) -> tuple[int, ...] | None:
    """The mesh axes whose lines are ``teams`` (one axis, or several: a team along 0 and 1
    of a 2x2 mesh is all four devices, row-major); None: they are not the lines of any."""
    wanted = sorted(map(tuple, teams))
    rank = len(sharding.mesh_shape)
    subsets = [tuple(k for k in range(rank) if bits >> k & 1) for bits in range(1, 1 << rank)]
    return next((axes for axes in sorted(subsets, key=len) if wanted == sorted(sharding.lines(axes))), None)
