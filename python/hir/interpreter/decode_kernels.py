"""Kernels for decode-shaped work on CUDA, chosen at plan time from the op's static shapes.

A decode step reads every weight once and the used part of its KV cache once; its matrix
products have a few rows (batch x new tokens) and its attention a few query rows over a long
static cache. Two torch ops (``torch.library`` custom ops, so a compiled region's inductor
graph calls them as it calls aten's, and a CUDA graph captures their launches) run those
shapes with Triton kernels (:mod:`hir.interpreter.triton_decode`):

- ``hir::attention`` stands in for ``aten.scaled_dot_product_attention`` (same schema) where
  the query has at most :data:`MAX_ROWS` rows per head, the keys at least :data:`MIN_CACHE`
  positions, the mask is boolean, no dropout, no ``is_causal``, one key head per query head (the
  grouped import stacks a KV head's query heads as rows) and a bf16/f16 head dim of 16..256
  (a power of two). Its kernel reads keys and values only up to the last position the mask
  lets a row see (the cache's used part, found on the device), where SDPA's kernels read the
  whole cache.
- ``hir::small_m_linear`` stands in for ``hir.linear`` without a bias where the input has at
  most :data:`MAX_ROWS` rows in all (bf16/f16): one pass over the weight, no split-K.
- ``hir::swiglu_small_m`` stands in for ``hir::swiglu`` (an MLP's gated product
  ``silu(x @ w_gate.T) * (x @ w_up.T)``, which the import makes of that pattern:
  :func:`hir.frontend.fx_rewrites.fuse_swiglu`; elsewhere it is its four torch ops, which a
  compiled region compiles as before) where ``x`` has at most :data:`MAX_ROWS` rows: both
  weights streamed by one launch, the SiLU and product in its epilogue.

How they run (each a mechanism of its own, :data:`MECHANISMS`):

- ``fused-combine``: the attention in one launch (its chunk programs combine their partial
  softmaxes themselves, the last of a (batch, head) to finish), not a chunk and a combine kernel;
- ``split-k``: the product's autotuner may also cut K into parts (more programs in flight on a
  small weight; the last part of a strip to finish adds them up, so still one launch);
- ``gemv``: a product of one row runs on the CUDA cores, each lane summing its products in
  float32 (:mod:`hir.interpreter.triton_one_row`), not through tensor-core tiles of 16 rows
  that stage the weight in shared memory (the gated product keeps its tiles: there the two
  measured the same);
- ``norm-residual``: the import writes a one-row product with the RMSNorm before it or the
  residual add after it as one op, which runs the one-row kernel with the norm in its
  prologue or the add in its epilogue (:mod:`hir.interpreter.decode_fusions`): no elementwise
  launch between the products;
- ``kernel-pdl``: in the CUDA graph hir captures of a program planned with a decode kernel, the
  attention (with ``fused-combine``) and the one-row products launch as programmatic
  dependents (Hopper's launch of a kernel while the one before it drains), the products
  loading the first columns of their weight before they wait where it is an argument of the
  program that it never writes (:mod:`hir.interpreter.dependent_launch`). (Prefetching the
  whole weight strip into the L2 before the wait instead measured slower: it cost the large
  products more than the overlap gained.)
- ``inductor-pdl``: such a program compiles its regions with inductor's programmatic
  dependent launch (``triton.enable_pdl``, where this torch has it), so the elementwise
  kernels around the products overlap their neighbours.
- ``inductor-combo``: and with inductor's combo kernels (``combo_kernels``), so the
  independent elementwise kernels between two products (a Llama layer's RoPE of q and of k,
  its two cache writes, the cache's length count) launch as one kernel.
- ``tune-ahead``: the kernels a program plans are compiled (and the product's tiles timed) in
  a child process while the program's regions compile, so their first call loads them from
  Triton's cache (:mod:`hir.interpreter.decode_tuning`).

Each variant is an op of its own (``hir::attention``, ``hir::attention_fused``,
``hir::small_m_linear`` with the suffixes ``_splitk`` / ``_gemv``, ``hir::swiglu_small_m``), the flags
fixed when the program is planned. Elsewhere (CPU, no Triton, other shapes) the ops are
not used; called directly on other inputs (a tensor reaching past the kernels' int32
offsets among them: :func:`int32_offsets`) they run torch's own kernels. ``HIR_DECODE_KERNELS``
(read when a program is planned) picks what is used: a comma-separated subset of
:data:`KERNELS` + :data:`MECHANISMS` (default: all), or ``none``.
"""

