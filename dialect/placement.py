"""The value of a buffer placement: :class:`Sharding` (devices on a mesh, a split per mesh
axis, uneven boundaries, pending sums, packed pieces), its mesh geometry (the lines a team
along some mesh axes forms) and its ``#hir.shard`` attribute. :mod:`hir.dialect.sharding`
documents the attribute and reads it back from a type."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import prod

from torch_mlir import ir

from hir.dialect.base import DYNAMIC, ShardAttr, i64_elements


class MultiDimMeshError(ValueError):
    """A 1-D-only consumer met a placement on a multi-dimensional mesh."""


class UnevenPlacementError(ValueError):
    """A consumer of even splits met an uneven placement (``sharded_dims_offsets``)."""


MeshAxes = int | Sequence[int]  # one mesh axis, or several (a team along all of them)
PARTIAL = "partial"  # per mesh axis: the value is a sum pending over that mesh axis
AxisPlacement = int | None | str  # per mesh axis: the split buffer axis, None (replicated) or PARTIAL


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
    splits: tuple[int | None, ...]
    offsets: tuple[tuple[int, tuple[int, ...]], ...]  # (buffer axis, part boundaries) of uneven splits
    partial: tuple[int, ...]  # mesh axes on which the value is a pending sum (sorted; () for data)
    packed: tuple[tuple[int, int], ...]  # (buffer axis, pieces) of packed splits

    def __init__(
        self,
        mesh: Sequence[int],
        axis: int | None = None,
        *,
        mesh_shape: Sequence[int] | None = None,
        splits: Sequence[int | None] | None = None,
        offsets: Mapping[int, Sequence[int]] | None = None,
        partial: Sequence[int] | None = None,
        packed: Mapping[int, int] | None = None,
    ) -> None:
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
        object.__setattr__(
            self, "offsets", tuple(sorted((a, tuple(int(b) for b in bounds)) for a, bounds in (offsets or {}).items()))
        )
        object.__setattr__(self, "partial", tuple(sorted({int(k) for k in partial or ()})))
        if any(not 0 <= k < len(shape) or per_axis[k] is not None for k in self.partial):
            raise ValueError(
                "a sum is pending on mesh axes of the mesh that split nothing: "
                f"partial {list(self.partial)}, splits {list(per_axis)}"
            )
        if offsets and {a for a, _ in self.offsets} != {
            s for s in per_axis if s is not None
        }:  # as MLIR's sharded_dims_offsets
            raise ValueError(
                "an uneven Sharding gives the boundaries of every split axis: "
                f"splits {list(per_axis)}, boundaries for axes {sorted(offsets)}"
            )
        object.__setattr__(self, "packed", tuple(sorted((int(a), int(n)) for a, n in (packed or {}).items() if n != 1)))
        for axis, pieces in self.packed:
            if axis not in per_axis or pieces < 1 or self.bounds(axis) is not None:
                raise ValueError(
                    "a packed split needs an even split axis and at least one "
                    f"piece: axis {axis} in {pieces} pieces, splits {list(per_axis)}"
                )

    @staticmethod
    def of(
        devices: Sequence[int],
        mesh_shape: Sequence[int],
        splits: Sequence[int | None],
        offsets: Mapping[int, Sequence[int]] | None = None,
        partial: Sequence[int] | None = None,
        packed: Mapping[int, int] | None = None,
    ) -> "Sharding":
        """The placement on the mesh of ``devices`` laid out as ``mesh_shape`` (1-D when it
        has one axis) with ``splits`` per mesh axis (and the part boundaries of uneven ones;
        the mesh axes a sum is pending on; the pieces of packed ones)."""
        if len(mesh_shape) == 1:
            return Sharding(devices, splits[0], offsets=offsets, partial=partial, packed=packed)
        return Sharding(devices, mesh_shape=mesh_shape, splits=splits, offsets=offsets, partial=partial, packed=packed)

    def pieces(self, axis: int) -> int:
        """How many pieces buffer axis ``axis`` is packed of (1: not packed)."""
        return next((n for a, n in self.packed if a == axis), 1)

    def on(self, mesh_axis: int) -> AxisPlacement:
        """The placement along one mesh axis: the buffer axis it splits, None or :data:`PARTIAL`."""
        return PARTIAL if mesh_axis in self.partial else self.splits[mesh_axis]

    def with_placement(self, mesh_axes: Sequence[int], placement: AxisPlacement) -> "Sharding":
        """This placement with ``mesh_axes`` set to ``placement`` (a split buffer axis, None
        or :data:`PARTIAL`); the boundaries of buffer axes left split unevenly are kept."""
        per_axis = [placement if k in mesh_axes else self.on(k) for k in range(len(self.mesh_shape))]
        splits = [p if isinstance(p, int) else None for p in per_axis]  # PARTIAL splits nothing
        kept = {a: b for a, b in self.offsets if a in splits}
        return Sharding.of(
            self.mesh,
            self.mesh_shape,
            splits,
            kept,
            [k for k, p in enumerate(per_axis) if p == PARTIAL],
            {a: n for a, n in self.packed if a in splits},
        )

    def buffer_placement(self) -> "Sharding":
        """The placement of the buffer holding a value placed so: a pending sum's summands on a
        leading device axis split by the mesh axes it is pending on, its own axes one further on."""
        if not self.partial:
            return self
        splits = [0 if k in self.partial else None if s is None else s + 1 for k, s in enumerate(self.splits)]
        return Sharding.of(
            self.mesh,
            self.mesh_shape,
            splits,
            {a + 1: b for a, b in self.offsets},
            packed={a + 1: n for a, n in self.packed},
        )

    @property
    def uneven(self) -> bool:
        """Whether some split gives the devices parts of different extents."""
        return bool(self.offsets)

    def bounds(self, axis: int) -> tuple[int, ...] | None:
        """The boundaries of buffer axis ``axis``'s parts when it is split unevenly, else None."""
        return next((b for a, b in self.offsets if a == axis), None)

    @property
    def multi_dim(self) -> bool:
        return len(self.mesh_shape) > 1

    @property
    def is_split(self) -> bool:
        """Whether some mesh axis splits the buffer (each device holds a part)."""
        return any(s is not None for s in self.splits)

    @property
    def axis(self) -> int | None:
        """The split axis on a 1-D mesh (None: replicated). On a multi-D mesh: None when
        replicated everywhere, else an error (the caller handles only 1-D meshes)."""
        if not self.multi_dim:
            return self.splits[0]
        if not self.is_split:
            return None
        raise MultiDimMeshError(
            "this needs a 1-D device mesh; the buffer is placed on the "
            f"{'x'.join(map(str, self.mesh_shape))} mesh {self.describe()}"
        )

    def describe(self) -> str:
        uneven = "".join(f", axis {a} cut at {list(b)}" for a, b in self.offsets) + "".join(
            f", axis {a} packed of {n} pieces" for a, n in self.packed
        )
        pending = f", a sum pending on mesh axes {list(self.partial)}" if self.partial else ""
        return f"{list(self.mesh)} with splits {[-1 if s is None else s for s in self.splits]}{uneven}{pending}"

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

    def local_shape(self, shape: Sequence[int], device: int | None = None) -> list[int]:
        """The shape ``device`` holds of a buffer with global ``shape`` (``device`` may be
        left out when the placement is even: every device holds the same shape)."""
        out = [d if d == DYNAMIC else d // self.parts(i) for i, d in enumerate(shape)]
        for axis, bounds in self.offsets:
            if device is None:
                raise UnevenPlacementError(
                    f"the parts of axis {axis} differ per device (cut at "
                    f"{list(bounds)}); this needs the device's own extent"
                )
            part = self.shard_index(device, axis)
            out[axis] = bounds[part + 1] - bounds[part]
        return out

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

    def line_split(self, mesh_axes: MeshAxes) -> int | None:
        """The buffer axis that the lines along ``mesh_axes`` split (None: replicated along
        them), when they see a 1-D placement: every one of the axes splits that buffer axis
        or none does, and no mesh axis outside them splits it more finely (the block a line
        holds together is then contiguous). Else a MultiDimMeshError saying why."""
        axes = _axes(mesh_axes)
        split = {self.splits[k] for k in axes}
        if len(split) != 1:
            raise MultiDimMeshError(
                f"mesh axes {list(axes)} split buffer axes "
                f"{[-1 if self.splits[k] is None else self.splits[k] for k in axes]}; a team "
                "along several mesh axes needs them all to split one buffer axis or none"
            )
        (axis,) = split
        minor = [
            j for j, s in enumerate(self.splits) if axis is not None and s == axis and j not in axes and j > min(axes)
        ]
        if minor:
            raise MultiDimMeshError(
                f"buffer axis {axis} is also split by mesh axis {minor[0]}, minor to "
                f"mesh axes {list(axes)}: a line along them holds no contiguous block"
            )
        return axis

    def along(self, device: int, mesh_axes: MeshAxes) -> "Sharding":
        """The 1-D placement that the line through ``device`` along ``mesh_axes`` sees."""
        axis = self.line_split(mesh_axes)
        bounds = self.bounds(axis) if axis is not None else None
        if bounds is not None and any(s == axis for j, s in enumerate(self.splits) if j not in _axes(mesh_axes)):
            raise UnevenPlacementError(
                f"buffer axis {axis} is split unevenly over mesh axes "
                f"{[j for j, s in enumerate(self.splits) if s == axis]}; "
                "a team along only some of them sees no 1-D placement"
            )
        offsets = None if axis is None or bounds is None else {axis: bounds}
        return Sharding(
            self.line(device, mesh_axes), axis, offsets=offsets, packed={a: n for a, n in self.packed if a == axis}
        )

    def others_local(self, shape: Sequence[int], mesh_axes: MeshAxes) -> list[int]:
        """``shape`` divided by the splits of every mesh axis but ``mesh_axes``: the global
        shape of the block that one line along ``mesh_axes`` holds together."""
        axes = _axes(mesh_axes)
        kept = [None if j in axes else s for j, s in enumerate(self.splits)]
        return Sharding.of(self.mesh, self.mesh_shape, kept, {a: b for a, b in self.offsets if a in kept}).local_shape(
            shape
        )

    def renumbered(self, fn: Callable[[int], int | None]) -> "Sharding":
        """The same mesh with each split buffer axis ``a`` moved to ``fn(a)``."""
        splits = [None if s is None else fn(s) for s in self.splits]
        offsets = {moved: b for a, b in self.offsets if (moved := fn(a)) is not None}
        return Sharding.of(
            self.mesh,
            self.mesh_shape,
            splits,
            offsets,
            packed={moved: n for a, n in self.packed if (moved := fn(a)) is not None},
        )

    def attr(self) -> ir.Attribute:
        if self.partial:
            raise ValueError(
                f"a pending sum ({self.describe()}) has no #hir.shard form; its buffer's is buffer_placement()"
            )
        i64 = ir.IntegerType.get_signless(64)
        if not self.multi_dim:
            mesh, splits = (
                ir.DenseI64ArrayAttr.get(list(self.mesh)),
                ir.IntegerAttr.get(i64, -1 if self.splits[0] is None else self.splits[0]),
            )
        else:
            mesh, splits = (
                i64_elements(self.mesh, self.mesh_shape),
                ir.DenseI64ArrayAttr.get([-1 if s is None else s for s in self.splits]),
            )
        if not self.offsets and not self.packed:
            return ShardAttr.get(mesh, splits)
        entries: dict[str, ir.Attribute] = {"splits" if self.multi_dim else "axis": splits}
        if self.offsets:
            entries["offsets"] = ir.DenseI64ArrayAttr.get([b for _, bounds in self.offsets for b in bounds])
        if self.packed:
            entries["packed"] = ir.DenseI64ArrayAttr.get(
                [self.pieces(a) for a in sorted({s for s in self.splits if s is not None})]
            )
        return ShardAttr.get(mesh, ir.DictAttr.get(entries))
