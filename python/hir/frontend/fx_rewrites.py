"""Rewrites of the exported FX graph before it is imported.

:func:`fuse_projections`: one GEMM for the projections that read the same input (q, k, v).

:func:`fuse_swiglu`: an MLP's gated product ``silu(linear(x, Wg)) * linear(x, Wu)`` as one op,
``hir::swiglu`` (:mod:`hir.interpreter.decode_ops`), whose small-M kernel streams both
weights in one launch with the SiLU and product in its epilogue.

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
the new sizes are written with ``-1`` there. The stacked mask is made once per mask and
group count and shared by every layer's attention (HF computes one mask for all layers), and
not at all when the mask has one query row (a decode step's ``[B, 1, 1, L]`` broadcasts over
the stacked rows as it is).

:func:`forward_copies`: a functional ``copy`` that only moves a value into a fresh tensor of
the same layout is that value.
"""

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.node import map_arg
from torch.utils._pytree import tree_leaves

from hir.interpreter import decode_ops

log = logging.getLogger("hir.import")

aten = torch.ops.aten
_SDPA = aten.scaled_dot_product_attention.default
_LINEAR = aten.linear.default
_SILU = aten.silu.default
_MUL = aten.mul.Tensor
FUSED_MIN = 3  # fuse_projections: linears per group (attention's q, k, v; see its docstring)


def group_query_heads(graph: torch.fx.Graph) -> int:
    """Rewrite every exact match in ``graph`` (see the module docstring); the count."""
    count = 0
    masks: dict = {}  # (mask node, groups) -> its stacked rows, shared by the layers
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _SDPA:
            with rollback(graph, "group_query_heads"):
                count += _rewrite(graph, node, masks)
    if count:
        graph.eliminate_dead_code()
    return count


def _repeated(node: Any) -> tuple[Any, int] | None:
    """(the KV tensor, its repeat count ``G``) when ``node`` is ``repeat_kv`` of it."""
    if node.op != "call_function" or node.target not in (
        aten.reshape.default,
        aten._unsafe_view.default,
        aten.view.default,
    ):
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
    shape = fake_shape(source)
    if shape is None or len(shape) != 4 or len(sizes) != 5 or not isinstance(sizes[2], int) or sizes[2] < 2:
        return None
    return source, sizes[2]


def fake_shape(node: Any) -> tuple | None:
    """The shape of ``node``'s fake value; None where it has no tensor value."""
    value = node.meta.get("val") if hasattr(node, "meta") else None
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _static(size: Any) -> bool:
    return isinstance(size, int)