import importlib.util
import math
import os
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F

from hir.dialect.context import HirError
from hir.interpreter import decode_tuning, dependent_launch

KERNELS = ("attention", "linear", "swiglu")
MECHANISMS = tuple("fused-combine split-k gemv norm-residual kernel-pdl inductor-pdl inductor-combo tune-ahead".split())
ENV = "HIR_DECODE_KERNELS"
MAX_ROWS = 16  # rows of a product's input, query rows of an attention head
MIN_CACHE = 128  # key positions from which the split-KV kernel is used
HEAD_DIMS = (16, 32, 64, 128, 256)
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
OFFSET_LIMIT = 2**31  # the kernels' element offsets are int32: a tensor they read spans fewer elements
_VTENSOR = re.compile(r"vtensor<\[([^\]]*)\],(\w+)>")


def enabled(kernel: str) -> bool:
    """Whether ``kernel`` (one of :data:`KERNELS` or :data:`MECHANISMS`) is used, by
    ``HIR_DECODE_KERNELS``."""
    value = os.environ.get(ENV)
    if value is None:
        return True
    chosen = {part.strip() for part in value.split(",") if part.strip()}
    unknown = chosen - set(KERNELS) - set(MECHANISMS) - {"none"}
    if unknown:
        raise HirError(
            f"error: {ENV}={value!r}: unknown kernel(s) {', '.join(sorted(unknown))}; "
            f"expected a comma-separated subset of {','.join(KERNELS + MECHANISMS)}, or none"
        )
    return kernel in chosen


def int32_offsets(*tensors: torch.Tensor) -> bool:
    """Whether every element of each of ``tensors`` lies fewer than :data:`OFFSET_LIMIT`
    elements from its first (where the kernels' int32 offsets reach; a larger tensor runs
    torch's kernel)."""
    return all(
        sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) < OFFSET_LIMIT for t in tensors
    )


def available(device: torch.device) -> bool:
    """Whether the kernels can run on ``device``: CUDA, with Triton installed."""
    return device.type == "cuda" and torch.cuda.is_available() and importlib.util.find_spec("triton") is not None


def tensor_type(type_text: str) -> tuple[list, str] | None:
    """(shape, element type) of a ``!torch.vtensor`` type's text; None for another type or a
    dynamic size."""
    found = _VTENSOR.search(type_text)
    if found is None or "?" in found.group(1):
        return None
    return [int(d) for d in found.group(1).split(",") if d], found.group(2)


def attention_fits(types: list[str], constants: list) -> bool:
    """Whether an ``aten.scaled_dot_product_attention`` with operand types ``types`` (text)
    and plan-time ``constants`` (UNSET-like for run-time values) suits ``hir::attention``."""
    shapes = [tensor_type(t) for t in types[:4]]
    known = [s for s in shapes if s is not None]
    if len(known) < len(shapes):
        return False
    (q, q_type), (k, k_type), (v, v_type), (mask, mask_type) = known
    if len(q) != 4 or len(k) != 4 or len(v) != 4 or len(mask) != 4 or mask_type != "i1":
        return False
    if not (q_type == k_type == v_type and q_type in DTYPES and q[1] == k[1] == v[1] and k[2] == v[2]):
        return False
    if q[3] != k[3] or v[3] != q[3] or q[3] not in HEAD_DIMS or q[2] > MAX_ROWS or k[2] < MIN_CACHE:
        return False
    dropout, is_causal, _, enable_gqa = constants[4:8]
    return dropout == 0.0 and is_causal is False and enable_gqa is False


