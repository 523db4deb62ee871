"""An imported program on disk: its IR (``.mlir``) and its weights beside it (safetensors),
so that the program runs on the module's own numbers, not random ones.

``save`` (``TorchProgram.save``, ``hir-import -o``) writes the state entries (parameters and
buffers: global tensors, a DTensor gathered) to ``<output>.safetensors`` (or another file),
and records the file in the module (``hir.weights``, relative to the .mlir file's folder)
and on each state argument of ``@main`` the key it reads (``hir.weight``). ``load``
(``hir.load``) reads both back as a :class:`TorchProgram`. hir-run and ``hir.run`` read the
recorded weights themselves (:mod:`hir.interpreter.weights`, per rank)."""

import json
import os
import re
import struct
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch_mlir import ir
from torch_mlir.dialects import func

from hir import progress
from hir.core import HirError, parse, read_source
from hir.dialect import WEIGHT_KEY_ATTR, WEIGHTS_FILE_ATTR
from hir.dialect.compute import default_weights_path
from hir.dialect.sharding import sharding_of
from hir.interpreter.weights import read_weights, recorded_weights, weights_path
from hir.outputs import CliError, check_writable, write_atomically, write_text


def _main(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if (
            op.operation.name == func.FuncOp.OPERATION_NAME
            and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
        ):
            return op.operation
    raise HirError("error: the module has no @main: not an imported program")


def record(module: ir.Module, weights_file: str, state_names: list) -> None:
    """Mark ``module``: its weights are in ``weights_file`` (as written: relative to the .mlir
    file's folder), and ``@main``'s first arguments read ``state_names`` from it."""
    main = _main(module)
    with module.context:
        module.operation.attributes[WEIGHTS_FILE_ATTR] = ir.StringAttr.get(weights_file)
        count = len(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs)
        old = (
            [ir.DictAttr(a) for a in ir.ArrayAttr(main.attributes["arg_attrs"])]
            if "arg_attrs" in main.attributes
            else [ir.DictAttr.get({})] * count
        )
        new = []
        for index, entries in enumerate(old):
            values = {entries[i].name: entries[i].attr for i in range(len(entries))}
            if index < len(state_names):
                values[WEIGHT_KEY_ATTR] = ir.StringAttr.get(state_names[index])
            new.append(ir.DictAttr.get(values))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def write_weights(module: ir.Module, tensors: dict, weights: str, folder: str) -> None:
    """Write ``tensors`` (``{state name: CPU tensor}`` in ``@main``'s order:
    ``TorchProgram.state_tensors``) to ``weights`` (replaced once complete) and record it
    in ``module``, its name relative to ``folder`` (where the .mlir file goes)."""
    from safetensors.torch import save_file  # safetensors loads only when weights are read or written

    record(module, os.path.relpath(os.path.abspath(weights), os.path.abspath(folder)), list(tensors))
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    with progress.task(f"writing {len(tensors)} weights ({size / 2**20:.1f} MiB) to {weights}"):
        write_atomically(weights, lambda tmp: _save_file(save_file, tensors, tmp))


WRITER_METADATA = {"format": "pt", "writer": "hir"}  # in the header of every weights file hir writes


def _save_file(save_file, tensors: dict, tmp: str) -> None:
    """safetensors' ``save_file``, its I/O failures (a full disk) as OSError: it raises its
    own SafetensorError, whose text is the Rust error (``... File too large (os error 27)``)."""
    from safetensors import SafetensorError  # safetensors loads only when weights are read or written

    try:
        save_file(tensors, tmp, metadata=WRITER_METADATA)
    except SafetensorError as err:
        found = re.search(r"os error (\d+)|code: (\d+)", str(err))
        code = int(found.group(1) or found.group(2)) if found else 0
        raise OSError(code, os.strerror(code) if code else str(err)) from None


def written_by_hir(path: str) -> bool:
    """Whether ``path`` is a safetensors file that hir wrote (its header's metadata says so;
    only the JSON header is read, nothing in the file runs)."""
    try:
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            if size > 100 * 2**20:
                return False
            header = json.loads(f.read(size))
    except (OSError, ValueError, struct.error):
        return False
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(metadata, dict) and metadata.get("writer") == WRITER_METADATA["writer"]


def save(module: ir.Module, state_tensors: Callable[[], dict], path: str, weights: str | None = None) -> str:
    """Write ``module`` to ``path`` and the state ``state_tensors()`` returns (see
    :func:`write_weights`; called once both paths are known to be writable) to ``weights``
    (default: ``path`` with the suffix ``.safetensors``), each replaced only once complete;
    returns the weights path."""
    if not isinstance(path, (str, os.PathLike)):
        raise HirError(f"error: TorchProgram.save: path must be a file name, got {type(path).__name__}")
    path = os.fspath(path)
    weights = os.fspath(weights) if weights is not None else default_weights_path(path)
    if os.path.abspath(weights) == os.path.abspath(path):
        raise HirError(f"error: TorchProgram.save: the weights file {weights} would overwrite the program file")
    try:
        check_writable("path", path)
        check_writable("weights", weights)
    except CliError as err:
        raise HirError(f"error: TorchProgram.save: {err}") from None

    def write_both(tmp: str) -> None:  # the weights first: the IR names them
        write_weights(module, state_tensors(), weights, os.path.dirname(os.path.abspath(path)))
        write_text(tmp, str(module))

    try:
        write_atomically(path, write_both)
    except CliError as err:
        raise HirError(f"error: TorchProgram.save: {err}") from None
    return weights


def _mesh(main: ir.Operation) -> tuple | None:
    """The devices of the mesh ``@main``'s arguments are placed on (None: unsharded)."""
    devices = set()
    for argument in main.regions[0].blocks[0].arguments:
        if isinstance(argument.type, ir.MemRefType) and (placed := sharding_of(argument)) is not None:
            devices.update(placed.mesh)
    return tuple(sorted(devices)) or None


class Saved(NamedTuple):
    """What :func:`load` read: ``TorchProgram(**saved._asdict())`` is the program."""

    module: ir.Module
    state_names: list
    num_inputs: int
    mesh: tuple | None
    weights: dict


def load(path: str | os.PathLike[str], weights: str | None = None) -> Saved:
    """The program ``save`` (or hir-import) wrote to ``path``, with its weights (global CPU
    tensors, checked against ``@main``'s arguments) as the program's state."""
    if not isinstance(path, (str, os.PathLike)):
        raise HirError(f"error: hir.load: path must be a file name, got {type(path).__name__}")
    name, text = read_source(os.fspath(path))
    module = parse(text, name)
    main = _main(module)
    with module.context:
        recorded = recorded_weights(module, main)
        types = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs
        if sorted(recorded.keys) != list(range(len(recorded.keys))):
            raise HirError(
                f"{name}: error: @main's arguments reading weights are not its "
                f"first ones ({sorted(recorded.keys)}): not a program hir-import wrote"
            )
        file = weights_path(recorded, name, weights)
        state = {}
        if recorded.keys:
            if file is None:
                raise HirError(
                    f"{name}: error: @main's arguments name weight keys but the "
                    "module names no weights file (hir.load(path, weights=FILE))"
                )
            values = read_weights(file, types, recorded.keys, rank=None, device=torch.device("cpu"))
            state = {recorded.keys[i]: t for i, t in values.items()}
    names = [recorded.keys[i] for i in range(len(recorded.keys))]
    return Saved(module, names, len(types) - len(names), _mesh(main), state)
