"""Static facts about buffers, computed once at compile time: the torch dtype of an element
type, a buffer's sharding, whether this rank holds it, and its local (per-rank) shape."""

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch_mlir import ir

from hir.dialect.base import DYNAMIC
from hir.dialect.sharding import Sharding, local_shape, sharding_of
from hir.dialect.views import is_identity_layout

_DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i1": torch.bool,
    "i8": torch.int8,
    "ui8": torch.uint8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "index": torch.int64,
}

DTYPE_NAMES = {dtype: name for name, dtype in _DTYPES.items() if name != "index"}


def torch_dtype(element_type: ir.Type) -> torch.dtype:
    """The torch dtype of an MLIR element type; ``ValueError`` names unsupported ones."""
    try:
        return _DTYPES[str(element_type)]
    except KeyError:
        raise ValueError(f"element type {element_type} has no torch dtype (supported: {', '.join(_DTYPES)})") from None


@dataclass(frozen=True)
class BufferSpec:
    """A memref type as the interpreter sees it on one rank."""

    shape: tuple[int, ...]  # global logical shape; DYNAMIC for '?'
    dtype: torch.dtype
    sharding: Sharding | None
    held: bool  # False when the buffer's mesh excludes this rank (ops on it are skipped)
    contiguous: bool  # identity layout: a dense row-major buffer
    device: int  # the rank it is described for (its part of an uneven split)

    def fits(self, shape: Sequence[int]) -> bool:
        """Whether ``shape`` is this buffer's global shape (any extent where it is dynamic)."""
        return len(shape) == len(self.shape) and all(e == DYNAMIC or e == a for e, a in zip(self.shape, shape))

    def parts(self, axis: int) -> int:
        """How many shards buffer axis ``axis`` is cut into (1 when not split)."""
        return 1 if self.sharding is None else self.sharding.parts(axis)

    @property
    def uneven(self) -> bool:
        """Whether its parts differ in extent per device (``sharded_dims_offsets``)."""
        return self.sharding is not None and self.sharding.uneven

    @property
    def split_axis(self) -> int | None:
        """The split axis on a 1-D mesh (raises on a multi-D one: 1-D-only callers)."""
        return None if self.sharding is None else self.sharding.axis

    @property
    def placed(self) -> Sharding:
        """The sharding of a buffer that its op's verifier requires to be placed (e.g. the
        split side of a collective)."""
        assert self.sharding is not None, "the op's verifier requires this buffer to be placed"
        return self.sharding

    def project(self, rank: int, mesh_axes: tuple[int, ...]) -> "BufferSpec":
        """What the line of a multi-D mesh through ``rank`` along ``mesh_axes`` sees: the
        block of the buffer it holds together, placed 1-D on that line."""
        s = self.sharding
        assert s is not None, "only a placed buffer has mesh lines"
        return BufferSpec(
            tuple(s.others_local(self.shape, mesh_axes)),
            self.dtype,
            s.along(rank, mesh_axes),
            self.held,
            self.contiguous,
            self.device,
        )

    def local(self, shape: Sequence[int]) -> list[int]:
        """The local shape of a buffer whose global shape is ``shape`` (dynamic dims filled)."""
        return local_shape(shape, self.sharding, self.device)

    def local_static(self) -> list[int]:
        """The local shape with DYNAMIC kept where the global extent is dynamic."""
        return local_shape(self.shape, self.sharding, self.device)


def buffer_spec(t: ir.Type, rank: int) -> BufferSpec:
    """Describe memref type ``t`` for ``rank``."""
    mt = ir.MemRefType(t)
    sharding = sharding_of(mt)
    held = sharding is None or rank in sharding.mesh
    contiguous = is_identity_layout(mt)
    return BufferSpec(tuple(mt.shape), torch_dtype(mt.element_type), sharding, held, contiguous, rank)


_MEMREF_TYPEIDS = (ir.MemRefType.static_typeid, ir.UnrankedMemRefType.static_typeid)


def is_memref(t: ir.Type) -> bool:
    """Whether ``t`` is a memref type, ranked or not (by its type id: a type that was not
    downcast, e.g. a torch dialect one, is never printed for it)."""
    return isinstance(t, (ir.MemRefType, ir.UnrankedMemRefType)) or t.typeid in _MEMREF_TYPEIDS


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in shape) + "]"