def _rewrite(graph: torch.fx.Graph, sdpa: Any, masks: dict) -> bool:
    query, key, value, *rest = sdpa.args
    mask = rest[0] if rest else sdpa.kwargs.get("attn_mask")
    is_causal = rest[2] if len(rest) > 2 else sdpa.kwargs.get("is_causal", False)
    if is_causal or sdpa.kwargs.get("enable_gqa", False):
        return False
    k, v = _repeated(key), _repeated(value)
    if k is None or v is None or k[1] != v[1]:
        return False
    groups = k[1]
    q_shape, kv_shape = fake_shape(query), fake_shape(k[0])
    if (
        q_shape is None
        or kv_shape is None
        or len(q_shape) != 4
        or not all(_static(s) for s in (q_shape[0], q_shape[1], q_shape[3], kv_shape[1]))
    ):
        return False
    batch, heads, _, dim = q_shape
    kv_heads = kv_shape[1]
    if heads != kv_heads * groups:
        return False
    mask_shape = fake_shape(mask) if mask is not None else None
    if mask is not None and (
        mask_shape is None
        or len(mask_shape) != 4
        or mask_shape[1] not in (1, heads)
        or not all(_static(s) for s in (mask_shape[0], mask_shape[3]))
    ):
        return False
    with graph.inserting_before(sdpa):
        rows = new_node(graph, aten.reshape.default, query, [batch, kv_heads, -1, dim])
        key, made = (mask, groups), None
        if mask_shape is not None and mask_shape[1] == 1 and isinstance(mask_shape[2], int) and mask_shape[2] == 1:
            pass  # one row: it broadcasts over the stacked rows (a decode step's mask)
        elif key in masks:
            mask = masks[key]  # an earlier layer's stacked rows (made before it, in graph order)
        elif mask_shape is not None:  # (there is a mask: its shape was read above)
            if mask_shape[1] == 1:
                stacked = new_node(
                    graph,
                    aten.expand.default,
                    new_node(graph, aten.unsqueeze.default, mask, 2),
                    [-1, -1, groups, -1, -1],
                )
                mask = made = new_node(graph, aten.reshape.default, stacked, [mask_shape[0], 1, -1, mask_shape[3]])
            else:
                mask = made = new_node(graph, aten.reshape.default, mask, [mask_shape[0], kv_heads, -1, mask_shape[3]])
        args = (rows, k[0], v[0], mask, *rest[1:]) if rest else (rows, k[0], v[0])
        kwargs = dict(sdpa.kwargs)
        if not rest and "attn_mask" in kwargs:
            kwargs["attn_mask"] = mask
        grouped = new_node(graph, _SDPA, *args, meta=_attention_value, **kwargs)
        out = new_node(graph, aten.reshape.default, grouped, [batch, heads, -1, dim])
    if made is not None:  # (only once the rewrite stands: a rolled-back one erases it)
        masks[key] = made
    sdpa.replace_all_uses_with(out)
    graph.erase_node(sdpa)
    return True


def forward_copies(graph: torch.fx.Graph) -> int:
    """Replace each functional ``copy(dst, src)`` (how export writes ``dst.copy_(src)``) whose
    ``src`` already has ``dst``'s static shape, strides, dtype and device, and whose result
    is not a graph output, by ``src``: the copy's result is a fresh tensor holding exactly
    ``src``'s values in ``dst``'s layout, which ``src`` is. Why: run as it is, the copy is a
    clone of ``dst`` and two copies (HF's static cache writes each layer's length this way,
    ``cumulative_length.copy_(cache_position[0])``: 32 copies a step for 16 layers, where HF
    eager makes 16). A copy into state that is then written anyway (its ``add_``) needs no
    materialized intermediate; a copy that *is* the state's new value (an output) stays.
    Returns the number replaced."""
    count = 0
    for node in list(graph.nodes):
        if (
            node.op != "call_function"
            or node.target is not aten.copy.default
            or any(u.op == "output" for u in node.users)
        ):
            continue
        dst, src = (n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in node.args[:2])
        if not isinstance(dst, torch.Tensor) or not isinstance(src, torch.Tensor):
            continue
        layouts = [(tuple(t.shape), tuple(t.stride()), t.dtype, t.device) for t in (dst, src)]
        if layouts[0] != layouts[1] or not all(isinstance(x, int) for x in (*dst.shape, *dst.stride())):
            continue
        node.replace_all_uses_with(node.args[1])
        graph.erase_node(node)
        count += 1
    return count


def drop_metadata_checks(graph: torch.fx.Graph) -> int:
    """Erase the training graph's ``_assert_tensor_metadata`` checks (an operand's dtype,
    device and layout at trace time, one per ``.to()``), which the two-step export keeps
    (``export.functional_export``'s fallback): the imported program's types carry the dtype,
    and device and layout are the interpreter's to choose (a program exported on the CPU
    runs on a GPU). Run, each is a host call per step that HF eager does not make. Returns
    the number erased."""
    checks = [
        n
        for n in graph.nodes
        if n.op == "call_function" and n.target is aten._assert_tensor_metadata.default and not n.users
    ]
    for node in checks:
        graph.erase_node(node)
    return len(checks)


