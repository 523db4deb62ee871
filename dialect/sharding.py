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
(device (i, j) of a 2x2 mesh holds part 2 * i + j). A split may be uneven (MLIR's
``sharded_dims_offsets``): the second parameter is then a dictionary giving the boundaries of
the parts of every split buffer axis, concatenated in axis order (parts + 1 each)::

    memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>

holds rows [0, 1) on device 0, [1, 4) on device 1, [4, 7) on 2 and [7, 8) on 3
(``{offsets = ..., splits = array<i64: ...>}`` on a multi-D mesh: attribute dictionaries sort their keys).
A split may be packed (DTensor's ``_StridedShard``: a fused ``[gate; up]`` weight split so
that each device holds its part of each half): ``packed`` gives, per split axis in order,
the number of equal pieces the axis is made of (1: an ordinary split), and each device
holds its part of every piece, in piece order::

    memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>

holds rows [0, 2) and [4, 6) on device 0, [2, 4) and [6, 8) on device 1. Types carry the global shape;
:meth:`Sharding.local_shape` derives a rank's shard. A collective on a multi-D mesh acts along
one mesh axis or several: its teams are the mesh's lines (planes) along them
(:meth:`Sharding.line`), and :meth:`Sharding.along` is the 1-D view of the placement one line
sees.

