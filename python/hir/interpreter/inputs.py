"""Command-line inputs: turn input specs into tensors for the entry function's arguments.

A spec is one of ``random`` (default), ``zeros``, ``ones``, ``arange`` (0, 1, 2, ... in
row-major order), each optionally ``:SHAPE`` (``8x4``; required when the type has dynamic
dims), a ``.pt`` / ``.npy`` file, or a number for a scalar (index / integer / float)
argument. Tensors are GLOBAL: every rank builds the same global tensor (random ones from the
same seed) and keeps its own shard, so a multi-rank run sees one consistent global input."""

import os
from collections.abc import Callable, Sequence

import torch
from torch_mlir import ir

from hir.dialect.base import DYNAMIC
from hir.dialect.sharding import Sharding
from hir.interpreter.buffers import BufferSpec, buffer_spec, fmt_shape, is_memref

GENERATORS = ("random", "zeros", "ones", "arange")


class InputError(ValueError):
    """A bad input spec; the message names the argument."""


def parse_assignments(specs: Sequence[str], count: int, weights: frozenset = frozenset()) -> list[str | None]:
    """Specs in argument order: ``SPEC`` fills the next argument that reads no weight (an
    index in ``weights``), ``N=SPEC`` argument N (a weight too). A weight argument no spec
    names is None (read from the weights file); others default to ``random``."""
    out: list[str | None] = [None if i in weights else "random" for i in range(count)]
    position = 0
    for spec in specs:
        head, sep, rest = spec.partition("=")
        if sep and head.isdigit():
            index, spec = int(head), rest
        else:
            index = position
            while index in weights:
                index += 1
        if not 0 <= index < count:
            free = count - len(weights)
            takes = f"the entry function takes {count}" + (
                f" ({free} besides the {len(weights)} its weights file gives)" if weights else ""
            )
            raise InputError(f"input '{spec}' is for argument #{index}, but {takes}")
        out[index] = spec
        position = index + 1
    return out


def build_inputs(
    arg_types: Sequence[ir.Type], specs: Sequence[str], *, rank: int, seed: int, device: torch.device
) -> list:
    """One value per argument (None for buffers this rank does not hold)."""
    return [
        make_input(i, t, spec, rank=rank, seed=seed, device=device) for i, (t, spec) in enumerate(zip(arg_types, specs))
    ]


def make_input(index: int, type_: ir.Type, spec: str, *, rank: int, seed: int, device: torch.device):
    what = f"argument #{index} ({type_})"
    if not is_memref(type_):
        if spec in GENERATORS:
            raise InputError(f"{what} is a scalar: give its value (e.g. --input {index}=4)")
        if str(type_) == "i1":  # a flag
            flag = {"true": True, "false": False, "1": True, "0": False}.get(spec.lower())
            if flag is None:
                raise InputError(f"{what}: '{spec}' is not a flag (true, false, 1 or 0)")
            return flag
        is_float = str(type_).startswith(("f", "bf"))
        try:
            return float(spec) if is_float else int(spec)
        except ValueError:
            raise InputError(f"{what}: '{spec}' is not {'a number' if is_float else 'an integer'}") from None
    bspec = buffer_spec(type_, rank)
    if not bspec.held:
        return None
    try:
        full = _global_tensor(what, bspec, spec, seed + index)
        return shard(full, bspec.sharding, rank).to(device)
    except (RuntimeError, MemoryError) as err:  # torch's allocation failures
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise InputError(f"{what}: cannot create '{spec}': {first}") from None


def _global_tensor(what: str, spec: BufferSpec, text: str, seed: int) -> torch.Tensor:
    kind, _, shape_text = text.partition(":")
    if kind in GENERATORS:
        shape = _shape(what, spec, shape_text)
        if kind == "zeros":
            return torch.zeros(shape, dtype=spec.dtype)
        if kind == "ones":
            return torch.ones(shape, dtype=spec.dtype)
        if kind == "arange":
            n = 1
            for d in shape:
                n *= d
            return torch.arange(n).reshape(shape).to(spec.dtype)
        gen = torch.Generator().manual_seed(seed)
        if spec.dtype.is_floating_point:
            return torch.randn(shape, generator=gen).to(spec.dtype)
        if spec.dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=gen).bool()
        return torch.randint(-8, 9, shape, generator=gen).to(spec.dtype)
    tensor = _load(what, text)
    if not spec.fits(tensor.shape):
        raise InputError(
            f"{what}: {text} holds shape {fmt_shape(tensor.shape)}, expected the global shape {fmt_shape(spec.shape)}"
        )
    if tensor.dtype != spec.dtype:
        raise InputError(f"{what}: {text} holds dtype {tensor.dtype}, expected {spec.dtype}")
    return tensor


def _shape(what: str, spec: BufferSpec, text: str) -> list[int]:
    if not text:
        if DYNAMIC in spec.shape:
            raise InputError(f"{what} has dynamic dims: give the global shape, e.g. --input random:{_example(spec)}")
        return list(spec.shape)
    try:
        shape = [int(d) for d in text.split("x")]
    except ValueError:
        raise InputError(f"{what}: bad shape '{text}' (write it like 8x4)") from None
    if min(shape, default=0) < 0:
        raise InputError(f"{what}: bad shape '{text}': extents must be >= 0")
    if not spec.fits(shape):
        raise InputError(f"{what}: shape {fmt_shape(shape)} does not fit the type's {fmt_shape(spec.shape)}")
    return shape