def new_node(graph: torch.fx.Graph, target: Any, *args: Any, meta: Any = None, **kwargs: Any) -> Any:
    """A new node of ``graph`` with its fake value computed (the importer types values by
    it): ``target`` run on the operands' fake values, or ``meta`` of them when given."""
    node = graph.call_function(target, args, kwargs)
    values = map_arg((args, kwargs), lambda n: n.meta["val"])
    fake = next(v for v in tree_leaves(values) if isinstance(v, FakeTensor)).fake_mode
    with fake:
        node.meta["val"] = (meta or target)(*values[0], **values[1])
    return node


def _attention_value(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *rest: Any, **kwargs: Any
) -> torch.Tensor:
    """SDPA's result shape, ``[..., query rows, value dim]``, without running SDPA on the
    fake tensors: on CUDA its backend choice checks alignments of the sizes (``rows % 8``),
    which would specialise a dynamic token count to the example's (the program then
    refuses every other prompt length)."""
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def fuse_projections(graph: torch.fx.Graph, parameters: set) -> int:
    """Fuse each group of at least :data:`FUSED_MIN` ``linear`` s that read the same input,
    with weights (and biases, all or none) among the placeholders ``parameters`` of one dtype,
    into one ``linear`` on their weights concatenated by rows, sliced back per projection::

        q = linear(x, Wq); k = linear(x, Wk); v = linear(x, Wv)
          == y = linear(x, cat([Wq, Wk, Wv])); q, k, v = y[..., :nq], y[..., nq:nq+nk], y[..., nq+nk:]

    Why: at decode, k and v (grouped-query attention: a quarter of q's rows) are GEMVs too
    small to fill the GPU, each a launch of its own; one GEMM of the three reads the same
    bytes at the bandwidth of the largest (the 1B Llama: ~10 us less per layer). The
    concatenation reads parameters only, so ``hir-hoist-parameter-work`` runs it once per
    set of weights (:mod:`hir.interpreter.ops.once`): the program keeps the fused weights
    besides the model's (q, k, v: about a tenth of a Llama's weights). Pairs (an MLP's
    gate and up projections) are left alone: their GEMMs are large already and the copy
    would cost most of the MLP's weight memory. The cats go first in the graph, where only
    placeholders precede them, so they form a kernel segment of their own that the hoist
    pass can move; the fused GEMM takes the first projection's place. Returns the number of
    groups fused."""
    groups: dict = {}
    for node in graph.nodes:
        if node.op == "call_function" and node.target is _LINEAR and projection(node, parameters):
            groups.setdefault(node.args[0], []).append(node)
    first = next((n for n in graph.nodes if n.op != "placeholder"), None)
    count = 0
    for x, linears in groups.items():
        biased = {len(n.args) > 2 and n.args[2] is not None for n in linears}
        dtypes = {n.args[1].meta["val"].dtype for n in linears}
        if len(linears) < FUSED_MIN or len(biased) != 1 or len(dtypes) != 1 or first is None:
            continue
        with rollback(graph, "fuse_projections"):
            with graph.inserting_before(first):
                weight = new_node(graph, aten.cat.default, [n.args[1] for n in linears], 0)
                bias = new_node(graph, aten.cat.default, [n.args[2] for n in linears], 0) if biased.pop() else None
            with graph.inserting_before(min(linears, key=_position(graph))):
                fused = new_node(graph, _LINEAR, x, weight, *([bias] if bias is not None else []), meta=linear_value)
            parts, start = [], 0
            for n in linears:
                rows = n.args[1].meta["val"].shape[0]
                with graph.inserting_after(parts[-1] if parts else fused):
                    parts.append(new_node(graph, aten.slice.Tensor, fused, -1, start, start + rows))
                start += rows
            for n, part in zip(linears, parts):
                n.replace_all_uses_with(part)
                graph.erase_node(n)
            count += 1
    return count


