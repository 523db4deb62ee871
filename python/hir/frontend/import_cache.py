"""Imported programs cached on disk: ``hir.compile(module, example_args)`` and
``hir.generate`` import a module once per machine, not once per process. With inductor's
own cache of compiled regions (keyed by each region's traced graph, see
:mod:`hir.interpreter.kernels`), a second process gets from the ``nn.Module`` to its first
result without exporting or compiling anything again.

The key is everything an import reads: the code of every module class in the tree (the
file defining it), the tree's structure and its submodules' plain attributes (``heads = 8``, ``eps``),
an HF ``config``, the state's names, shapes and dtypes, the example inputs' shapes and dtypes,
the import options, and the versions of hir's frontend, torch, torch-mlir and transformers.
A module whose ``forward`` reads anything else (a global, a closure) can hit a stale entry:
``$HIR_CACHE_DIR=off`` turns the cache off (default directory ``~/.cache/hir``). Sharded
imports (``mesh=``) are not cached.

Nothing read from the cache runs code: an entry (:mod:`hir.frontend.cache_entries`) is the
module's text, its metadata as JSON and the tensors it captured as safetensors, with a digest
of all three checked on load (an edited or damaged entry is a miss, with a warning). As pip's
and inductor's caches do, the folder must belong to this user and be writable by no one
else (the default one is created 0700): another user able to write entries could otherwise
make this user's process run a program of theirs. A folder that fails the check is not used,
with a warning saying why.
"""

import hashlib
import inspect
import os
import stat
import warnings
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

import hir.dialect
from hir.frontend import torch_import  # (called through the module: tests count its imports)
from hir.frontend.cache_entries import load_entry, store_entry
from hir.interpreter import decode_fusions, decode_kernels

_OFF = ("off", "0", "none", "")
_HERE = Path(__file__).resolve().parent


def cache_dir() -> Path | None:
    """The cache directory ($HIR_CACHE_DIR, default ~/.cache/hir), None when turned off."""
    value = os.environ.get("HIR_CACHE_DIR")
    if value is not None and value.strip().lower() in _OFF:
        return None
    return Path(value) if value else Path.home() / ".cache" / "hir"


def refusal(path: Path, status: os.stat_result) -> str | None:
    """Why the folder ``path`` (whose ``os.stat`` is ``status``) may not hold this user's
    cache, None when it may: it must be a folder owned by this user and writable by no one else."""
    if not stat.S_ISDIR(status.st_mode):
        return f"{path} is not a folder"
    if status.st_uid != os.getuid():
        return f"{path} belongs to uid {status.st_uid}, not to this user (uid {os.getuid()})"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        group, others = status.st_mode & stat.S_IWGRP, status.st_mode & stat.S_IWOTH
        who = "group and others" if group and others else "group" if group else "others"
        return f"{path} is writable by {who} (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def private_folder(path: Path) -> Path | None:
    """``path``, created 0700 where missing, when it passes :func:`refusal`; else None,
    with a warning saying why the cache is not used."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = os.stat(path)
    except OSError as err:
        why: str | None = f"{path} cannot be created: {err.strerror or err}"
    else:
        why = refusal(path, status)
    if why is None:
        return path
    warnings.warn(
        f"hir: not using the import cache: {why}; a cache folder must belong to you and be writable by no one "
        "else (chmod go-w, or set $HIR_CACHE_DIR to a folder of your own, or HIR_CACHE_DIR=off)",
        stacklevel=4,
    )
    return None


def cached_from_torch(module: torch.nn.Module, example_args: Sequence[Any], **options: Any) -> Any:
    """:func:`hir.from_torch` through the cache (see the module docstring)."""
    directory = cache_dir()
    if directory is None or options.get("mesh") is not None or options.get("placements"):
        return torch_import.from_torch(module, example_args, **options)
    if not isinstance(example_args, (tuple, list)):
        example_args = (example_args,)
    folder = private_folder(directory) and private_folder(directory / "imports")
    if folder is None:
        return torch_import.from_torch(module, example_args, **options)
    key = fingerprint(module, example_args, options)
    found = load_entry(folder / key, key)
    if found is not None:
        found.weights = {**dict(module.named_buffers()), **module.state_dict()}  # as from_torch: references
        return found
    program = torch_import.from_torch(module, example_args, **options)
    store_entry(folder / key, key, program)
    return program


def fingerprint(module: torch.nn.Module, example_args: Sequence[Any], options: dict) -> str:
    """The cache key of importing ``module`` on ``example_args`` with ``options``."""
    digest = hashlib.sha256()

    def add(*parts: Any) -> None:
        for part in parts:
            digest.update(repr(part).encode())
            digest.update(b"\0")

    add(_versions(), sorted((k, repr(v)) for k, v in options.items()), repr(module))
    add(decode_kernels.enabled("norm-residual"))  # the import's one-row fusions (hir.frontend.fx_fusions)
    for cls in sorted({type(m) for m in module.modules()}, key=lambda c: (c.__module__, c.__qualname__)):
        add(cls.__module__, cls.__qualname__, _source(cls))
    configs: set = set()
    for name, sub in module.named_modules():
        add(name, sorted((k, v) for k, v in vars(sub).items() if not k.startswith("_") and _plain(v)))
        config = getattr(sub, "config", None)
        if config is not None and hasattr(config, "to_json_string") and id(config) not in configs:
            configs.add(id(config))
            add(config.to_json_string(use_diff=False))
    for name, tensor in {**dict(module.named_buffers()), **module.state_dict()}.items():
        add(name, tuple(tensor.shape), tensor.dtype)
    for arg in example_args:
        add((tuple(arg.shape), arg.dtype) if isinstance(arg, torch.Tensor) else arg)
    return digest.hexdigest()[:32]


def _plain(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None), torch.dtype)):
        return True
    return isinstance(value, (tuple, list)) and all(_plain(v) for v in value)


def _source(cls: type) -> str:
    """A digest of the file defining ``cls`` (any edit to it changes the key): reading a
    file is cheap where ``inspect.getsource`` parses it to find the class (a second for the
    modules of one HF model, on a first call)."""
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:  # a built-in class
        return ""
    if path is None:
        return ""
    if path not in _FILES:
        try:
            _FILES[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:  # a class defined without a source file
            _FILES[path] = ""
    return _FILES[path]


_FILES: dict = {}  # source file -> digest, read once per process


_VERSIONS: list = []


def _versions() -> tuple:
    """torch, torch-mlir and transformers versions and a digest of hir's frontend code."""
    if not _VERSIONS:
        code = hashlib.sha256()
        dialect = sorted(Path(hir.dialect.__file__).parent.glob("*.py"))
        for path in [*sorted(_HERE.glob("*.py")), *dialect, Path(decode_fusions.__file__)]:  # (its ops' schemas)
            code.update(path.read_bytes())
        found = []
        for name in ("torch", "torch-mlir", "transformers"):
            try:
                found.append(metadata.version(name))
            except metadata.PackageNotFoundError:
                found.append(None)
        _VERSIONS.append((torch.__version__, *found, code.hexdigest()))
    return _VERSIONS[0]
