"""The base of every collective (:class:`CollectiveOp`, the kinds are in
:mod:`hir.dialect.comm`): its fields, the team check (one team, or a device layout with one
team per row on a multi-dimensional mesh, each line seeing its block as a 1-D placement) and
the checks the kinds share."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, WorkType, required_int, work_type
from hir.dialect.checks import check_axis, check_same_element_type, fail, int_attr, memref_type, str_attr
from hir.dialect.sharding import MultiDimMeshError, Sharding, sharding_of
from hir.dialect.teams import is_multi_team, team_mesh_axes, teams_of

BACKENDS = ("nccl", "gloo", "cuda")
REDUCTIONS = ("sum", "prod", "max", "min")


def split_axis(sharding: Sharding | None) -> int | None:
    return None if sharding is None else sharding.axis


def checked_teams(op: Any) -> list[list[int]]:
    attrs = op.operation.attributes
    if "team" not in attrs:
        fail("requires attribute 'team' = array<i64: ...> (or dense<...> : tensor<TxNxi64>, one team per row)")
    if is_multi_team(op):
        try:
            layout = ir.DenseIntElementsAttr(attrs["team"])
        except (ValueError, TypeError):
            fail(f"attribute 'team' must be array<i64: ...> or dense<...> : tensor<TxNxi64>, got {attrs['team']}")
        if ir.RankedTensorType(layout.type).rank != 2:
            fail(f"a team layout must be 2-D (one team per row), got {layout.type}")
    teams = teams_of(op)
    flat = [d for team in teams for d in team]
    if not flat:
        fail("team must not be empty")
    if len(set(flat)) != len(flat) or min(flat) < 0:
        fail(f"team {teams if len(teams) > 1 else teams[0]} must hold distinct non-negative device ids")
    return teams


def _block_type(t: ir.MemRefType, sharding: Sharding, mesh_axes: tuple[int, ...], device: int) -> ir.MemRefType:
    """The type of the block of ``t`` that the line through ``device`` along ``mesh_axes``
    holds together, placed on that line."""
    shape = sharding.others_local(t.shape, mesh_axes)
    space = sharding.along(device, mesh_axes).attr()
    return ir.MemRefType.get(shape, t.element_type, memory_space=space, loc=ir.Location.unknown())


class CollectiveOp(HirOp):
    """Shared fields and checks of every collective: reads ``input``, writes ``output``."""

    input: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    team: Any
    backend: ir.StringAttr
    work: ext.Result[WorkType[()]] = ext.infer_result()
    DESTINATIONS = (1,)
    TEAM_ATTR = "team"
    STREAMABLE = True
    INPUT_AXIS_ATTRS = ("axis", "scatter_axis")
    REDUCES_AXIS = False  # the output drops input axis ``axis`` (reduced across the team)
    # The result can take the input's storage when each rank holds one block of ``axis``: the
    # output is then the local input without that axis, reduced in place (NCCL, Gloo).
    RESULT_IN_INPUT = False
    ROOT_PER_TEAM = False  # rooted and run by a team layout: ``root`` lists one device per row

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        if index == 1 or not cls.REDUCES_AXIS:
            return k
        return k + (1 if k >= required_int(op, "axis") else 0)

    @classmethod
    def emit(cls, input: ir.Value, output: ir.Value, attributes: dict, *, name: str | None = None) -> ir.OpResult:
        """``attributes``: team, backend and the kind's own (axis, root, reduction, ...)."""
        return cls._create([input, output], [work_type()], attributes, name=name).result

    def check(self) -> None:
        teams = self.teams = checked_teams(self)
        str_attr(self, "backend", BACKENDS)
        self.in_type = memref_type(self.input, "input")
        self.out_type = memref_type(self.output, "output")
        check_same_element_type(self.in_type, self.out_type, "input", "output")
        self.in_sharding = sharding_of(self.in_type, "input")
        self.out_sharding = sharding_of(self.out_type, "output")
        if is_multi_team(self):
            self.project(teams)
        self.team_list = teams[0]
        self.check_collective()
        self.check_meshes()

    def project(self, teams: list[list[int]]) -> None:
        """Teams on a multi-D mesh are its lines along one mesh axis or several: check the
        rules of the kind on what the first line sees (the 1-D placement along those axes, the
        block of the buffers that the line holds together); the other mesh axes must not change."""
        if "root" in self.operation.attributes and not self.ROOT_PER_TEAM:
            fail("a rooted collective other than hir.broadcast takes one team (array<i64: ...>), not a team per row")
        ins, outs = self.in_sharding, self.out_sharding
        if (
            ins is None
            or outs is None
            or not ins.multi_dim
            or (ins.mesh, ins.mesh_shape) != (outs.mesh, outs.mesh_shape)
        ):
            fail(
                "teams given as a device layout (one team per row) need input and output on one multi-dimensional mesh"
            )
        mesh_axes = team_mesh_axes(ins, teams)
        if mesh_axes is None:
            fail(
                f"teams {teams} must be the lines of the mesh {ins.describe()} along some mesh axes, each in mesh order"
            )
        along = f"mesh axis {mesh_axes[0]}" if len(mesh_axes) == 1 else f"mesh axes {list(mesh_axes)}"
        reduced = int_attr(self, "axis") if self.REDUCES_AXIS else None
        for k, (a, b) in enumerate(zip(ins.splits, outs.splits)):
            if k not in mesh_axes and b != (a if a is None or reduced is None else a - (a > reduced)):
                fail(
                    f"mesh axis {k} splits input axis {-1 if a is None else a} and output axis "
                    f"{-1 if b is None else b}; a collective along {along} keeps the other mesh axes' splits"
                )
        device = teams[0][0]
        try:
            self.in_type = _block_type(self.in_type, ins, mesh_axes, device)
            self.out_type = _block_type(self.out_type, outs, mesh_axes, device)
        except MultiDimMeshError as err:
            fail(f"a collective along {along} sees each line's block as a 1-D placement: {err}")
        self.in_sharding, self.out_sharding = ins.along(device, mesh_axes), outs.along(device, mesh_axes)

    def check_meshes(self) -> None:
        """Every device holding either buffer takes part (overridden by rooted kinds)."""
        self.require_mesh_in_team("input", self.in_sharding)
        self.require_mesh_in_team("output", self.out_sharding)

    def require_mesh_in_team(self, what: str, sharding: Sharding | None) -> None:
        if sharding is not None and not set(sharding.mesh) <= set(self.team_list):
            fail(f"{what} mesh {list(sharding.mesh)} has devices outside team {self.team_list}")

    def require_on_mesh(self, what: str, sharding: Sharding | None, device: int, role: str) -> None:
        if sharding is not None and device not in sharding.mesh:
            fail(f"{role} {device} is not on the {what} mesh {list(sharding.mesh)}")

    def check_collective(self) -> None:  # pragma: no cover - overridden
        pass

    # Helpers for the per-kind rules below.
    def checked_root(self) -> int:
        """The root of the first team (``self.root_device``; with a team layout every row's root is
        checked: one device of that row)."""
        if len(self.teams) == 1 and not is_multi_team(self):
            roots = [int_attr(self, "root")]
        else:
            try:
                roots = list(ir.DenseI64ArrayAttr(self.operation.attributes["root"]))
            except (ValueError, TypeError, KeyError):
                fail(
                    "with one team per row, root must be array<i64: ...> (one root device per team), got "
                    f"{self.operation.attributes['root'] if 'root' in self.operation.attributes else 'none'}"
                )
            if len(roots) != len(self.teams):
                fail(f"root {roots} names {len(roots)} devices for {len(self.teams)} teams (one root per team)")
        for root, team in zip(roots, self.teams):
            if root not in team:
                fail(f"root {root} is not in team {team}")
        self.root_device = roots[0]
        return self.root_device

    def checked_reduction(self) -> str:
        return str_attr(self, "reduction", REDUCTIONS)

    def checked_axis(self, name: str = "axis") -> int:
        axis = int_attr(self, name)
        check_axis(axis, self.in_type.rank, name)
        return axis

    def require_input_split(self, axis: int) -> None:
        if split_axis(self.in_sharding) != axis:
            fail(f"input must be split along axis {axis} over the team (#hir.shard<..., {axis}>), got {self.in_type}")

    def require_team_is_input_mesh(self) -> None:
        ins = self.in_sharding
        assert ins is not None, "require_input_split runs first"
        if list(ins.mesh) != self.team_list:
            fail(f"team {self.team_list} must equal the input mesh {list(ins.mesh)}")

    def require_not_split(self, what: str, sharding: Sharding | None, axis: int | None = None) -> None:
        split = split_axis(sharding)
        if split is not None and (axis is None or split == axis):
            fail(f"{what} must not be split along axis {split}")

    def reduced_shape(self, axis: int) -> list[int]:
        return [d for i, d in enumerate(self.in_type.shape) if i != axis]
