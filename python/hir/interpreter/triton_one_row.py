"""The one-row product of a decode step on the CUDA cores (Triton;
:mod:`hir.interpreter.decode_kernels` and :mod:`hir.interpreter.decode_fusions` decide when it
runs).

:func:`one_row_linear`: ``x @ w.T`` for a single row on the CUDA cores (what
:func:`hir.interpreter.triton_small_m.small_m_linear` runs with ``gemv``: at one row,
tensor-core tiles of 16 rows and the weight's staging in shared memory cost more than the
loads), autotuned per (N, K) and neighbours as the tiled products are, with the neighbours
:mod:`hir.interpreter.decode_fusions` fuses into it:

- ``norm_weight``: ``x`` first RMS-normalized (Llama's ``RMSNorm``): each program reads the
  whole row anyway, so it sums its squares in the same pass and multiplies each element by the
  norm's weight as it loads it; the row's ``1 / rms``, a factor of every product, scales the
  sums at the end. The normalized row is never written, nor read twice;
- ``w_up``: the MLP's gated product ``silu(x @ w.T) * (x @ w_up.T)``, each program a strip of
  both weights' rows;
- ``residual``: ``residual + x @ w.T`` added as the strip is stored.

Each rounds where the torch ops it stands for round (each product's output before the SiLU,
the product before the residual), except the normalized row, kept in float32 where RMSNorm
rounds it twice to ``x``'s dtype (before and after the weight), and the gated product's SiLU
and product, in float32 and rounded once (as inductor's fused elementwise kernel computes
them, where eager torch rounds the SiLU first): within bf16's tolerance of the ops, not equal
to them bit for bit.
"""

import math

import torch

# triton comes with CUDA builds of torch; where it is not installed (CPU machines) pyright cannot resolve it
import triton  # pyright: ignore[reportMissingImports]
import triton.language as tl  # pyright: ignore[reportMissingImports]
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # pyright: ignore[reportMissingImports]

from hir.interpreter.triton_decode import autotune_bench, launch_tuned


def _gemv_configs() -> list:
    looped = [
        triton.Config({"BLOCK_N": bn, "BLOCK_K": bk, "UNROLL": False}, num_warps=w, num_stages=st)
        for bn, tiles in (
            (1, ((1024, 4), (2048, 4), (2048, 8))),
            (2, ((512, 2), (1024, 4), (2048, 8))),
            (4, ((512, 4), (1024, 4), (1024, 8))),
            (8, ((256, 2), (512, 4))),
        )
        for bk, w in tiles
        for st in (1, 3)
    ]
    # the K loop unrolled: every load of the strip is issued before its products need it
    unrolled = [
        triton.Config({"BLOCK_N": bn, "BLOCK_K": bk, "UNROLL": True}, num_warps=w, num_stages=1)
        for bn, bk, w in ((1, 1024, 4), (2, 1024, 4), (2, 2048, 8), (4, 1024, 4), (16, 512, 8))
    ]
    return looped + unrolled


@triton.jit
def _gemv_weights(W, Wup, cols, col_ok, k0, K, swn, GATED: tl.constexpr, BLOCK_K: tl.constexpr):
    """The strip's ``BLOCK_K`` columns of ``W`` (and ``Wup``) from ``k0``."""
    ks = k0 + tl.arange(0, BLOCK_K)
    offsets = cols[:, None] * swn + ks[None, :]
    w_mask = col_ok[:, None] & (ks < K)[None, :]
    w = tl.load(W + offsets, mask=w_mask, other=0.0)
    up = w
    if GATED:
        up = tl.load(Wup + offsets, mask=w_mask, other=0.0)
    return w, up


@triton.jit
def _gemv_add(
    X, NormW, w, up, acc, acc_up, squares, k0, K, NORM: tl.constexpr, GATED: tl.constexpr, BLOCK_K: tl.constexpr
):
    """``acc`` (``acc_up``) plus the products of the row's ``BLOCK_K`` elements from ``k0`` with
    the strip's columns ``w`` (``up``); ``squares`` plus their squares."""
    ks = k0 + tl.arange(0, BLOCK_K)
    k_ok = ks < K
    x = tl.load(X + ks, mask=k_ok, other=0.0).to(tl.float32)
    if NORM:  # the row's 1/rms is a factor of every product: applied once, after the loop
        squares += x * x
        x = x * tl.load(NormW + ks, mask=k_ok, other=0.0).to(tl.float32)
    acc += w.to(tl.float32) * x[None, :]
    if GATED:
        acc_up += up.to(tl.float32) * x[None, :]
    return acc, acc_up, squares