def swiglu_fits(types: list[str]) -> bool:
    """Whether a ``hir::swiglu`` with operand types ``types`` (text) suits
    ``hir::swiglu_small_m``: static shapes, at most :data:`MAX_ROWS` rows, two 2-D weights of
    one shape and the input's width, bf16/f16."""
    shapes = [tensor_type(t) for t in types[:3]]
    if len(shapes) != 3 or any(s is None for s in shapes):
        return False
    (x, x_type), (gate, gate_type), (up, up_type) = [s for s in shapes if s is not None]
    rows = math.prod(x[:-1]) if len(x) >= 2 else 0
    return (
        gate == up
        and len(gate) == 2
        and gate[1] == x[-1]
        and x_type == gate_type == up_type
        and x_type in DTYPES
        and 0 < rows <= MAX_ROWS
        and min(gate) > 0
    )


def substitute(overload, types: Callable[[], list[str]], constants: Callable[[], list], device: torch.device):
    """The op a kernel segment runs for torch op ``overload`` with operand types ``types()``
    (text) and plan-time ``constants()`` on ``device``: ``hir::attention`` or
    ``hir::swiglu_small_m`` where it fits (module docstring), else ``overload`` (the operands
    are looked at for SDPA and ``hir::swiglu`` only)."""
    if overload is SWIGLU:
        operand_types = types()
        if enabled("swiglu") and available(device) and swiglu_fits(operand_types):
            _tune_ahead_swiglu(operand_types, device)
            return _SWIGLU_SMALL_M
        return overload
    if overload is not torch.ops.aten.scaled_dot_product_attention.default or not (
        enabled("attention") and available(device)
    ):
        return overload
    operand_types = types()
    if len(operand_types) == 8 and attention_fits(operand_types, constants()):
        fused = enabled("fused-combine")
        _tune_ahead_attention(operand_types, fused, device)
        return _ATTENTION[fused]
    return overload


def small_m_linear_op():
    """The ``hir::small_m_linear`` variant ``HIR_DECODE_KERNELS`` picks (split-K, one-row GEMV)."""
    return _SMALL_M_LINEAR[enabled("split-k"), enabled("gemv")]


