"""``torch.export`` programs as hir inputs: ``hir.compile(exported_program, args)`` and
``hir.load("m.pt2")`` (a file ``torch.export.save`` wrote).

An ``ExportedProgram`` runs as its module (``ep.module()``, the graph with its weights): hir
imports that module, with the dims the export made dynamic declared dynamic in hir too (their
names and bounds from ``ep.range_constraints``), so the program takes every size the
exported one takes and refuses the others at the call.

Why a ``.pt2`` is checked before ``torch.export.load`` reads it: in torch 2.13 that function
is not free of pickles (its own docstring warns "uses pickle under the hood ... never load
data from an untrusted source"): a weight or constant the archive marks ``use_pickle`` is
read with ``torch.load(weights_only=False)``, an opaque constant with ``pickle.loads``, a
torchbind object with torch's pickler, the example inputs with ``torch.load(weights_only=True)``
falling back to ``weights_only=False`` where that fails, an AOTInductor entry loads a
compiled shared library, and an archive it cannot read is retried in the legacy format (more
``torch.load``). :func:`check_archive` accepts only an archive whose members are the graph
(JSON), raw tensor bytes and example inputs that ``torch.load(weights_only=True)`` reads (no
code: its unpickler builds tensors and containers only); so ``torch.export.load`` on it takes
none of those paths.
"""

import io
import json
import os
import re
import zipfile
from typing import Any

import torch

from hir.core import HirError
from hir.frontend.torch_import import from_torch

# the members of a torch.export.save archive (below its top folder) that hold no code
_MEMBERS = re.compile(
    r"(archive_format|archive_version|byteorder|\.data/version|\.data/serialization_id|models/[\w.-]+\.json"
    r"|data/weights/[\w.-]+|data/constants/[\w.-]+|data/sample_inputs/[\w.-]+\.pt|extra/[^/]+)"
)
_TENSOR_FILES = ("weight_", "tensor_")  # raw tensor payloads (torch.export's weight and tensor-constant file prefixes)


def is_archive(path: str) -> bool:
    """Whether ``path`` is a zip archive (what ``torch.export.save`` writes)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def check_archive(path: str) -> None:
    """Refuse (an :class:`HirError` naming the member) a ``.pt2`` that ``torch.export.load``
    would read with pickle or load compiled code from (see the module docstring)."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as err:
        raise HirError(f"{path}: error: not a torch.export archive: {err}") from None
    with archive:
        names = archive.namelist()
        top = {name.split("/", 1)[0] for name in names}
        if len(top) != 1 or not any(n.endswith("/archive_version") for n in names):
            raise HirError(
                f"{path}: error: not a torch.export.save archive (torch "
                "2.6 or later: one top folder holding archive_version)"
            )
        for name in names:
            member = name.split("/", 1)[1] if "/" in name else ""
            if name.endswith("/") or not member:
                continue
            if not _MEMBERS.fullmatch(member):
                raise HirError(
                    f"{path}: error: {member}: hir reads torch.export archives "
                    "of an exported program's graph, raw tensors and example "
                    "inputs only (this member would be loaded as a pickle or compiled code)"
                )
            if member.endswith("_config.json"):
                _check_payloads(path, member, archive.read(name))
            elif member.startswith("data/sample_inputs/"):
                try:
                    torch.load(io.BytesIO(archive.read(name)), weights_only=True)
                except Exception as err:  # torch.export.load would retry with weights_only=False: a full pickle
                    raise HirError(
                        f"{path}: error: {member}: the example inputs are "
                        "not plain tensors (torch.load(weights_only=True): "
                        f"{str(err).splitlines()[0][:200]}); hir reads no pickled objects"
                    ) from None


def _check_payloads(path: str, member: str, text: bytes) -> None:
    try:
        config = json.loads(text).get("config", {})
    except (ValueError, AttributeError):
        raise HirError(f"{path}: error: {member}: not a torch.export payload config (JSON)") from None
    for fqn, payload in config.items():
        if payload.get("use_pickle") or not str(payload.get("path_name", "")).startswith(_TENSOR_FILES):
            raise HirError(
                f"{path}: error: {member}: {fqn} is stored as a pickled object "
                f"({payload.get('path_name')}); hir reads plain tensors only"
            )


def load_exported(path: str) -> torch.export.ExportedProgram:
    """``torch.export.load(path)`` of an archive :func:`check_archive` accepts."""
    check_archive(path)
    try:
        return torch.export.load(path)
    except Exception as err:  # torch raises many kinds on a damaged archive
        raise HirError(
            f"{path}: error: torch.export.load: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        ) from None


def exported_inputs(ep: torch.export.ExportedProgram, example_args: Any | None) -> tuple:
    """(the module that runs ``ep``, the example arguments: ``example_args`` or the ones the
    export recorded, the example keyword arguments, ``dynamic=`` of the dims the export made
    dynamic)."""
    recorded = ep.example_inputs or ((), {})
    if example_args is None:
        if recorded is None or not (recorded[0] or recorded[1]):
            raise HirError(
                "error: hir.compile(exported_program): the program "
                "records no example inputs; pass them: hir.compile(ep, (x,))"
            )
        args, kwargs = recorded
    else:
        args, kwargs = (
            (tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)),
            recorded[1],
        )
    return ep.module(), tuple(args), dict(kwargs or {}), exported_dynamic(ep, list(kwargs or {}))


def exported_dynamic(ep: torch.export.ExportedProgram, keywords: list) -> dict:
    """``dynamic=`` (hir's short form) of the user inputs' dims the export made dynamic, each
    named by its symbol, with its bounds; inputs in order (``input<N>``), then the keyword ones."""
    from torch.export.graph_signature import InputKind  # torch.export's internals load only when a module is exported
    from torch.utils._sympy.numbers import int_oo  # sympy loads only for dynamic dims

    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    user = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    positional = len(user) - len(keywords)
    spec: dict = {}
    for i, name in enumerate(user):
        value = placeholders[name].meta.get("val")
        for axis, size in enumerate(getattr(value, "shape", ())):
            if isinstance(size, torch.SymInt):
                symbol = size.node.expr
                bounds = ep.range_constraints.get(symbol)
                low = None if bounds is None else int(bounds.lower)
                high = None if bounds is None or bounds.upper is int_oo else int(bounds.upper)
                key = f"input{i}" if i < positional else keywords[i - positional]
                spec.setdefault(key, {})[axis] = (str(symbol), low, high)
    return spec


def load_pt2(path: str) -> Any:
    """The :class:`~hir.frontend.torch_import.TorchProgram` of the exported program saved at
    ``path`` (imported from its module on its recorded example inputs; its weights are the
    program's state)."""
    ep = load_exported(os.fspath(path))
    module, args, kwargs, dynamic = exported_inputs(ep, None)
    return from_torch(module, args, example_kwargs=kwargs or None, dynamic=dynamic or None, source_name=os.fspath(path))