A pending sum (DTensor's ``Partial``) names the mesh axes it is pending on in ``partial``; its
buffer holds the summands on a leading device axis split by them (:meth:`Sharding.buffer_placement`).
Per mesh axis a placement is a split axis, ``None`` or :data:`PARTIAL` (:meth:`Sharding.on`).
"""

from collections.abc import Sequence
from typing import Any, TypeVar

from torch_mlir import ir

from hir.dialect.base import DYNAMIC, ShardAttr
from hir.dialect.checks import fail, memref_type
from hir.dialect.placement import PARTIAL, AxisPlacement, MeshAxes, MultiDimMeshError, Sharding, UnevenPlacementError

# The placement value lives in hir.dialect.placement; its users import it from here.
__all__ = [
    "PARTIAL",
    "AxisPlacement",
    "MeshAxes",
    "MultiDimMeshError",
    "Sharding",
    "UnevenPlacementError",
    "local_shape",
    "sharding_of",
]


_Attr = TypeVar("_Attr", bound=ir.Attribute)


def _cast(kind: type[_Attr], attr: ir.Attribute) -> _Attr | None:
    try:
        return kind(attr)
    except (ValueError, TypeError):
        return None


def _parse(
    space: ShardAttr, what: str
) -> tuple[tuple[int, ...], list[int], list[int], list[int] | None, list[int] | None]:
    """(devices, mesh shape, raw split entries with ``-1`` kept, raw offsets or None, raw
    packed pieces or None) of a ``#hir.shard``."""
    splits_attr = space.axis
    found: dict[str, list[int] | None] = {"offsets": None, "packed": None}
    entries = _cast(ir.DictAttr, splits_attr)
    if entries is not None:  # {axis | splits = ..., offsets = array<i64: ...>, packed = array<i64: ...>}
        names = [entries[i].name for i in range(len(entries))]
        split_keys = [n for n in names if n in ("axis", "splits")]
        if len(split_keys) != 1 or not set(names) - {"axis", "splits"} or not set(names) <= {"axis", "splits", *found}:
            fail(
                f"{what}: an uneven or packed #hir.shard takes {{axis = N : i64, offsets = "
                "array<i64: ...>, packed = array<i64: ...>} (1-D mesh; splits = "
                f"array<i64: ...> on a multi-D one; offsets or packed or both), got {splits_attr}"
            )
        for key in found:
            if key in names:
                raw = _cast(ir.DenseI64ArrayAttr, entries[key])
                if raw is None:
                    fail(f"{what}: #hir.shard {key} must be array<i64: ...>, got {entries[key]}")
                found[key] = list(raw)
        splits_attr = entries[split_keys[0]]
    offsets, packed = found["offsets"], found["packed"]
    devices = _cast(ir.DenseI64ArrayAttr, space.mesh)
    if devices is not None:
        axis = _cast(ir.IntegerAttr, splits_attr)
        if axis is None:
            fail(f"{what}: a 1-D #hir.shard takes one split axis (`0 : i64`), got {splits_attr}")
        return tuple(devices), [len(devices)], [axis.value], offsets, packed
    layout = _cast(ir.DenseIntElementsAttr, space.mesh)
    if layout is None:
        fail(
            f"{what}: #hir.shard mesh must be array<i64: ...> or a "
            f"dense<...> : tensor<AxBxi64> device layout, got {space.mesh}"
        )
    shape = list(ir.RankedTensorType(layout.type).shape)
    if len(shape) < 2:
        fail(f"{what}: write a 1-D mesh as #hir.shard<array<i64: ...>, axis : i64>")
    raw = _cast(ir.DenseI64ArrayAttr, splits_attr)
    if raw is None:
        fail(f"{what}: a {len(shape)}-D #hir.shard takes one split per mesh axis (array<i64: ...>), got {splits_attr}")
    splits = list(raw)
    if len(splits) != len(shape):
        fail(
            f"{what}: the {'x'.join(map(str, shape))} mesh needs {len(shape)} splits (one per mesh axis), got {splits}"
        )
    return tuple(int(d) for d in layout), shape, splits, offsets, packed


def _boundaries(t: ir.MemRefType, sharding: Sharding, offsets: list[int], what: str) -> dict[int, list[int]]:
    """The part boundaries of every split axis, from the concatenated ``offsets`` (checked:
    parts + 1 per axis, from 0, non-decreasing, to the axis's static extent)."""
    if not sharding.is_split:
        fail(f"{what}: offsets {offsets} on a replicated buffer")
    out, rest = {}, list(offsets)
    for axis in sorted({a for a in sharding.splits if a is not None}):
        parts = sharding.parts(axis)
        bounds, rest = rest[: parts + 1], rest[parts + 1 :]
        if len(bounds) != parts + 1:
            fail(
                f"{what}: offsets {offsets} give too few boundaries: axis {axis} is cut "
                f"into {parts} parts (needs {parts + 1}, for every split axis in order)"
            )
        if t.shape[axis] == DYNAMIC:
            fail(f"{what}: axis {axis} is dynamic; an uneven split needs a static extent")
        if bounds[0] != 0 or bounds[-1] != t.shape[axis] or any(a > b for a, b in zip(bounds, bounds[1:])):
            fail(f"{what}: offsets {bounds} of axis {axis} must rise from 0 to its extent {t.shape[axis]}")
        out[axis] = bounds
    if rest:
        fail(f"{what}: offsets {offsets} give {len(rest)} boundaries more than the split axes need")
    return out


def sharding_of(value_or_type: Any, what: str = "buffer") -> Sharding | None:
    """The sharding of a memref (None when it carries no mesh). Validates the attribute."""
    t = memref_type(value_or_type, what)
    space = t.memory_space
    if space is None:
        return None
    if not isinstance(space, ShardAttr):
        fail(f"{what} has memory space {space}; hir buffers use #hir.shard<...> or none")
    mesh, mesh_shape, raw, offsets, packed = _parse(space, what)
    if not mesh:
        fail(f"{what}: the device mesh is empty")
    if len(set(mesh)) != len(mesh) or min(mesh) < 0:
        fail(f"{what}: the device mesh {list(mesh)} must hold distinct non-negative device ids")
    for axis in raw:
        if axis < -1 or axis >= t.rank:
            fail(f"{what}: shard axis {axis} is out of range for rank {t.rank} (use -1 for replicated)")
    sharding = Sharding.of(mesh, mesh_shape, [None if a == -1 else a for a in raw])
    pieces = _pieces(t, sharding, packed, offsets, what) if packed is not None else None
    if offsets is not None:
        return Sharding.of(mesh, mesh_shape, sharding.splits, _boundaries(t, sharding, offsets, what))
    for axis in {s for s in sharding.splits if s is not None}:
        parts = sharding.parts(axis) * (pieces or {}).get(axis, 1)
        if t.shape[axis] != DYNAMIC and t.shape[axis] % parts:
            fail(
                f"{what}: axis {axis} of extent {t.shape[axis]} does not split evenly over "
                f"{parts} {'parts' if pieces else 'devices'} (an uneven split gives its offsets)"
            )
    return Sharding.of(mesh, mesh_shape, sharding.splits, packed=pieces)


def _pieces(
    t: ir.MemRefType, sharding: Sharding, packed: list[int], offsets: list[int] | None, what: str
) -> dict[int, int]:
    """The pieces of every split axis, from ``packed`` (one count per split axis, in order)."""
    axes = sorted({a for a in sharding.splits if a is not None})
    if len(packed) != len(axes) or min(packed, default=1) < 1:
        fail(f"{what}: packed {packed} must give one piece count (>= 1) per split axis {axes}")
    if offsets is not None and max(packed, default=1) > 1:
        fail(f"{what}: a split is packed or uneven, not both")
    return dict(zip(axes, packed))


def local_shape(shape: Sequence[int], sharding: Sharding | None, device: int | None = None) -> list[int]:
    """The shape ``device`` holds of a buffer with global ``shape`` (see Sharding.local_shape)."""
    return list(shape) if sharding is None else sharding.local_shape(shape, device)
