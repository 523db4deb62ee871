"""One entry of the import cache (:mod:`hir.frontend.import_cache`): a folder named by its
key, holding

* ``program.mlir``: the imported module's text, locations included;
* ``captured.safetensors``: the tensors the import captured (non-persistent buffers, lifted
  constants), :attr:`TorchProgram.captured`;
* ``meta.json``: the rest of the :class:`~hir.frontend.torch_import.TorchProgram` (state and
  output names, aliases, dynamic dims, keyword inputs) and the captured tensors' devices;
* ``digest``: a sha256 of the key and the three files, checked before any of them is used.

Nothing in an entry is unpickled or imported: JSON, safetensors and MLIR text are data. An
entry whose digest does not match (edited, damaged, written by another version of hir) is a
miss, with a warning, and is removed so the next import stores a good one. An entry is
written under a temporary name and renamed, so a reader never sees half an entry."""

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from hir.core import parse
from hir.frontend.torch_import import TorchProgram

FILES = ("program.mlir", "meta.json", "captured.safetensors")
DIGEST = "digest"


def digest_of(key: str, contents: dict) -> str:
    """The digest of an entry: its key and each file's name, size and bytes."""
    digest = hashlib.sha256(key.encode())
    for name in FILES:
        digest.update(b"\0%s\0%d\0" % (name.encode(), len(contents[name])))
        digest.update(contents[name])
    return digest.hexdigest()


def store_entry(entry: Path, key: str, program: Any) -> None:
    """Write ``program`` (a TorchProgram) as the entry ``entry`` of key ``key``; best effort:
    a cache that cannot be written, or another process that stored the entry first, skips it."""
    from safetensors.torch import save  # safetensors loads only when weights are read or written

    captured = _storable(program.captured)
    meta = {
        "state_names": program.state_names,
        "num_inputs": program.num_inputs,
        "aliases": program.aliases,
        "captured": {name: str(t.device) for name, t in program.captured.items()},
        "output_names": program.output_names,
        "dynamic_dims": [{str(axis): list(dim) for axis, dim in dims.items()} for dims in program.dynamic_dims],
        "keyword_inputs": program.keyword_inputs,
        "output_tree": program.output_tree,
    }
    work = None
    try:
        contents = {
            # (from_torch verified the module last; printing would verify it again)
            "program.mlir": program.module.operation.get_asm(enable_debug_info=True, assume_verified=True).encode(),
            "meta.json": json.dumps(meta).encode(),
            "captured.safetensors": save(captured),
        }
        work = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".partial-"))
        for name, data in contents.items():
            (work / name).write_bytes(data)
        (work / DIGEST).write_text(digest_of(key, contents))
        os.replace(work, entry)
    except Exception:  # noqa: BLE001 - storing is best effort (unwritable folder, a dtype safetensors lacks)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _storable(tensors: dict) -> dict:
    """``tensors`` on the CPU, dense, none sharing memory with another (safetensors' rule),
    copied only where needed: a device tensor's move is its copy, and a CPU tensor is read
    in place unless it is a view or shares its storage. (A CPU copy runs on torch's
    intra-op threads: copying a KV cache's 32 MB that way cost seconds of CPU time.)"""
    moved = {name: t.detach().to("cpu") for name, t in tensors.items()}
    storages = Counter(t.untyped_storage().data_ptr() for t in moved.values())

    def alone(t: torch.Tensor) -> bool:
        storage = t.untyped_storage()
        return storages[storage.data_ptr()] == 1 and t.is_contiguous() and storage.nbytes() == t.nbytes

    return {name: t if alone(t) else t.clone(memory_format=torch.contiguous_format) for name, t in moved.items()}


def load_entry(entry: Path, key: str) -> Any | None:
    """The TorchProgram stored as ``entry`` for key ``key``; None when there is none, or
    (with a warning) when it fails its digest or cannot be loaded."""
    if not entry.is_dir():
        return None
    try:
        contents = {name: (entry / name).read_bytes() for name in FILES}
        recorded = (entry / DIGEST).read_text().strip()
    except OSError as err:
        return _miss(entry, f"cannot be read ({err.strerror or err}: {Path(err.filename or '').name})")
    if recorded != digest_of(key, contents):
        return _miss(entry, "does not match its digest (edited or damaged)")
    try:
        return _program(entry, contents)
    except Exception as err:  # noqa: BLE001 - a cache entry never fails the call: it is imported again
        return _miss(entry, f"cannot be loaded ({type(err).__name__}: {err})")


def _program(entry: Path, contents: dict) -> Any:
    """The TorchProgram of an entry's verified ``contents`` (the bytes the digest covered)."""
    from safetensors.torch import load  # safetensors loads only when weights are read or written

    meta = json.loads(contents["meta.json"])
    module = parse(contents["program.mlir"].decode(), str(entry / "program.mlir"))
    tensors = load(contents["captured.safetensors"])
    captured = {name: tensors[name].to(torch.device(device)) for name, device in meta["captured"].items()}
    dynamic_dims = [{int(axis): tuple(dim) for axis, dim in dims.items()} for dims in meta["dynamic_dims"]]
    return TorchProgram(
        module,
        list(meta["state_names"]),
        int(meta["num_inputs"]),
        None,
        dict(meta["aliases"]),
        captured,
        list(meta["output_names"]),
        dynamic_dims,
        keyword_inputs=list(meta["keyword_inputs"]),
        output_tree=meta.get("output_tree"),
    )


def _miss(entry: Path, why: str) -> None:
    warnings.warn(f"hir: import cache entry {entry} {why}; importing the module again", stacklevel=4)
    shutil.rmtree(entry, ignore_errors=True)
    return None
