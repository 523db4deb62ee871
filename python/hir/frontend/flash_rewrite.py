"""An exported graph's flash attention (forward and backward) as ``torch.ops.hir`` ops the FX
importer can import (:mod:`hir.interpreter.flash_attention` says why ATen's cannot be)."""

import operator
from typing import Any

import torch

import hir.interpreter.flash_attention  # noqa: F401 - registers torch.ops.hir.flash_attention*
from hir.frontend.fx_rewrites import new_node

aten = torch.ops.aten
_FORWARD = aten._scaled_dot_product_flash_attention.default
_BACKWARD = aten._scaled_dot_product_flash_attention_backward.default
# the backward's arguments a forward result may feed: out, logsumexp, cum_seq_q, cum_seq_k,
# max_q, max_k (4 to 9), philox seed and offset (12, 13)
_FROM_FORWARD = {0: (4,), 1: (5,), 2: (6,), 3: (7,), 4: (8,), 5: (9,), 6: (12,), 7: (13,)}


def _argument(node: Any, index: int, name: str, default: Any) -> Any:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def flash_attention_ops(graph: torch.fx.Graph) -> int:
    """Replace each dropout-free ``_scaled_dot_product_flash_attention`` whose results feed
    only their getitems and, through them, ``_scaled_dot_product_flash_attention_backward``
    nodes of the same settings, with ``hir.flash_attention`` and
    ``hir.flash_attention_backward``; returns how many forwards were replaced. Any other
    use leaves the pair as it was."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _FORWARD:
            continue
        query, key, value = node.args[:3]
        causal, scale = _argument(node, 4, "is_causal", False), node.kwargs.get("scale")
        if _argument(node, 3, "dropout_p", 0.0) != 0.0 or _argument(node, 5, "return_debug_mask", False):
            continue
        items = list(node.users)
        if any(u.target is not operator.getitem for u in items):
            continue
        backwards = {b for u in items for b in u.users if b.target is _BACKWARD}
        if not all(_feeds_only(u, backwards) for u in items):
            continue
        if any(
            _argument(b, 10, "dropout_p", 0.0) != 0.0
            or _argument(b, 11, "is_causal", False) != causal
            or b.kwargs.get("scale") != scale
            for b in backwards
        ):
            continue
        with graph.inserting_before(node):
            fused = new_node(graph, torch.ops.hir.flash_attention.default, query, key, value, causal, scale=scale)
        for backward in backwards:
            with graph.inserting_before(backward):
                grads = new_node(
                    graph, torch.ops.hir.flash_attention_backward.default, *backward.args[:6], causal, scale=scale
                )
            for user in list(backward.users):
                user.args = (grads, user.args[1])
            graph.erase_node(backward)
        for user in items:
            if user.args[1] in (0, 1):
                user.args = (fused, user.args[1])
            else:
                graph.erase_node(user)
        graph.erase_node(node)
        count += 1
    return count


def _feeds_only(item: Any, backwards: set) -> bool:
    """Whether getitem ``item`` (result ``index`` of the forward) is read only where the
    backward takes that result (the output and logsumexp may also be read elsewhere)."""
    index = item.args[1]
    if index in (0, 1):
        return all(u not in backwards or all(u.args[i] is item for i in _FROM_FORWARD[index]) for u in item.users)
    return all(u in backwards for u in item.users)
