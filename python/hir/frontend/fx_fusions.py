"""One-row products with their neighbours as one op, rewritten in the exported FX graph.

At batch-1 decode a Llama layer runs, between its products, two RMSNorms and two residual
adds, each a kernel launch over one row. Where a product's input is the RMSNorm of a row
(:func:`fuse_norm_products`) or its only use is a residual add (:func:`fuse_residual_products`),
the two become one op of :mod:`hir.interpreter.decode_fusions`, whose kernel computes the norm
in the product's prologue or the add in its epilogue. Only single-row products are rewritten:
with more rows the composite would be its torch ops again, which inductor already fuses well
into the kernels around them. The rewritten node keeps the replaced node's metadata (its
fake value, module stack and layer marks).
"""

import math
from typing import Any

import torch

from hir.frontend.fx_rewrites import fake_shape, only_use
from hir.interpreter import decode_fusions, decode_ops

aten = torch.ops.aten
_TO_COPY = aten._to_copy.default
_ROW_DTYPES = (torch.bfloat16, torch.float16)


def fuse_norm_products(graph: torch.fx.Graph) -> int:
    """Replace each one-row, bias-free product whose input is Llama's ``RMSNorm`` of a row
    ``x``, used by that product only::

        xf = _to_copy(x, f32); r = rsqrt(mean(pow(xf, 2), [-1], True) + eps)
        n = mul(w, _to_copy(mul(xf, r), x.dtype)); y = linear(n, W)
          == y = hir::rms_norm_linear(x, w, W, eps)

    and likewise ``hir::swiglu(n, Wg, Wu)`` by ``hir::rms_norm_swiglu(x, w, Wg, Wu, eps)``; an
    ``alias`` of ``n`` between the two (the model's last norm and its head) is looked through.
    Returns the number replaced."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or not _one_row(node):
            continue
        if _product(node, None):
            fused_target, weights = decode_fusions.RMS_NORM_LINEAR, node.args[1:]
        elif node.target is decode_ops.SWIGLU and not node.kwargs:
            fused_target, weights = decode_fusions.RMS_NORM_SWIGLU, node.args[1:]
        else:
            continue
        normed, views = node.args[0], []
        if only_use(normed, aten.alias.default, node):  # (the export's alias between the last norm and the head)
            normed, views = normed.args[0], [normed]
        norm = rms_norm(normed)
        if norm is None or set(normed.users) != {views[0] if views else node}:
            continue
        x, norm_weight, eps, chain = norm
        _replace(graph, node, fused_target, (x, norm_weight, *weights, eps), views + chain)
        count += 1
    return count


def fuse_residual_products(graph: torch.fx.Graph) -> int:
    """Replace each ``add(r, linear(x, W))`` (either operand order) of a one-row, bias-free
    product used by that add only and a residual ``r`` of its shape and dtype::

        y = add(r, linear(x, W))  ==  y = hir::linear_residual(x, W, r)

    Returns the number replaced."""
    count = 0
    for node in list(graph.nodes):
        if not (only_use(node, aten.add.Tensor, None) and len(node.args) == 2):
            continue
        residual, product = node.args
        if not _product(product, node):
            residual, product = product, residual
        if not _product(product, node) or not _one_row(product):
            continue
        want, got = product.meta.get("val"), residual.meta.get("val")
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
            continue
        _replace(graph, node, decode_fusions.LINEAR_RESIDUAL, (*product.args, residual), [product])
        count += 1
    return count


def rms_norm(node: Any) -> tuple[Any, Any, float, list] | None:
    """``(x, weight, eps, nodes)`` where ``node`` is Llama's ``RMSNorm`` of ``x`` by a 1-D
    weight of ``x``'s dtype (the form :func:`fuse_norm_products` shows),
    ``nodes`` its nodes from ``node`` back, each used inside it only; else None."""
    if not (only_use(node, aten.mul.Tensor, None) and len(node.args) == 2):
        return None
    weight: Any
    cast: Any
    weight, cast = node.args
    if not _cast(cast, node):
        cast, weight = weight, cast
    if not _cast(cast, node):
        return None
    scaled: Any = cast.args[0]
    if not (only_use(scaled, aten.mul.Tensor, cast) and len(scaled.args) == 2):
        return None
    full: Any
    rstd: Any
    full, rstd = scaled.args
    if not only_use(rstd, aten.rsqrt.default, scaled):
        full, rstd = rstd, full
    if not only_use(rstd, aten.rsqrt.default, scaled):
        return None
    shifted: Any = rstd.args[0]
    if not (shifted.op == "call_function" and shifted.target is aten.add.Tensor and set(shifted.users) == {rstd}):
        return None
    mean: Any
    mean, eps = shifted.args if len(shifted.args) == 2 else (None, None)
    if not isinstance(eps, float) or shifted.kwargs or not _last_dim_mean(mean, shifted):
        return None
    power: Any = mean.args[0]  # (_last_dim_mean read it: a node)
    if not (
        power.op == "call_function"
        and power.target is aten.pow.Tensor_Scalar
        and power.args[1:] == (2,)
        and set(power.users) == {mean}
        and power.args[0] is full
    ):
        return None
    if not (_cast(full, None, torch.float32) and set(full.users) == {power, scaled}):
        return None
    x: Any = full.args[0]
    value, weight_value = x.meta.get("val"), weight.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype not in _ROW_DTYPES or cast.kwargs["dtype"] != value.dtype:
        return None
    if not isinstance(weight_value, torch.Tensor) or weight_value.dtype != value.dtype:
        return None
    if fake_shape(weight) != (value.shape[-1],):
        return None
    return x, weight, eps, [node, cast, scaled, rstd, shifted, mean, power, full]


def _cast(node: Any, user: Any, dtype: torch.dtype | None = None) -> bool:
    """Whether ``node`` is ``_to_copy(t, dtype=...)`` of a node ``t``, to ``dtype`` where given,
    with no other keyword, used by ``user`` only (None: anything)."""
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target is _TO_COPY
        and len(node.args) == 1
        and isinstance(node.args[0], torch.fx.Node)
        and set(node.kwargs) == {"dtype"}
        and (dtype is None or node.kwargs["dtype"] == dtype)
        and (user is None or set(node.users) == {user})
    )


def _last_dim_mean(node: Any, user: Any) -> bool:
    """Whether ``node`` is ``mean(t, [last dim], keepdim=True)`` used by ``user`` only."""
    if not (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target is aten.mean.dim
        and set(node.users) == {user}
        and not node.kwargs
        and len(node.args) == 3
        and node.args[2] is True
    ):
        return False
    rank, dims = len(fake_shape(node.args[0]) or ()), node.args[1]
    return isinstance(dims, (list, tuple)) and list(dims) in ([-1], [rank - 1])


def _one_row(node: Any) -> bool:
    """Whether ``node``'s value has one row in all, of static bf16/f16 sizes."""
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype not in _ROW_DTYPES or value.dim() < 2:
        return False
    return all(isinstance(s, int) for s in value.shape) and math.prod(value.shape[:-1]) == 1


def _product(node: Any, user: Any) -> bool:
    """Whether ``node`` is a bias-free ``linear`` by a 2-D weight, used by ``user`` only (None:
    anything)."""
    return (
        only_use(node, aten.linear.default, user) and len(node.args) == 2 and len(fake_shape(node.args[1]) or ()) == 2
    )


def _replace(graph: torch.fx.Graph, node: Any, target: Any, args: tuple, dead: list) -> None:
    """``node`` replaced by ``target(*args)`` (inserted before it, with its metadata), and the
    nodes ``dead`` (users before operands) erased after it."""
    with graph.inserting_before(node):
        fused = graph.call_function(target, args)
    fused.meta = dict(node.meta)
    node.replace_all_uses_with(fused)
    graph.erase_node(node)
    for gone in dead:
        graph.erase_node(gone)
