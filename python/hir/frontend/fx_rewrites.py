"""Rewrites of the exported FX graph before it is imported (issue 34).

:func:`group_query_heads`: grouped-query attention without copying the keys and values.
HF's attention repeats each key/value head for its ``G`` query heads (``repeat_kv``:
``unsqueeze`` / ``expand`` / ``clone`` / ``reshape``) before ``scaled_dot_product_attention``,
so every step writes and reads ``G`` copies of the whole KV cache (a 1B Llama with 32 query
and 8 KV heads: 4 copies, more bytes than the step's weights at batch 8), and so does
``torch.compile``'s code. The same attention is computed on the un-repeated keys and values
when the ``G`` query heads of a KV head are stacked as ``G`` times as many query rows::

    sdpa(q [B, G*Hkv, T, D], repeat(k), repeat(v), mask [B, 1, T, L])
      == reshape(sdpa(reshape(q, [B, Hkv, G*T, D]), k, v, repeat_rows(mask) [B, 1, G*T, L]), [B, G*Hkv, T, D])

(query head ``h = kv*G + g`` is row ``g*T + t`` of KV head ``kv``; each row sees the same
keys and the same mask row as before, so every output element is the same sum). Applied
where the pattern is exact: keys and values repeated alike, no ``is_causal`` (its implicit
mask would be wrong for stacked rows) and no ``enable_gqa``, a mask broadcast over heads
or given per query head. Shapes may be symbolic (the token count of a dynamic prefill):
the new sizes are written with ``-1`` there.
"""

from typing import Any, Optional

import torch

aten = torch.ops.aten
_SDPA = aten.scaled_dot_product_attention.default


def group_query_heads(graph: torch.fx.Graph) -> int:
    """Rewrite every exact match in ``graph`` (see the module docstring); the count."""
    count = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _SDPA and _rewrite(graph, node):
            count += 1
    if count:
        graph.eliminate_dead_code()
    return count


def _repeated(node: Any) -> Optional[tuple[Any, int]]:
    """(the KV tensor, its repeat count ``G``) when ``node`` is ``repeat_kv`` of it."""
    if node.op != "call_function" or node.target not in (aten.reshape.default, aten._unsafe_view.default, aten.view.default):
        return None
    inner = node.args[0]
    if inner.op == "call_function" and inner.target is aten.clone.default:
        inner = inner.args[0]
    if inner.op != "call_function" or inner.target is not aten.expand.default:
        return None
    unsqueeze = inner.args[0]
    if unsqueeze.op != "call_function" or unsqueeze.target is not aten.unsqueeze.default or unsqueeze.args[1] != 2:
        return None
    source, sizes = unsqueeze.args[0], inner.args[1]
    shape = _shape(source)
    if shape is None or len(shape) != 4 or len(sizes) != 5 or not isinstance(sizes[2], int) or sizes[2] < 2:
        return None
    return source, sizes[2]


def _shape(node: Any) -> Optional[tuple]:
    value = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _static(size: Any) -> bool:
    return isinstance(size, int)


def _rewrite(graph: torch.fx.Graph, sdpa: Any) -> bool:
    query, key, value, *rest = sdpa.args
    mask = rest[0] if rest else sdpa.kwargs.get("attn_mask")
    is_causal = rest[2] if len(rest) > 2 else sdpa.kwargs.get("is_causal", False)
    if is_causal or sdpa.kwargs.get("enable_gqa", False):
        return False
    k, v = _repeated(key), _repeated(value)
    if k is None or v is None or k[1] != v[1]:
        return False
    groups = k[1]
    q_shape, kv_shape = _shape(query), _shape(k[0])
    if q_shape is None or len(q_shape) != 4 or not all(_static(s) for s in (q_shape[0], q_shape[1], q_shape[3], kv_shape[1])):
        return False
    batch, heads, _, dim = q_shape
    kv_heads = kv_shape[1]
    if heads != kv_heads * groups:
        return False
    mask_shape = _shape(mask) if mask is not None else None
    if mask is not None and (mask_shape is None or len(mask_shape) != 4 or mask_shape[1] not in (1, heads) or not all(_static(s) for s in (mask_shape[0], mask_shape[3]))):
        return False
    with graph.inserting_before(sdpa):
        rows = _call(graph, aten.reshape.default, query, [batch, kv_heads, -1, dim])
        if mask is not None:
            if mask_shape[1] == 1:
                stacked = _call(graph, aten.expand.default, _call(graph, aten.unsqueeze.default, mask, 2), [-1, -1, groups, -1, -1])
                mask = _call(graph, aten.reshape.default, stacked, [mask_shape[0], 1, -1, mask_shape[3]])
            else:
                mask = _call(graph, aten.reshape.default, mask, [mask_shape[0], kv_heads, -1, mask_shape[3]])
        args = (rows, k[0], v[0], mask, *rest[1:]) if rest else (rows, k[0], v[0])
        kwargs = dict(sdpa.kwargs)
        if not rest and "attn_mask" in kwargs:
            kwargs["attn_mask"] = mask
        grouped = _call(graph, _SDPA, *args, **kwargs)
        out = _call(graph, aten.reshape.default, grouped, [batch, heads, -1, dim])
    sdpa.replace_all_uses_with(out)
    graph.erase_node(sdpa)
    return True


def _call(graph: torch.fx.Graph, target: Any, *args: Any, **kwargs: Any) -> Any:
    """A new node of ``graph`` with its fake value computed (the importer types values by it)."""
    node = graph.call_function(target, args, kwargs)
    values = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
    fake = next(v for v in torch.utils._pytree.tree_leaves(values) if isinstance(v, torch.Tensor)).fake_mode
    with fake:
        node.meta["val"] = target(*values[0], **values[1])
    return node
