"""An imported module's weights: the safetensors file its IR names (``hir.weights`` on the
module, ``hir.weight = "key"`` on each state argument of the entry function), checked
against the argument types and read per rank.

The file holds GLOBAL tensors; each rank reads only its part of a sharded argument
(a safetensors slice, so a rank never loads the other ranks' parts). ``hir-run`` and
``hir.run`` fill the arguments that no explicit input gives from it; the frontend writes it
(:mod:`hir.frontend.saving`)."""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch_mlir import ir

from hir.dialect import WEIGHT_KEY_ATTR, WEIGHTS_FILE_ATTR
from hir.dialect.context import HirError
from hir.interpreter.buffers import buffer_spec, fmt_shape, is_memref
from hir.interpreter.inputs import InputError, gather_pieces

# safetensors' dtype names (its header) -> torch
_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


@dataclass(frozen=True)
class RecordedWeights:
    """What a module's IR says about its weights: the file (as written in the IR; relative
    to the .mlir file's folder) and the key each entry argument reads (argument index -> key)."""

    file: str | None
    keys: dict


def recorded_weights(module: ir.Module, fn: ir.Operation) -> RecordedWeights:
    """The weights file and keys recorded on ``module`` and its entry function ``fn``."""
    attrs = module.operation.attributes
    file = ir.StringAttr(attrs[WEIGHTS_FILE_ATTR]).value if WEIGHTS_FILE_ATTR in attrs else None
    keys = {}
    if "arg_attrs" in fn.attributes:
        for index, entry in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])):
            entry = ir.DictAttr(entry)
            if WEIGHT_KEY_ATTR in entry:
                keys[index] = ir.StringAttr(entry[WEIGHT_KEY_ATTR]).value
    return RecordedWeights(file, keys)


def weights_path(recorded: RecordedWeights, source_name: str | None, override: str | None = None) -> str | None:
    """Where the weights are: ``override``, else the recorded file resolved against the
    folder of the .mlir file the module was read from (``source_name``, when it names a
    file; else the current folder)."""
    if override is not None:
        return override
    if recorded.file is None:
        return None
    if os.path.isabs(recorded.file) or not source_name or not os.path.isfile(source_name):
        return recorded.file
    return os.path.join(os.path.dirname(source_name), recorded.file)


def read_weights(
    path: str, arg_types: Sequence[ir.Type], keys: dict, *, rank: int | None, device: torch.device, entry: str = "main"
) -> dict:
    """``{argument index: this rank's part}`` of every argument in ``keys``, read from the
    safetensors file ``path`` after checking that its names, shapes and dtypes are exactly
    what the arguments need (the first mismatch is the error). An argument whose mesh
    excludes ``rank`` gets None; ``rank=None`` reads the global tensors."""
    from safetensors import SafetensorError, safe_open  # safetensors loads only when weights are read or written

    if not os.path.isfile(path):
        raise HirError(
            f"{path}: error: cannot read the weights: no such file (write it "
            "with hir-import -o / TorchProgram.save, or give every argument)"
        )
    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            _check(path, f, arg_types, keys, entry)
            out = {}
            for index, key in keys.items():
                spec = buffer_spec(arg_types[index], rank or 0)
                if rank is not None and not spec.held:
                    out[index] = None
                    continue
                if rank is None or spec.sharding is None:
                    part = f.get_tensor(key)
                else:
                    part = gather_pieces(f.get_slice(key).__getitem__, spec.shape, spec.sharding, rank)
                out[index] = part.to(device)
            return out
    except (SafetensorError, OSError) as err:
        raise HirError(f"{path}: error: cannot read the weights as a safetensors file: {err}") from None
    except InputError as err:
        raise HirError(f"{path}: error: {err}") from None


def _check(path: str, f: Any, arg_types: Sequence[ir.Type], keys: dict, entry: str) -> None:
    """Names, shapes and dtypes of the file against the arguments: the first mismatch."""
    names = set(f.keys())
    for index, key in keys.items():
        type_ = arg_types[index]
        what = f"argument #{index} of @{entry} ({type_}) reads '{key}'"
        if key not in names:
            raise HirError(f"{path}: error: the file has no tensor '{key}': {what}")
        if not is_memref(type_):
            raise HirError(f"{path}: error: {what}, but it is not a buffer")
        spec = buffer_spec(type_, 0)
        sliced = f.get_slice(key)
        shape, dtype = list(sliced.get_shape()), _DTYPES.get(sliced.get_dtype())
        if not spec.fits(shape):
            raise HirError(
                f"{path}: error: tensor '{key}' has shape {fmt_shape(shape)}; {what}, of shape {fmt_shape(spec.shape)}"
            )
        if dtype != spec.dtype:
            raise HirError(
                f"{path}: error: tensor '{key}' has dtype {dtype or sliced.get_dtype()}; {what}, of dtype {spec.dtype}"
            )
    extra = sorted(names - set(keys.values()))
    if extra:
        raise HirError(
            f"{path}: error: the file holds tensor "
            f"'{extra[0]}'{f' (and {len(extra) - 1} more)' if len(extra) > 1 else ''}, which no "
            f"argument of @{entry} reads: it is not this module's weights file"
        )
