"""Dynamic shapes for :func:`hir.from_torch`: one import runs every size of the dims marked
dynamic.

* **The spec**: torch.export's ``dynamic_shapes`` (``torch.export.Dim`` per dim, one entry
  per example argument, or a dict by ``forward``'s parameter names), or the simple form
  ``dynamic={"input0": {0: "batch", 1: "seq"}}`` (:func:`export_spec`: equal names are one
  dim).
* **Types**: a dynamic dim is ``?`` in the ``!torch.vtensor`` the FX importer emits and in
  the memref types the partitioner derives (``memref<?x?x16xf32>``).
* **Sizes in @main**: every buffer of a dynamic shape is allocated with its sizes, computed
  from the program's arguments: the exported graph knows each value's shape as sympy
  expressions over the input dims (``s0``, ``4*s1``, ``s0*s1``), :class:`Sizes` emits
  ``memref.dim`` of the argument that holds each symbol and ``arith`` index ops for the rest.
* **Inside kernel segments**, torch's own size computations (``aten.size.int``,
  ``aten.mul.int``, the size lists of ``view``) are cloned into each segment that uses them
  (``partition.py``), so sizes never cross a segment boundary.

Where a dynamic dim is split over devices, the run checks that it divides (``memref.alloc``
and :func:`hir.frontend.placements.shard_arguments`).
"""

import inspect
from collections.abc import Sequence
from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import arith
from torch_mlir.dialects import torch as torch_dialect
from torch_mlir.extras.fx_importer import GraphNodeImporter

from hir.core import HirError
from hir.dialect.irutils import dim, index_arith, index_const

Expr = Any  # a sympy expression, or an int for a static extent


def export_spec(
    module: torch.nn.Module, num_args: int, dynamic_shapes: Any, dynamic: dict | None, keywords: Sequence[str] = ()
) -> tuple[tuple | None, dict]:
    """torch.export's ``dynamic_shapes`` for the example arguments (one entry each: the
    positional ones, then the keyword inputs ``keywords``), from either form, None when
    neither is given; and the dynamic dims of state entries (``dynamic=`` naming a parameter
    or buffer of ``module``, e.g. a KV cache's length: one program for every cache size)."""
    if dynamic_shapes is not None and dynamic is not None:
        raise HirError(
            "error: hir.from_torch: give dynamic_shapes= (torch.export's form) or dynamic= (hir's), not both"
        )
    if dynamic is not None:
        state = {name for name, _ in module.named_buffers()} | set(module.state_dict())
        return _from_names(dynamic, num_args, keywords, state)
    if dynamic_shapes is None:
        return None, {}
    if isinstance(dynamic_shapes, dict):
        params = list(inspect.signature(module.forward).parameters)[: num_args - len(keywords)] + list(keywords)
        unknown = [k for k in dynamic_shapes if k not in params]
        if unknown:
            raise HirError(
                f"error: hir.from_torch: dynamic_shapes names {unknown[0]!r}, which is not "
                f"among {type(module).__name__}.forward's first {num_args} parameter(s) {params}"
            )
        return tuple(dynamic_shapes.get(p) for p in params), {}
    if not isinstance(dynamic_shapes, (tuple, list)) or len(dynamic_shapes) != num_args:
        raise HirError(
            "error: hir.from_torch: dynamic_shapes must give one entry "
            f"per example argument ({num_args}), got {dynamic_shapes!r}"
        )
    return tuple(dynamic_shapes), {}


def dim_info(spec: tuple | None, index: int, axis: int, expr: Any) -> tuple:
    """(name, min, max) of dynamic dim ``axis`` of input ``index``: the user's ``Dim``'s name
    (else the export's symbol) and its declared bounds (None where it declares none), which
    a run enforces."""
    entry = spec[index] if spec is not None and index < len(spec) else None
    if isinstance(entry, (tuple, list)):
        entry = dict(enumerate(entry))
    declared = entry.get(axis) if isinstance(entry, dict) else None
    low, high = getattr(declared, "min", None), getattr(declared, "max", None)
    low = int(low) if isinstance(low, int) and low > 0 else None
    high = int(high) if isinstance(high, int) and high < 2**62 else None  # torch's default max is int_oo
    return getattr(declared, "__name__", None) or str(expr), low, high


