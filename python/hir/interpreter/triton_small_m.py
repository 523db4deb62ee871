"""The small-M products of a decode step (Triton; :mod:`hir.interpreter.decode_kernels` decides
when they run).

:func:`small_m_linear`: ``x @ w.T`` for a few rows of ``x`` (M <= 16): a GEMV-shaped product
that streams ``w`` once, each program a strip of ``w``'s rows over the whole of K (with
``split_k``, over a part of K, the strip's last part to finish adding the parts up: still one
launch), tiles picked by Triton's autotuner per (M, N, K), its timings kept in Triton's on-disk
cache (``cache_results``: a later process, or :mod:`hir.interpreter.decode_tuning`'s child
tuning ahead of the first call, leaves them there for the caller to load).

:func:`swiglu_small_m`: an MLP's gated product ``silu(x @ w_gate.T) * (x @ w_up.T)`` the same
way, each program a strip of both weights' rows: one launch streams the two weights (at the
bandwidth of a product of their combined size, without a copy of them concatenated) and
writes the activation the down projection reads, with no elementwise kernel between.

:func:`one_row_linear`: ``x @ w.T`` for a single row on the CUDA cores (what
:func:`small_m_linear` runs with ``gemv``: at one row, tensor-core tiles of 16 rows and the
weight's staging in shared memory cost more than the loads), autotuned the same way, with the
neighbours :mod:`hir.interpreter.decode_fusions` fuses into it:

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

from hir.interpreter.triton_decode import arrival_counters


def _linear_configs(split_k: tuple, with_split: bool = True) -> list:
    return [
        triton.Config(
            {"BLOCK_N": bn, "BLOCK_K": bk} | ({"SPLIT_K": sk} if with_split else {}), num_warps=w, num_stages=st
        )
        for bn, bk, w, st, sk in [
            (16, 256, 4, 4, 1),
            (16, 512, 4, 3, 1),
            (32, 256, 4, 4, 1),
            (32, 128, 4, 5, 1),
            (64, 128, 4, 4, 1),
            (64, 256, 8, 3, 1),
            (16, 256, 4, 4, 2),
            (16, 256, 4, 4, 4),
            (16, 128, 4, 4, 4),
            (32, 256, 4, 4, 2),
            (32, 128, 4, 4, 4),
        ]
        if sk in split_k
    ]


MAX_SPLIT_K = 4


@triton.jit
def _small_m_linear(
    X,
    W,
    Y,
    Work,
    Arrived,
    M,
    N,
    K,
    sxm,
    sxk,
    swn,
    swk,
    sym,
    syn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < N
    # split-K: program (pid, s) sums K's s-th part; the last of a strip's SPLIT_K to arrive adds them up
    k_part = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K) * BLOCK_K
    k_lo = tl.program_id(1) * k_part
    k_hi = tl.minimum(k_lo + k_part, K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < k_hi
        x = tl.load(X + rows[:, None] * sxm + ks[None, :] * sxk, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w = tl.load(W + cols[:, None] * swn + ks[None, :] * swk, mask=col_ok[:, None] & k_ok[None, :], other=0.0)
        acc += tl.dot(x, tl.trans(w))
    out_mask = row_ok[:, None] & col_ok[None, :]
    if SPLIT_K == 1:
        tl.store(Y + rows[:, None] * sym + cols[None, :] * syn, acc.to(Y.dtype.element_ty), mask=out_mask)
    else:
        part = Work + rows[:, None] * N + cols[None, :]
        tl.store(part + tl.program_id(1) * BLOCK_M * N, acc, mask=out_mask)
        tl.debug_barrier()  # every thread's part stored before the (one-thread) release of the arrival
        if tl.atomic_add(Arrived + pid, 1, sem="acq_rel") == SPLIT_K - 1:
            total = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            for s in range(SPLIT_K):
                total += tl.load(part + s * BLOCK_M * N, mask=out_mask, other=0.0, cache_modifier=".cg")
            tl.store(Y + rows[:, None] * sym + cols[None, :] * syn, total.to(Y.dtype.element_ty), mask=out_mask)
            tl.atomic_xchg(Arrived + pid, 0)  # zero again for the next call


def _bench(kernel_call, quantiles):
    """A candidate's time for the autotuner: Triton's ``do_bench`` (the L2 emptied before each
    run) over 5 ms of warm-up and 25 ms of runs, not 25 and 100: a run is 6-40 us and the L2's
    emptying ~0.1 ms, so still ~250 runs a candidate."""
    return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)


# the product autotuned per (M, N, K) among whole-K tiles, or among those and split-K ones
_LINEAR = {
    split: triton.autotune(
        configs=_linear_configs((1, 2, 4) if split else (1,)),
        key=["M", "N", "K"],
        do_bench=_bench,
        cache_results=True,
    )(_small_m_linear)
    for split in (False, True)
}


def _gemv_configs() -> list:
    return [
        triton.Config({"BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=st)
        for bn, tiles in (
            (1, ((1024, 4), (2048, 4), (2048, 8))),
            (2, ((512, 2), (1024, 4), (2048, 8))),
            (4, ((512, 4), (1024, 4), (1024, 8))),
            (8, ((256, 2), (512, 4))),
        )
        for bk, w in tiles
        for st in (1, 3)
    ]


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
    K,
    swn,
    eps,
    NORM: tl.constexpr,
    GATED: tl.constexpr,
    RESIDUAL: tl.constexpr,
    PDL: tl.constexpr,
    WEIGHT_FIRST: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """``Y = X @ W.T`` for one row ``X`` (with its neighbours: :func:`one_row_linear`): each
    program a strip of ``BLOCK_N`` of ``W``'s rows, the products summed per lane in float32 and
    reduced once at the end. ``PDL``: launched as a programmatic dependent, waiting for the
    kernel before it before reading its inputs; ``WEIGHT_FIRST``: but for the strip's first
    ``BLOCK_K`` columns, loaded before that wait (``W`` and ``Wup`` must not be written by any
    kernel that may still run)."""
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
    configs=_gemv_configs(), key=["N", "K", "NORM", "GATED", "RESIDUAL"], do_bench=_bench, cache_results=True
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
    _GEMV[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](
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
    """Whether :func:`small_m_linear` with ``gemv`` runs ``x @ weight.T`` on the one-row kernel."""
    return math.prod(x.shape[:-1]) == 1 and x.stride(-1) == 1 and weight.stride(1) == 1


def small_m_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    split_k: bool = False,
    gemv: bool = False,
    pdl: bool = False,
    weight_first: bool = False,
) -> torch.Tensor:
    """``x @ weight.T`` for ``x`` ``[..., K]`` with at most 16 rows in all and ``weight``
    ``[N, K]``; contiguous ``[..., N]`` in ``x``'s dtype. ``split_k``: the
    autotuner may also cut K into 2 or 4 parts (more programs in flight on a small weight),
    the last part of a strip to finish adding them up (one launch). ``gemv``: one row runs on
    the CUDA cores (:func:`one_row_linear`, with ``pdl`` and ``weight_first``; the tiled
    kernel ignores them)."""
    lead = x.shape[:-1]
    rows = math.prod(lead)
    if gemv and runs_one_row(x, weight):
        return one_row_linear(x, weight, pdl=pdl, weight_first=weight_first)
    x2 = x.reshape(rows, x.shape[-1])
    n, k = weight.shape
    out = torch.empty(rows, n, device=x.device, dtype=x.dtype)
    arrived = arrival_counters(x.device, n) if split_k else None
    work = torch.empty(MAX_SPLIT_K * 16 * n if split_k else 1, device=x.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), meta["SPLIT_K"])  # noqa: E731
    _LINEAR[split_k][grid](
        x2,
        weight,
        out,
        work,
        arrived if split_k else work,
        rows,
        n,
        k,
        *x2.stride(),
        *weight.stride(),
        *out.stride(),
        BLOCK_M=16,
    )
    return out.view(*lead, n)


@triton.jit
def _swiglu_small_m(
    X,
    Wg,
    Wu,
    Y,
    M,
    N,
    K,
    sxm,
    sxk,
    swn,
    swk,
    sym,
    syn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < N
    gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        x = tl.load(X + rows[:, None] * sxm + ks[None, :] * sxk, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w_mask = col_ok[:, None] & k_ok[None, :]
        offsets = cols[:, None] * swn + ks[None, :] * swk
        gate += tl.dot(x, tl.trans(tl.load(Wg + offsets, mask=w_mask, other=0.0)))
        up += tl.dot(x, tl.trans(tl.load(Wu + offsets, mask=w_mask, other=0.0)))
    # rounded as the products' outputs were before (each a tensor of the input's dtype); the
    # SiLU and product in float32, rounded once, as inductor's fused elementwise kernel does
    gate = gate.to(Y.dtype.element_ty).to(tl.float32)
    up = up.to(Y.dtype.element_ty).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    tl.store(
        Y + rows[:, None] * sym + cols[None, :] * syn,
        out.to(Y.dtype.element_ty),
        mask=row_ok[:, None] & col_ok[None, :],
    )


_SWIGLU = triton.autotune(
    configs=_linear_configs((1,), with_split=False), key=["M", "N", "K"], do_bench=_bench, cache_results=True
)(_swiglu_small_m)


def swiglu_small_m(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x @ w_gate.T) * (x @ w_up.T)`` for ``x`` ``[..., K]`` with at most 16 rows in all
    and two weights ``[N, K]`` of one layout; contiguous ``[..., N]`` in ``x``'s dtype."""
    lead = x.shape[:-1]
    rows = math.prod(lead)
    x2 = x.reshape(rows, x.shape[-1])
    n, k = w_gate.shape
    out = torch.empty(rows, n, device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    _SWIGLU[grid](x2, w_gate, w_up, out, rows, n, k, *x2.stride(), *w_gate.stride(), *out.stride(), BLOCK_M=16)
    return out.view(*lead, n)