def fuse_swiglu(graph: torch.fx.Graph, parameters: set) -> int:
    """Replace each ``mul(silu(linear(x, Wg)), linear(x, Wu))`` (either operand order) of
    bias-free linears of one input whose weights are placeholders among ``parameters``, of one
    shape, and whose ``silu`` and linears feed only it, by ``hir::swiglu(x, Wg, Wu)``::

        g = linear(x, Wg); a = silu(g); u = linear(x, Wu); y = mul(a, u)
          == y = hir::swiglu(x, Wg, Wu)

    Why: at decode both products are GEMVs over the MLP's largest weights, then an elementwise
    kernel; ``hir::swiglu``'s small-M kernel streams both weights in one launch and writes
    ``y`` (half the bytes of the two products), with no copy of the weights concatenated.
    Elsewhere the op is its four torch ops (a compiled region's trace sees them). Returns the
    number replaced."""
    count = 0
    for node in list(graph.nodes):
        if not (only_use(node, _MUL, None) and len(node.args) == 2):
            continue
        silu, up = node.args
        if not only_use(silu, _SILU, node):
            silu, up = up, silu
        if not (only_use(silu, _SILU, node) and only_use(up, _LINEAR, node)):
            continue
        gate = silu.args[0]
        if not (only_use(gate, _LINEAR, silu) and gate.args[0] is up.args[0]):
            continue
        if not all(len(n.args) == 2 and projection(n, parameters) for n in (gate, up)):
            continue
        if fake_shape(gate.args[1]) != fake_shape(up.args[1]):
            continue
        with rollback(graph, "fuse_swiglu"), graph.inserting_before(node):
            fused = new_node(graph, decode_ops.SWIGLU, gate.args[0], gate.args[1], up.args[1], meta=_swiglu_value)
            node.replace_all_uses_with(fused)
            for dead in (node, silu, gate, up):
                graph.erase_node(dead)
            count += 1
    return count


def only_use(node: Any, target: Any, user: Any) -> bool:
    """Whether ``node`` is a ``target`` call on nodes, without keywords, used by ``user`` only
    (``user`` None: by anything)."""
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target is target
        and all(isinstance(a, torch.fx.Node) for a in node.args)
        and not node.kwargs
        and (user is None or set(node.users) == {user})
    )


@contextlib.contextmanager
def rollback(graph: torch.fx.Graph, what: str) -> Iterator[None]:
    """Undo a rewrite whose new nodes' fake values could not be computed (it then leaves the
    graph as it was, with a warning: a missed optimisation, not a failed import). The
    rewrites replace uses only after every new node exists."""
    before = set(graph.nodes)
    try:
        yield
    except Exception as err:  # noqa: BLE001 - any fake-kernel failure: keep the original graph
        for node in reversed([n for n in graph.nodes if n not in before]):
            graph.erase_node(node)
        log.warning("%s: rewrite skipped: %s: %s", what, type(err).__name__, err)


def linear_value(x: torch.Tensor, weight: torch.Tensor, *bias: torch.Tensor) -> torch.Tensor:
    """``linear``'s result shape without running it on the fake tensors (on CUDA, linear on
    a dynamic token count calls ``numel()``, which symbolic sizes refuse)."""
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _swiglu_value(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``hir::swiglu``'s result shape (as :func:`linear_value`'s, for the same reason)."""
    return linear_value(x, w_gate)


def projection(node: Any, parameters: set) -> bool:
    """Whether ``linear`` node ``node`` projects by a 2-D weight (and bias, if any) among the
    placeholders ``parameters``, without keywords."""
    weight = node.args[1]
    bias = node.args[2] if len(node.args) > 2 else None
    return (
        weight.op == "placeholder"
        and weight.name in parameters
        and not node.kwargs
        and (bias is None or (bias.op == "placeholder" and bias.name in parameters))
        and len(fake_shape(weight) or ()) == 2
    )


def _position(graph: torch.fx.Graph) -> Any:
    order = {n: i for i, n in enumerate(graph.nodes)}
    return lambda n: order[n]