def _example(spec: BufferSpec) -> str:
    return "x".join("8" if d == DYNAMIC else str(d) for d in spec.shape)


def _load(what: str, path: str) -> torch.Tensor:
    if not os.path.exists(path):
        raise InputError(f"{what}: '{path}' is neither an input kind ({', '.join(GENERATORS)}) nor an existing file")
    if path.endswith(".npy"):
        return _load_npy(what, path)
    if path.endswith(".pt"):
        with open(path, "rb") as f:
            head = f.read(len(TORCH_ZIP_MAGIC))
        if head != TORCH_ZIP_MAGIC and not head.startswith(PICKLE_PROTOCOL):
            raise InputError(
                f"{what}: '{path}' is not a tensor file (neither a torch.save archive nor a legacy torch.save pickle); "
                f"hir-run reads tensors saved with torch.save (FILE.pt) or numpy.save (FILE.npy)"
            )
        try:
            value = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - torch.load fails in many ways on foreign bytes
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            if "weights_only" in str(err):  # torch's advice to unpickle anything: never taken here
                reason = "it holds Python objects other than tensors, which hir-run does not unpickle"
            raise InputError(
                f"{what}: cannot load '{path}' as a torch.save file ({type(err).__name__}: {reason})"
            ) from None
        if not isinstance(value, torch.Tensor):
            raise InputError(f"{what}: {path} does not hold a single tensor")
        return value
    raise InputError(f"{what}: '{path}' must be a .pt or .npy file")


NPY_MAGIC = b"\x93NUMPY"
TORCH_ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive
PICKLE_PROTOCOL = b"\x80"  # ... or, with _use_new_zipfile_serialization=False, a pickle stream


def _load_npy(what: str, path: str) -> torch.Tensor:
    import numpy  # numpy stays off hir's import path (dialect/_lazy_numpy.py)

    with open(path, "rb") as f:
        if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
            raise InputError(f"{what}: '{path}' is not a .npy file (no NumPy header; write it with numpy.save)")
    try:
        array = numpy.load(path, allow_pickle=False)
    except ValueError as err:
        if "pickle" in str(err):
            raise InputError(f"{what}: '{path}' holds Python objects, not a numeric array") from None
        raise InputError(f"{what}: cannot read '{path}' as a .npy file ({err})") from None
    except (OSError, EOFError) as err:
        raise InputError(f"{what}: cannot read '{path}' as a .npy file ({err})") from None
    try:
        return torch.from_numpy(array)
    except TypeError:
        raise InputError(f"{what}: '{path}' holds dtype {array.dtype}, which torch does not support") from None


def shard(full: torch.Tensor, sharding: Sharding | None, rank: int) -> torch.Tensor:
    """This rank's shard of a global tensor placed as ``sharding`` (a contiguous copy)."""
    return gather_pieces(lambda index: full[index], full.shape, sharding, rank)


def gather_pieces(
    read: Callable[[tuple], torch.Tensor], shape: Sequence[int], sharding: Sharding | None, rank: int
) -> torch.Tensor:
    """Rank ``rank``'s part of a global tensor of ``shape`` placed as ``sharding``, from
    ``read(index)`` of each of its blocks (one; of a packed split one per piece, joined
    along the packed axis): what a safetensors slice reads without loading the rest."""
    indices, axis = shard_slices(shape, sharding, rank)
    blocks = [read(index) for index in indices]
    if len(blocks) == 1:
        return blocks[0].contiguous()
    return torch.cat(blocks, axis).contiguous()  # pyright: ignore[reportArgumentType]  # several blocks: a packed axis


def shard_slices(shape: Sequence[int], sharding: Sharding | None, rank: int) -> tuple[list[tuple], int | None]:
    """The indices (one slice per axis) of rank ``rank``'s blocks of a global tensor of
    ``shape`` placed as ``sharding`` (one; for a packed split one per piece) and the axis
    they join along (None: one block)."""
    index = [slice(0, extent) for extent in shape]
    if sharding is None:
        return [tuple(index)], None
    packed = None
    for axis in sorted({a for a in sharding.splits if a is not None}):
        part = sharding.shard_index(rank, axis)
        bounds = sharding.bounds(axis)
        if bounds is not None:  # uneven: the rank's part lies between its boundaries
            index[axis] = slice(bounds[part], bounds[part + 1])
            continue
        parts, pieces = sharding.parts(axis), sharding.pieces(axis)
        if shape[axis] % (parts * pieces):
            raise InputError(
                f"axis {axis} of extent {shape[axis]} does not split evenly over "
                f"{parts} devices{f' in each of {pieces} pieces' if pieces > 1 else ''}"
            )
        size = shape[axis] // (parts * pieces)
        index[axis] = slice(part * size, (part + 1) * size)
        if pieces > 1:
            packed = (axis, pieces, shape[axis] // pieces)
    if packed is None:
        return [tuple(index)], None
    axis, pieces, stride = packed
    first = index[axis]
    blocks = []
    for i in range(pieces):
        index[axis] = slice(first.start + i * stride, first.stop + i * stride)
        blocks.append(tuple(index))
    return blocks, axis