def tune_ahead_linear(x_shape: tuple, dtype: torch.dtype, w_shape: tuple, device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::small_m_linear`` of an input ``x_shape``
    (``dtype``) and a weight ``w_shape`` on ``device`` tuned ahead (module docstring)."""
    if tune_ahead(device):
        rows, (n, k) = math.prod(x_shape[:-1]), w_shape
        decode_tuning.request(decode_tuning.linear_key(dtype, rows, n, k, enabled("split-k"), enabled("gemv"), device))


def _tune_ahead_attention(operand_types: list[str], fused: bool, device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::attention`` of SDPA operands typed
    ``operand_types`` tuned ahead (module docstring)."""
    q, k, _, mask = [tensor_type(t) for t in operand_types[:4]]
    if tune_ahead(device) and q is not None and k is not None and mask is not None:
        key = decode_tuning.attention_key(DTYPES[q[1]], tuple(q[0]), tuple(k[0]), tuple(mask[0]), fused, device)
        decode_tuning.request(key)


def _tune_ahead_swiglu(operand_types: list[str], device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::swiglu_small_m`` of operands typed
    ``operand_types`` tuned ahead (module docstring)."""
    x, gate = tensor_type(operand_types[0]), tensor_type(operand_types[1])
    if tune_ahead(device) and x is not None and gate is not None:
        (n, k), rows = gate[0], math.prod(x[0][:-1])
        decode_tuning.request(decode_tuning.swiglu_key(DTYPES[x[1]], rows, n, k, device))


def start_tuning(device: torch.device, dtype: torch.dtype) -> None:
    """With ``tune-ahead``, where a model of ``dtype`` on ``device`` may plan decode kernels:
    the tuning child started now, ahead of the plan (:func:`decode_tuning.start`)."""
    if dtype in DTYPES.values() and tune_ahead(device) and available(device):
        decode_tuning.start(device)


def tune_ahead(device: torch.device) -> bool:
    """Whether the decode kernels planned for ``device`` are tuned ahead (``tune-ahead``, a
    CUDA device here)."""
    return enabled("tune-ahead") and device.type == "cuda" and torch.cuda.is_available()


def is_decode_kernel(overload) -> bool:
    """Whether ``overload`` is one of the decode kernels' ops."""
    return overload in _ATTENTION.values() or overload in _SMALL_M_LINEAR.values() or overload is _SWIGLU_SMALL_M


def planned(runtime) -> None:
    """Notes on ``runtime`` (a :class:`hir.interpreter.runtime.Runtime`) that its program
    plans a decode kernel: its regions compile with inductor's PDL (``inductor-pdl``) and combo
    kernels (``inductor-combo``), and its captured graphs launch the decode kernels as
    programmatic dependents (``kernel-pdl``)."""
    runtime.kernel_compile.pdl |= inductor_pdl(runtime.device)
    runtime.kernel_compile.combo |= enabled("inductor-combo") and available(runtime.device)
    runtime.dependent_launches |= runtime.device.type == "cuda" and enabled("kernel-pdl")


def inductor_pdl(device: torch.device) -> bool:
    """Whether a program with decode kernels on ``device`` compiles its regions with inductor's
    programmatic dependent launch (``inductor-pdl``; a torch whose inductor has it, Hopper or
    newer)."""
    if not (device.type == "cuda" and enabled("inductor-pdl") and available(device)):
        return False
    import torch._inductor.config as inductor_config  # inductor loads only when kernels compile (seconds to import)

    return hasattr(inductor_config.triton, "enable_pdl") and torch.cuda.get_device_capability(device)[0] >= 9


def linear_fits(
    x_shape: tuple, x_dtype: torch.dtype, w_shape: tuple, w_contiguous: bool, bias: bool, device: torch.device
) -> bool:
    """Whether ``hir.linear`` of an input ``x_shape`` (``x_dtype``) and weight ``w_shape``
    suits ``hir::small_m_linear`` on ``device``."""
    if (
        bias
        or len(x_shape) < 2
        or len(w_shape) != 2
        or not w_contiguous
        or x_dtype not in (torch.bfloat16, torch.float16)
    ):
        return False
    rows = 1
    for size in x_shape[:-1]:
        rows *= size
    return 0 < rows <= MAX_ROWS and min(w_shape) > 0 and enabled("linear") and available(device)


def _attention_variant(name: str, fused_combine: bool):
    """Registers ``hir::name``: ``aten.scaled_dot_product_attention`` (contiguous), through the
    split-KV kernel (``fused_combine``: module docstring) where the inputs fit it."""

    @torch.library.custom_op(f"hir::{name}", mutates_args=())
    def attention(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        *,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> torch.Tensor:
        if (
            query.is_cuda
            and attn_mask is not None
            and attn_mask.dtype == torch.bool
            and dropout_p == 0.0
            and not is_causal
            and not enable_gqa
            and query.dtype in (torch.bfloat16, torch.float16)
            and key.shape[1] == query.shape[1]
            and query.shape[-1] in HEAD_DIMS
            and int32_offsets(query, key, value, attn_mask)
        ):
            from hir.interpreter.triton_decode import (
                split_kv_attention,  # triton loads only when a CUDA decode kernel runs
            )

            softmax_scale = scale if scale is not None else query.shape[-1] ** -0.5
            if decode_tuning.waiting():
                shapes = (tuple(query.shape), tuple(key.shape), tuple(attn_mask.shape))
                decode_tuning.wait(decode_tuning.attention_key(query.dtype, *shapes, fused_combine, query.device))
            pdl = fused_combine and dependent_launch.launch(query.device)[0]
            return split_kv_attention(query, key, value, attn_mask, softmax_scale, fused_combine, pdl)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
        )
        return out.contiguous()

    @attention.register_fake
    def _fake(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
        return query.new_empty(*query.shape[:-1], value.shape[-1])

    return getattr(torch.ops.hir, name).default


def _small_m_linear_variant(name: str, split_k: bool, gemv: bool):
    """Registers ``hir::name``: ``x @ weight.T`` (contiguous), through the small-M kernel on
    CUDA (``split_k``, ``gemv``: module docstring)."""

    @torch.library.custom_op(f"hir::{name}", mutates_args=())
    def small_m_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if (
            x.is_cuda
            and x.dtype in (torch.bfloat16, torch.float16)
            and x.dtype == weight.dtype
            and x[..., 0].numel() <= MAX_ROWS
            and int32_offsets(x, weight)
        ):
            from hir.interpreter import triton_one_row, triton_small_m  # triton loads only when a CUDA kernel runs

            if decode_tuning.waiting():
                rows, (n, k) = math.prod(x.shape[:-1]), weight.shape
                decode_tuning.wait(decode_tuning.linear_key(x.dtype, rows, n, k, split_k, gemv, x.device))
            if gemv and triton_one_row.runs_one_row(x, weight):
                pdl, first = dependent_launch.launch(x.device, weight)
                return triton_one_row.one_row_linear(x, weight, pdl=pdl, weight_first=first)
            return triton_small_m.small_m_linear(x, weight, split_k)
        return F.linear(x, weight).contiguous()

    @small_m_linear.register_fake
    def _fake(x, weight):
        return x.new_empty(*x.shape[:-1], weight.shape[0])

    return getattr(torch.ops.hir, name).default


# fused-combine -> op; (split-k, gemv) -> op
_ATTENTION = {fused: _attention_variant("attention" + "_fused" * fused, fused) for fused in (False, True)}
_SMALL_M_LINEAR = {
    (split, gemv): _small_m_linear_variant("small_m_linear" + "_splitk" * split + "_gemv" * gemv, split, gemv)
    for split in (False, True)
    for gemv in (False, True)
}


@torch.library.custom_op("hir::swiglu_small_m", mutates_args=())
def _swiglu_small_m(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``hir::swiglu`` (contiguous), through the small-M kernel on CUDA where it fits."""
    if (
        x.is_cuda
        and x.dtype in (torch.bfloat16, torch.float16)
        and x.dtype == w_gate.dtype == w_up.dtype
        and w_gate.shape == w_up.shape
        and w_gate.stride() == w_up.stride()
        and x[..., 0].numel() <= MAX_ROWS
        and int32_offsets(x, w_gate, w_up)
    ):
        from hir.interpreter.triton_small_m import swiglu_small_m  # triton loads only when a CUDA decode kernel runs

        if decode_tuning.waiting():
            rows, (n, k) = math.prod(x.shape[:-1]), w_gate.shape
            decode_tuning.wait(decode_tuning.swiglu_key(x.dtype, rows, n, k, x.device))
        return swiglu_small_m(x, w_gate, w_up)
    return _swiglu(x, w_gate, w_up).contiguous()


@_swiglu_small_m.register_fake
def _swiglu_small_m_fake(x, w_gate, w_up):
    return x.new_empty(*x.shape[:-1], w_gate.shape[0])


# hir::swiglu, what the import writes for an MLP's silu(linear(x, w_gate)) * linear(x, w_up): its
# four torch ops (CompositeImplicitAutograd, so a region's trace sees them and inductor compiles
# them as it did before the import made one op of them)
_LIBRARY = torch.library.Library("hir", "FRAGMENT")
_LIBRARY.define("swiglu(Tensor x, Tensor w_gate, Tensor w_up) -> Tensor")


@torch.library.impl(_LIBRARY, "swiglu", "CompositeImplicitAutograd")
def _swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return F.silu(F.linear(x, w_gate)) * F.linear(x, w_up)


SWIGLU = torch.ops.hir.swiglu.default
_SWIGLU_SMALL_M = torch.ops.hir.swiglu_small_m.default
