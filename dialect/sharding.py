"""Buffer placements on device meshes: the ``#hir.shard`` memory space, read and written.

A 1-D mesh (nvFuser's DIDx)::

    memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>

is a global 16x8 buffer on devices {0,1,2,3}, split along axis 0 (``-1``: replicated). A
multi-dimensional mesh (torch's ``DeviceMesh``, MLIR's ``shard.grid``) lays the devices out
in a tensor whose shape is the mesh shape and gives one split per mesh axis::

    memref<16x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>

is split along buffer axis 0 over mesh axis 0 (devices 0 and 2 hold different rows) and
replicated along mesh axis 1 (devices 0 and 1 hold the same rows). Several mesh axes may
split one buffer axis (``array<i64: 1, 1>``: MLIR's ``split_axes = [[], [0, 1]]``): it is cut
into the product of their extents, the parts in row-major order of the mesh coordinates
(device (i, j) of a 2x2 mesh holds part 2 * i + j). Types carry the global shape;
:meth:`Sharding.local_shape` derives a rank's shard. A collective on a multi-D mesh acts along
one mesh axis or several: its teams are the mesh's lines (planes) along them
(:meth:`Sharding.line`), and :meth:`Sharding.along` is the 1-D view of the placement one line
sees.
"""

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Optional, Sequence, Union

from torch_mlir import ir

from hir.dialect.base import DYNAMIC, ShardAttr, VerifyError, fail, i64_elements, memref_type


class MultiDimMeshError(ValueError):
    """A 1-D-only consumer met a placement on a multi-dimensional mesh."""


MeshAxes = Union[int, Sequence[int]]  # one mesh axis, or several (a team along all of them)


def _axes(mesh_axes: MeshAxes) -> tuple[int, ...]:
    return (mesh_axes,) if isinstance(mesh_axes, int) else tuple(mesh_axes)


