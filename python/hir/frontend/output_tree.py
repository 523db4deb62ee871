"""A module's result as an imported program returns it: :func:`flatten_outputs` gives the
tensors of the result (``@main``'s results), their path names and the *tree* of the result
(its structure, the tensors replaced by their index); :func:`rebuild` puts the results of a
run back into that structure, so a compiled module returns what the module returns (a
tensor, a tuple, a dict, a ``ModelOutput``), as ``torch.compile`` does.

The tree (:func:`flatten_with_tree`) is JSON data (it is kept with an import in the cache): ``["tensor", i]``,
``["none"]``, ``["const", value]``, ``["tuple" | "list", [items]]``, ``["dict", class,
[[key, item], ...]]``, ``["dataclass", class, [[field, item], ...]]`` and ``["cache",
class, [[keys, values], ...]]`` (a transformers cache, one pair per layer). ``class`` is
``"module:qualname"``; :func:`rebuild` finds it among the modules already imported (nothing
is imported or run to rebuild a result) and falls back to a plain dict (a tuple of
``(keys, values)`` pairs for a cache) where it is not there.
"""

import dataclasses
import sys
from typing import Any

import torch

from hir.core import HirError


def flatten_outputs(result: Any) -> tuple[list[str], list[torch.Tensor]]:
    """The tensors of a module's result with their path names (tuples, lists, dicts,
    dataclasses, ``ModelOutput`` and transformers caches walked: ``last_hidden_state``,
    ``output0``, ``past_key_values.0.keys``)."""
    names, tensors, _ = flatten_with_tree(result)
    return names, tensors


def flatten_with_tree(result: Any) -> tuple[list[str], list[torch.Tensor], list]:
    """:func:`flatten_outputs` and the result's tree (module docstring)."""
    names: list[str] = []
    tensors: list[torch.Tensor] = []

    def walk(value: Any, path: str) -> list:
        if isinstance(value, torch.Tensor):
            names.append(path or "output")
            tensors.append(value)
            return ["tensor", len(tensors) - 1]
        if value is None:
            return ["none"]
        if _is_cache(value):
            layers = [
                [walk(getattr(layer, attr, None), f"{path}.{i}.{attr}") for attr in ("keys", "values")]
                for i, layer in enumerate(getattr(value, "layers", []))
            ]
            return ["cache", _class_path(type(value)), layers]
        if isinstance(value, dict):  # ModelOutput is an OrderedDict of its set fields
            items = [[key, walk(item, f"{path}.{key}" if path else str(key))] for key, item in value.items()]
            return ["dict", None if type(value) is dict else _class_path(type(value)), items]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = [
                [f.name, walk(getattr(value, f.name), f"{path}.{f.name}" if path else f.name)]
                for f in dataclasses.fields(value)
            ]
            return ["dataclass", _class_path(type(value)), fields]
        if isinstance(value, (tuple, list)):
            items = [walk(item, f"{path}.{i}" if path else f"output{i}") for i, item in enumerate(value)]
            return ["list" if isinstance(value, list) else "tuple", items]
        if isinstance(value, (int, float, bool, str)):
            return ["const", value]  # a constant of the trace, not a program output
        raise HirError(
            f"error: the module returns a {type(value).__name__} at '{path or 'output'}'; hir "
            "programs return tensors (tuples, lists, dicts, dataclasses and ModelOutput of them)"
        )

    tree = walk(result, "")
    return names, tensors, tree


def rebuild(tree: list | None, values: list) -> Any:
    """``values`` (a run's results, in ``@main``'s order) in the structure ``tree`` records;
    ``values`` as they are where there is no tree (a program loaded from a file)."""
    if tree is None:
        return values
    kind = tree[0]
    if kind == "tensor":
        return values[tree[1]]
    if kind == "none":
        return None
    if kind == "const":
        return tree[1]
    if kind in ("tuple", "list"):
        items = [rebuild(item, values) for item in tree[1]]
        return items if kind == "list" else tuple(items)
    cls = _find_class(tree[1])
    if kind == "cache":
        return _cache(cls, [(rebuild(k, values), rebuild(v, values)) for k, v in tree[2]])
    fields = {key: rebuild(item, values) for key, item in tree[2]}
    if cls is None:
        return fields
    if kind == "dataclass" or issubclass(cls, _model_output()):
        return cls(**fields)
    return cls(fields)


def _cache(cls: type | None, layers: list) -> Any:
    """A transformers ``DynamicCache`` holding ``layers`` ((keys, values) per layer); the
    pairs as a tuple for another kind of cache (a ``StaticCache`` needs its config)."""
    if cls is None or cls.__name__ != "DynamicCache":
        return tuple(layers)
    cache = cls()
    for i, (keys, values) in enumerate(layers):
        cache.update(keys, values, i)
    return cache


def _is_cache(value: Any) -> bool:
    return any(c.__name__ == "Cache" and c.__module__.startswith("transformers") for c in type(value).__mro__)


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _find_class(path: str | None) -> type | None:
    """The class named ``module:qualname`` if its module is imported already, else None."""
    if path is None:
        return None
    module_name, _, qualname = path.partition(":")
    found: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) else None


def _model_output() -> tuple:
    """transformers' ``ModelOutput`` (built from keywords) when transformers is imported."""
    utils = sys.modules.get("transformers.utils.generic")
    cls = getattr(utils, "ModelOutput", None)
    return (cls,) if isinstance(cls, type) else ()
