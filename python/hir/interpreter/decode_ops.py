"""The torch ops of the decode kernels (:mod:`hir.interpreter.decode_kernels` decides at plan
time where a program runs them; ``torch.library`` custom ops, so a compiled region's inductor
graph calls them as it calls aten's, and a CUDA graph captures their launches).

- ``hir::attention`` / ``hir::attention_fused``: ``aten.scaled_dot_product_attention`` (same
  schema) through the split-KV kernel (:func:`hir.interpreter.triton_decode.split_kv_attention`;
  ``_fused``: its combine in the same launch);
- ``hir::small_m_linear`` with the suffixes ``_splitk`` / ``_gemv``: ``x @ weight.T`` through
  the small-M kernel (:mod:`hir.interpreter.triton_small_m`; ``_splitk``: its autotuner may
  also cut K; ``_gemv``: one row on the CUDA cores, :mod:`hir.interpreter.triton_one_row`);
- ``hir::swiglu``: an MLP's gated product ``silu(x @ w_gate.T) * (x @ w_up.T)`` as its four
  torch ops (what the import writes for that pattern), and ``hir::swiglu_small_m``: the same
  through the small-M kernel, both weights streamed by one launch.

On CUDA they wait for the kernels tuned ahead (:mod:`hir.interpreter.decode_tuning`) and, in
a capture, launch as programmatic dependents (:mod:`hir.interpreter.dependent_launch`).
Called on other inputs (CPU, other dtypes or shapes, a tensor reaching past the kernels'
int32 offsets: :func:`int32_offsets`) they run torch's own kernels.
"""

import math

import torch
import torch.nn.functional as F

from hir.interpreter import decode_tuning, dependent_launch

MAX_ROWS = 16  # rows of a product's input, query rows of an attention head
HEAD_DIMS = (16, 32, 64, 128, 256)
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
OFFSET_LIMIT = 2**31  # the kernels' element offsets are int32: a tensor they read spans fewer elements


def int32_offsets(*tensors: torch.Tensor) -> bool:
    """Whether every element of each of ``tensors`` lies fewer than :data:`OFFSET_LIMIT`
    elements from its first (where the kernels' int32 offsets reach; a larger tensor runs
    torch's kernel)."""
    return all(
        sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) < OFFSET_LIMIT for t in tensors
    )


def _attention_variant(name: str, fused_combine: bool):
    """Registers ``hir::name``: ``aten.scaled_dot_product_attention`` (contiguous), through the
    split-KV kernel (``fused_combine``: its combine in the same launch) where the inputs fit it."""

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
    CUDA (``split_k``, ``gemv``: the module docstring)."""

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
ATTENTION = {fused: _attention_variant("attention" + "_fused" * fused, fused) for fused in (False, True)}
SMALL_M_LINEAR = {
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
SWIGLU_SMALL_M = torch.ops.hir.swiglu_small_m.default