@triton.jit
def _gemv(
    X,
    NormW,
    W,
    Wup,
    R,
    Y,
    N,
    K: tl.constexpr,
    swn,
    eps,
    NORM: tl.constexpr,
    GATED: tl.constexpr,
    RESIDUAL: tl.constexpr,
    PDL: tl.constexpr,
    WEIGHT_FIRST: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UNROLL: tl.constexpr,
):
    """``Y = X @ W.T`` for one row ``X`` (with its neighbours: :func:`one_row_linear`): each
    program a strip of ``BLOCK_N`` of ``W``'s rows, the products summed per lane in float32 and
    reduced once at the end. ``PDL``: launched as a programmatic dependent, waiting for the
    kernel before it before reading its inputs; ``WEIGHT_FIRST``: but for the strip's first
    ``BLOCK_K`` columns, loaded before that wait (``W`` and ``Wup`` must not be written by any
    kernel that may still run). ``UNROLL``: the loop over ``K`` (a constant) unrolled, so its
    loads may all be issued before the first products need them."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    dtype = Y.dtype.element_ty
    squares = tl.zeros([BLOCK_K], tl.float32)
    acc = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    acc_up = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    k_start = 0
    if PDL:
        if WEIGHT_FIRST:  # streams while the kernel before drains
            w, up = _gemv_weights(W, Wup, cols, col_ok, 0, K, swn, GATED, BLOCK_K)
        gdc_wait()
        gdc_launch_dependents()
        if WEIGHT_FIRST:
            acc, acc_up, squares = _gemv_add(X, NormW, w, up, acc, acc_up, squares, 0, K, NORM, GATED, BLOCK_K)
            k_start = BLOCK_K
    if UNROLL:
        for block in tl.static_range((K + BLOCK_K - 1) // BLOCK_K):
            if block > 0 or not (PDL and WEIGHT_FIRST):
                w, up = _gemv_weights(W, Wup, cols, col_ok, block * BLOCK_K, K, swn, GATED, BLOCK_K)
                acc, acc_up, squares = _gemv_add(
                    X, NormW, w, up, acc, acc_up, squares, block * BLOCK_K, K, NORM, GATED, BLOCK_K
                )
    else:
        for k0 in range(k_start, K, BLOCK_K):
            w, up = _gemv_weights(W, Wup, cols, col_ok, k0, K, swn, GATED, BLOCK_K)
            acc, acc_up, squares = _gemv_add(X, NormW, w, up, acc, acc_up, squares, k0, K, NORM, GATED, BLOCK_K)
    rstd = 1.0
    if NORM:
        rstd = tl.rsqrt(tl.sum(squares, axis=0) / K + eps)
    y = (tl.sum(acc, axis=1) * rstd).to(dtype).to(tl.float32)
    if GATED:
        up = (tl.sum(acc_up, axis=1) * rstd).to(dtype).to(tl.float32)
        y = y * tl.sigmoid(y) * up
    if RESIDUAL:
        y = y + tl.load(R + cols, mask=col_ok, other=0.0).to(tl.float32)
    tl.store(Y + cols, y.to(dtype), mask=col_ok)


_GEMV = triton.autotune(
    configs=_gemv_configs(), key=["N", "K", "NORM", "GATED", "RESIDUAL"], do_bench=autotune_bench, cache_results=True
)(_gemv)


def one_row_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    norm_weight: torch.Tensor | None = None,
    eps: float = 0.0,
    w_up: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,
    pdl: bool = False,
    weight_first: bool = False,
) -> torch.Tensor:
    """``x @ weight.T`` for one row ``x`` (``[..., K]``, one row in all, its last dim of stride
    1) and a ``weight`` ``[N, K]`` of stride 1 along K (``w_up`` of its shape and strides) on the
    CUDA cores, with the neighbours the module docstring lists; ``residual`` is contiguous with
    the result's ``N`` elements. Returns a contiguous ``[..., N]`` in ``x``'s dtype.

    ``pdl`` (Hopper or newer): launched as a programmatic dependent of the kernel before it
    (which may still be running when this one starts), waiting for it before reading its inputs;
    with ``weight_first``, the weights' first columns are read before that wait, so the caller
    promises no kernel that may still run writes them."""
    lead = x.shape[:-1]
    n, k = weight.shape
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    launch_tuned(
        _GEMV,
        lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),),
        x,
        norm_weight if norm_weight is not None else x,
        weight,
        w_up if w_up is not None else weight,
        residual if residual is not None else out,
        out,
        n,
        k,
        weight.stride(0),
        eps,
        NORM=norm_weight is not None,
        GATED=w_up is not None,
        RESIDUAL=residual is not None,
        PDL=pdl,
        WEIGHT_FIRST=pdl and weight_first,
        launch_pdl=pdl,
    )
    return out.view(*lead, n)


def runs_one_row(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``x @ weight.T`` suits :func:`one_row_linear`: one row in all, unit strides
    along K (asked by the ``hir::small_m_linear*_gemv`` ops and by
    :func:`hir.interpreter.triton_small_m.small_m_linear` with ``gemv``)."""
    return math.prod(x.shape[:-1]) == 1 and x.stride(-1) == 1 and weight.stride(1) == 1