def check_dims(dims: dict, i: int, value: torch.Tensor, parts: Any, sizes: dict, where: str) -> None:
    """Input ``i``'s dynamic dims (``dims``: axis -> (symbol, name, min, max)), at the call
    ``where``: within their declared bounds, equal wherever one dim is named (``sizes``:
    symbol -> (extent, input, axis) first seen), and dividing evenly over the devices of its
    placement (``parts(axis)``)."""
    for axis, (symbol, name, low, high) in dims.items():
        extent = value.shape[axis]
        outside = (low is not None and extent < low) or (high is not None and extent > high)
        if outside and not value.is_meta:  # (a meta placeholder lays out the state: no size of its own)
            declared = f"{low if low is not None else 0} <= {name} <= {high if high is not None else 'any'}"
            raise HirError(
                f"{where}: error: input {i}: dim {axis} is dynamic dim "
                f"{name}, declared {declared} at import, got {extent}"
            )
        first = sizes.setdefault(symbol, (extent, i, axis))
        if first[0] != extent:
            raise HirError(
                f"{where}: error: input {i}: dim {axis} is dynamic dim {name}, of "
                f"extent {first[0]} in input {first[1]} (dim {first[2]}), got {extent}"
            )
        if extent % parts(axis):
            raise HirError(
                f"{where}: error: input {i}: dynamic dim {axis} ({name}) of extent {extent} "
                f"does not split evenly over the {parts(axis)} devices of its placement"
            )


def _from_names(dynamic: dict, num_args: int, names: Sequence[str] = (), state: Any = ()) -> tuple[tuple, dict]:
    """``{"input0": {0: "batch", 1: ("seq", 2, 4096)}}`` -> ``({0: Dim("batch"), 1:
    Dim("seq", min=2, max=4096)},)``; one Dim per name (bounds: ``(name, min, max)``, either
    None for torch's default). A keyword input is named by its keyword or its position
    (``input<N>`` after the positional ones: ``names``); a state entry (in ``state``) by its
    name, its dims returned apart: ``(inputs' spec, {state name: dims})``."""
    if not isinstance(dynamic, dict):
        raise HirError(
            f"error: hir.from_torch: dynamic must be a dict like {{'input0': "
            f"{{0: 'batch', 1: ('seq', 2, 4096)}}}}, got {type(dynamic).__name__}"
        )
    dims: dict[str, Any] = {}
    spec: list = [None] * num_args
    state_spec: dict = {}
    for key, axes in dynamic.items():
        index = int(key[5:]) if isinstance(key, str) and key.startswith("input") and key[5:].isdigit() else None
        if index is None and key in names:
            index = num_args - len(names) + names.index(key)
        if (index is None and key not in state) or (index is not None and index >= num_args):
            keywords = f" or the keyword inputs {', '.join(names)}" if names else ""
            raise HirError(
                f"error: hir.from_torch: dynamic names {key!r}; the inputs are input0 "
                f"... input{num_args - 1}{keywords} (or a parameter or buffer by name)"
            )
        if not isinstance(axes, dict) or not all(isinstance(a, int) and _dim_entry(n) for a, n in axes.items()):
            raise HirError(
                f"error: hir.from_torch: dynamic[{key!r}] must map dims to names (identifiers) "
                f"or (name, min, max), like {{0: 'batch', 1: ('seq', 2, 4096)}}, got {axes!r}"
            )
        if index is None:
            state_spec[key] = {a: _dim(dims, n, key) for a, n in axes.items()}
        else:
            spec[index] = {a: _dim(dims, n, key) for a, n in axes.items()}
    return tuple(spec), state_spec


def _dim_entry(entry: Any) -> bool:
    if isinstance(entry, str):
        return entry.isidentifier()
    return (
        isinstance(entry, tuple)
        and len(entry) == 3
        and isinstance(entry[0], str)
        and entry[0].isidentifier()
        and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in entry[1:])
    )


def _dim(dims: dict, entry: Any, key: str) -> Any:
    """The ``torch.export.Dim`` of ``entry`` (a name, or (name, min, max)); a name used twice is
    one Dim (with one set of bounds)."""
    name, low, high = (entry, None, None) if isinstance(entry, str) else entry
    bounds = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
    if name in dims:
        if bounds and dims[name][1] != bounds:
            raise HirError(
                f"error: hir.from_torch: dynamic[{key!r}] gives dim {name!r} "
                f"the bounds {bounds}, another entry {dims[name][1] or 'none'}"
            )
        return dims[name][0]
    try:
        dims[name] = (torch.export.Dim(name, **bounds), bounds)
    except (ValueError, AssertionError) as err:  # torch checks the bounds (0 <= min <= max)
        raise HirError(f"error: hir.from_torch: dynamic[{key!r}]: bounds {bounds} of {name!r}: {err}") from None
    return dims[name][0]


