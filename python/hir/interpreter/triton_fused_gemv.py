"""One-row products with their neighbours in the same launch (Triton; :mod:`hir.interpreter.
decode_fusions` decides when they run).

:func:`gemv_fused`: ``x @ w.T`` for one row ``x`` on the CUDA cores, as
:func:`hir.interpreter.triton_small_m.small_m_linear`'s one-row kernel, with

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
Tiles are autotuned per (N, K, variant) like the plain one-row kernel, its timings in Triton's
on-disk cache.
"""

import torch

# triton comes with CUDA builds of torch; where it is not installed (CPU machines) pyright cannot resolve it
import triton  # pyright: ignore[reportMissingImports]
import triton.language as tl  # pyright: ignore[reportMissingImports]

from hir.interpreter.triton_small_m import autotune_bench, gemv_configs


@triton.jit
def _gemv_fused(
    X,
    NormW,
    W,
    Wup,
    R,
    Y,
    N,
    K,
    swn,
    eps,
    NORM: tl.constexpr,
    GATED: tl.constexpr,
    RESIDUAL: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    dtype = Y.dtype.element_ty
    squares = tl.zeros([BLOCK_K], tl.float32)
    acc = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    acc_up = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        x = tl.load(X + ks, mask=k_ok, other=0.0).to(tl.float32)
        if NORM:  # the row's 1/rms is a factor of every product: applied once, after the loop
            squares += x * x
            x = x * tl.load(NormW + ks, mask=k_ok, other=0.0).to(tl.float32)
        offsets = cols[:, None] * swn + ks[None, :]
        w_mask = col_ok[:, None] & k_ok[None, :]
        acc += tl.load(W + offsets, mask=w_mask, other=0.0).to(tl.float32) * x[None, :]
        if GATED:
            acc_up += tl.load(Wup + offsets, mask=w_mask, other=0.0).to(tl.float32) * x[None, :]
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


_FUSED = triton.autotune(
    configs=gemv_configs(), key=["N", "K", "NORM", "GATED", "RESIDUAL"], do_bench=autotune_bench, cache_results=True
)(_gemv_fused)


def gemv_fused(
    x: torch.Tensor,
    weight: torch.Tensor,
    norm_weight: torch.Tensor | None = None,
    eps: float = 0.0,
    w_up: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,
) -> torch.Tensor:
    """``x @ weight.T`` for one contiguous row ``x`` (``[..., K]``, one row in all) and a
    row-major ``weight`` ``[N, K]`` (``w_up`` of its shape and strides), with the neighbours the
    module docstring lists; ``residual`` is contiguous with the result's ``N`` elements.
    Returns a contiguous ``[..., N]`` in ``x``'s dtype."""
    lead = x.shape[:-1]
    n, k = weight.shape
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    _FUSED[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](
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
    )
    return out.view(*lead, n)