@dataclass(frozen=True, init=False)
class Sharding:
    """A buffer's placement: the mesh's devices (row-major over ``mesh_shape``) and, per
    mesh axis, the buffer axis it splits (None: replicated along that mesh axis).

    ``Sharding(devices, axis)`` is a 1-D mesh; ``Sharding(devices, mesh_shape=(2, 2),
    splits=(0, None))`` a multi-dimensional one."""

    mesh: tuple[int, ...]
    mesh_shape: tuple[int, ...]
    splits: tuple[Optional[int], ...]

    def __init__(self, mesh: Sequence[int], axis: Optional[int] = None, *, mesh_shape: Optional[Sequence[int]] = None, splits: Optional[Sequence[Optional[int]]] = None) -> None:
        mesh = tuple(int(d) for d in mesh)
        if mesh_shape is None:
            shape, per_axis = (len(mesh),), (axis,)
        else:
            if axis is not None or splits is None or len(splits) != len(mesh_shape):
                raise ValueError("a multi-dimensional Sharding takes mesh_shape and one split per mesh axis, no axis")
            shape, per_axis = tuple(int(n) for n in mesh_shape), tuple(splits)
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "mesh_shape", shape)
        object.__setattr__(self, "splits", per_axis)

    @staticmethod
    def of(devices: Sequence[int], mesh_shape: Sequence[int], splits: Sequence[Optional[int]]) -> "Sharding":
        """The placement on the mesh of ``devices`` laid out as ``mesh_shape`` (1-D when it
        has one axis) with ``splits`` per mesh axis."""
        if len(mesh_shape) == 1:
            return Sharding(devices, splits[0])
        return Sharding(devices, mesh_shape=mesh_shape, splits=splits)

    @property
    def multi_dim(self) -> bool:
        return len(self.mesh_shape) > 1

    @property
    def is_split(self) -> bool:
        """Whether some mesh axis splits the buffer (each device holds a part)."""
        return any(s is not None for s in self.splits)

    @property
    def axis(self) -> Optional[int]:
        """The split axis on a 1-D mesh (None: replicated). On a multi-D mesh: None when
        replicated everywhere, else an error (the caller handles only 1-D meshes)."""
        if not self.multi_dim:
            return self.splits[0]
        if not self.is_split:
            return None
        raise MultiDimMeshError(f"this needs a 1-D device mesh; the buffer is placed on the {'x'.join(map(str, self.mesh_shape))} mesh {self.describe()}")

    def describe(self) -> str:
        return f"{list(self.mesh)} with splits {[-1 if s is None else s for s in self.splits]}"

    def parts(self, axis: int) -> int:
        """How many shards buffer axis ``axis`` is cut into."""
        return prod(n for n, s in zip(self.mesh_shape, self.splits) if s == axis)

    def coords(self, device: int) -> tuple[int, ...]:
        """``device``'s position in the mesh."""
        index, out = self.mesh.index(device), []
        for n in reversed(self.mesh_shape):
            out.append(index % n)
            index //= n
        return tuple(reversed(out))

    def shard_index(self, device: int, axis: int) -> int:
        """Which of the :meth:`parts` of buffer axis ``axis`` ``device`` holds."""
        index = 0
        for n, s, c in zip(self.mesh_shape, self.splits, self.coords(device)):
            if s == axis:
                index = index * n + c
        return index

    def local_shape(self, shape: Sequence[int]) -> list[int]:
        """The shape one device holds of a buffer with global ``shape``."""
        return [d if d == DYNAMIC else d // self.parts(i) for i, d in enumerate(shape)]

    def line(self, device: int, mesh_axes: MeshAxes) -> tuple[int, ...]:
        """The devices along mesh axis (or axes) ``mesh_axes`` through ``device`` (its team
        there), row-major over those axes."""
        axes = _axes(mesh_axes)
        coords = list(self.coords(device))
        out = []
        for index in range(prod(self.mesh_shape[k] for k in axes)):
            for k in reversed(axes):
                coords[k] = index % self.mesh_shape[k]
                index //= self.mesh_shape[k]
            flat = 0
            for n, x in zip(self.mesh_shape, coords):
                flat = flat * n + x
            out.append(self.mesh[flat])
        return tuple(out)

    def lines(self, mesh_axes: MeshAxes) -> list[tuple[int, ...]]:
        """Every line of the mesh along ``mesh_axes`` (the teams of a collective there)."""
        seen, out = set(), []
        for device in self.mesh:
            line = self.line(device, mesh_axes)
            if line not in seen:
                seen.add(line)
                out.append(line)
        return out

    def line_split(self, mesh_axes: MeshAxes) -> Optional[int]:
        """The buffer axis that the lines along ``mesh_axes`` split (None: replicated along
        them), when they see a 1-D placement: every one of the axes splits that buffer axis
        or none does, and no mesh axis outside them splits it more finely (the block a line
        holds together is then contiguous). Else a MultiDimMeshError saying why."""
        axes = _axes(mesh_axes)
        split = {self.splits[k] for k in axes}
        if len(split) != 1:
            raise MultiDimMeshError(f"mesh axes {list(axes)} split buffer axes {[-1 if self.splits[k] is None else self.splits[k] for k in axes]}; a team along several mesh axes needs them all to split one buffer axis or none")
        (axis,) = split
        minor = [j for j, s in enumerate(self.splits) if axis is not None and s == axis and j not in axes and j > min(axes)]
        if minor:
            raise MultiDimMeshError(f"buffer axis {axis} is also split by mesh axis {minor[0]}, minor to mesh axes {list(axes)}: a line along them holds no contiguous block")
        return axis

    def along(self, device: int, mesh_axes: MeshAxes) -> "Sharding":
        """The 1-D placement that the line through ``device`` along ``mesh_axes`` sees."""
        return Sharding(self.line(device, mesh_axes), self.line_split(mesh_axes))

    def others_local(self, shape: Sequence[int], mesh_axes: MeshAxes) -> list[int]:
        """``shape`` divided by the splits of every mesh axis but ``mesh_axes``: the global
        shape of the block that one line along ``mesh_axes`` holds together."""
        axes = _axes(mesh_axes)
        return Sharding.of(self.mesh, self.mesh_shape, [None if j in axes else s for j, s in enumerate(self.splits)]).local_shape(shape)

    def renumbered(self, fn: Callable[[int], Optional[int]]) -> "Sharding":
        """The same mesh with each split buffer axis ``a`` moved to ``fn(a)``."""
        return Sharding.of(self.mesh, self.mesh_shape, [None if s is None else fn(s) for s in self.splits])

    def attr(self) -> ir.Attribute:
        i64 = ir.IntegerType.get_signless(64)
        if not self.multi_dim:
            return ShardAttr.get(ir.DenseI64ArrayAttr.get(list(self.mesh)), ir.IntegerAttr.get(i64, -1 if self.splits[0] is None else self.splits[0]))
        return ShardAttr.get(i64_elements(self.mesh, self.mesh_shape), ir.DenseI64ArrayAttr.get([-1 if s is None else s for s in self.splits]))


def _cast(kind: type, attr: ir.Attribute) -> Optional[ir.Attribute]:
    try:
        return kind(attr)
    except (ValueError, TypeError):
        return None


def _parse(space: ShardAttr, what: str) -> tuple[Sharding, list[int]]:
    """The placement and the raw split entries (``-1`` kept) of a ``#hir.shard``."""
    devices = _cast(ir.DenseI64ArrayAttr, space.mesh)
    if devices is not None:
        axis = _cast(ir.IntegerAttr, space.axis)
        if axis is None:
            fail(f"{what}: a 1-D #hir.shard takes one split axis (`0 : i64`), got {space.axis}")
        return Sharding(tuple(devices), None if axis.value == -1 else axis.value), [axis.value]
    layout = _cast(ir.DenseIntElementsAttr, space.mesh)
    if layout is None:
        fail(f"{what}: #hir.shard mesh must be array<i64: ...> or a dense<...> : tensor<AxBxi64> device layout, got {space.mesh}")
    shape = list(ir.RankedTensorType(layout.type).shape)
    if len(shape) < 2:
        fail(f"{what}: write a 1-D mesh as #hir.shard<array<i64: ...>, axis : i64>")
    raw = _cast(ir.DenseI64ArrayAttr, space.axis)
    if raw is None:
        fail(f"{what}: a {len(shape)}-D #hir.shard takes one split per mesh axis (array<i64: ...>), got {space.axis}")
    splits = list(raw)
    if len(splits) != len(shape):
        fail(f"{what}: the {'x'.join(map(str, shape))} mesh needs {len(shape)} splits (one per mesh axis), got {splits}")
    mesh = tuple(int(d) for d in layout)
    return Sharding(mesh, mesh_shape=shape, splits=[None if s == -1 else s for s in splits]), splits


def sharding_of(value_or_type: Any, what: str = "buffer") -> Optional[Sharding]:
    """The sharding of a memref (None when it carries no mesh). Validates the attribute."""
    t = memref_type(value_or_type, what)
    space = t.memory_space
    if space is None:
        return None
    if not isinstance(space, ShardAttr):
        fail(f"{what} has memory space {space}; hir buffers use #hir.shard<...> or none")
    sharding, raw = _parse(space, what)
    mesh = sharding.mesh
    if not mesh:
        fail(f"{what}: the device mesh is empty")
    if len(set(mesh)) != len(mesh) or min(mesh) < 0:
        fail(f"{what}: the device mesh {list(mesh)} must hold distinct non-negative device ids")
    for axis in raw:
        if axis < -1 or axis >= t.rank:
            fail(f"{what}: shard axis {axis} is out of range for rank {t.rank} (use -1 for replicated)")
    for axis in {s for s in sharding.splits if s is not None}:
        parts = sharding.parts(axis)
        if t.shape[axis] != DYNAMIC and t.shape[axis] % parts:
            fail(f"{what}: axis {axis} of extent {t.shape[axis]} does not split evenly over {parts} devices")
    return sharding


def local_shape(shape: Sequence[int], sharding: Optional[Sharding]) -> list[int]:
    """The shape one rank holds of a buffer with global ``shape``."""
    return list(shape) if sharding is None else sharding.local_shape(shape)


def check_placements(op: ir.Operation, source_name: Optional[str] = None, world_size: Optional[int] = None) -> list[str]:
    """Every ``#hir.shard`` placement in ``op`` (op results, block arguments such as a
    function's), checked where it is written: one ``file:line:col: error: ...`` line per
    invalid placement (a split that does not divide, a malformed mesh) and, given
    ``world_size``, per placement naming a device that has no rank in the run. Each distinct
    type is checked once; the first place it appears is reported."""
    from hir.dialect.context import format_location

    checked: dict = {}
    errors: list[str] = []

    def check(t: ir.Type, loc: ir.Location, what: str) -> None:
        if t in checked or not isinstance(t, ir.MemRefType) or t.memory_space is None:
            return
        checked[t] = True
        try:
            sharding = sharding_of(t, what)
        except VerifyError as err:
            errors.append(f"{format_location(loc, source_name)}: error: {err} (in {t})")
            return
        if sharding is not None and world_size is not None and max(sharding.mesh) >= world_size:
            errors.append(
                f"{format_location(loc, source_name)}: error: {what} is placed on devices {list(sharding.mesh)} but the run has "
                f"{world_size} rank(s): device {max(sharding.mesh)} has no rank to compute its part "
                f"(run with at least {max(sharding.mesh) + 1} ranks: hir-run --nproc N, torchrun --nproc_per_node N)"
            )

    def visit(inner: ir.Operation) -> ir.WalkResult:
        for i, result in enumerate(inner.results):
            check(result.type, inner.location, f"result #{i} of '{inner.name}'")
        for region in inner.regions:
            for block in region.blocks:
                for i, arg in enumerate(block.arguments):
                    check(arg.type, arg.location, f"argument #{i} of '{inner.name}'")
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return errors