_SIZE_TYPES = ("!torch.int", "!torch.list<int>", "!torch.bool")  # bool: a check on sizes
_SIZE_OF = (torch_dialect.AtenSizeIntOp.OPERATION_NAME, torch_dialect.AtenSizeOp.OPERATION_NAME)


def is_size(op: ir.Operation) -> bool:
    """A size computation of a dynamic shape (``aten.size.int``, ``aten.mul.int``, a list of
    sizes): ints from tensors' shapes, constants and other sizes. Cloned into each segment
    that uses it (``partition.py``), as constants are: sizes never cross a segment boundary."""
    if not op.results or any(str(r.type) not in _SIZE_TYPES for r in op.results):
        return False
    return op.name in _SIZE_OF or all(not str(v.type).startswith("!torch.vtensor") for v in op.operands)


def symbolic_shapes(importer: GraphNodeImporter) -> dict:
    """MLIR tensor value -> its shape (sympy expressions; ints where static), from the
    exported graph's fake tensors."""
    shapes = {}
    for key, value in importer._v.items():
        if not isinstance(key, tuple):
            continue
        node, index = key
        val = node.meta.get("val")
        if isinstance(val, (tuple, list)):
            val = val[index] if index < len(val) else None
        if isinstance(val, torch.Tensor):
            shapes[value] = tuple(d.node.expr if isinstance(d, torch.SymInt) else int(d) for d in val.shape)
    return shapes


class Sizes:
    """The index values of dynamic extents in @main, built at the current insertion point
    from ``memref.dim`` of the arguments that hold the symbols (memoized)."""

    def __init__(self, shapes: dict, arguments: Sequence[tuple[ir.Value, ir.Value]]) -> None:
        self.shapes = shapes
        self.bound: dict = {}  # symbol -> (argument buffer, axis)
        for torch_arg, buffer in arguments:
            for axis, expr in enumerate(shapes.get(torch_arg, ())):
                if not isinstance(expr, int) and expr.is_Symbol:
                    self.bound.setdefault(expr, (buffer, axis))
        self.made: dict = {}

    def of(self, value: ir.Value, memref_type: ir.MemRefType, where: str) -> list[ir.Value]:
        """The sizes ``memref.alloc`` takes for a buffer of ``value`` (one per ``?``): of its
        own shape, or (a buffer of another rank a contraction form adds: a leading mesh axis)
        ``value``'s dynamic extents in order."""
        dynamic = [i for i, d in enumerate(memref_type.shape) if d == ir.ShapedType.get_dynamic_size()]
        if not dynamic:
            return []
        if value not in self.shapes:  # not a dynamic import, or a shape that depends on data
            raise ValueError(f"{value.get_name()} has the dynamic type {value.type}")
        shape = self.shapes[value]
        if len(shape) == memref_type.rank:
            exprs = [shape[i] for i in dynamic]
        else:  # a layout a contraction form derived from value's (a leading mesh axis): in order
            exprs = [e for e in shape if not isinstance(e, int)]
        if len(exprs) != len(dynamic) or any(isinstance(e, int) for e in exprs):
            raise HirError(
                f"{where}: error: the extents of the dynamic dims of "
                f"{memref_type} are not known; mark fewer dims dynamic"
            )
        return [self.emit(e, where) for e in exprs]

    def emit(self, expr: Expr, where: str) -> ir.Value:
        key = str(expr)
        if key not in self.made:
            self.made[key] = self._build(expr, where)
        return self.made[key]

    def _build(self, expr: Expr, where: str) -> ir.Value:
        import sympy  # sympy loads only for dynamic dims
        from torch.utils._sympy.functions import FloorDiv, Mod  # sympy loads only for dynamic dims

        if isinstance(expr, int) or expr.is_Integer:
            return index_const(int(expr))
        if expr.is_Symbol:
            if expr not in self.bound:
                raise HirError(
                    f"{where}: error: dynamic size {expr} is no input's dim: hir cannot compute it before the run"
                )
            buffer, axis = self.bound[expr]
            return dim(buffer, index_const(axis))
        ops = {sympy.Add: arith.AddIOp, sympy.Mul: arith.MulIOp, FloorDiv: arith.FloorDivSIOp, Mod: arith.RemSIOp}
        op = next((o for cls, o in ops.items() if isinstance(expr, cls)), None)
        if op is None:
            raise HirError(
                f"{where}: error: dynamic size {expr} ({type(expr).__name__}) "
                "has no index arithmetic in hir (supported: +, *, //, %)"
            )
        args = [self.emit(a, where) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = index_arith(op, out, a)
        return out
