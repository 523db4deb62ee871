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

:func:`small_m_linear` with ``gemv`` runs a single row on the CUDA cores
(:func:`hir.interpreter.triton_one_row.one_row_linear`).
"""

import math

import torch

# triton comes with CUDA builds of torch; where it is not installed (CPU machines) pyright cannot resolve it
import triton  # pyright: ignore[reportMissingImports]
import triton.language as tl  # pyright: ignore[reportMissingImports]

from hir.interpreter.triton_decode import arrival_counters, autotune_bench, launch_tuned
from hir.interpreter.triton_one_row import one_row_linear, runs_one_row


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


# the product autotuned per (M, N, K) among whole-K tiles, or among those and split-K ones
_LINEAR = {
    split: triton.autotune(
        configs=_linear_configs((1, 2, 4) if split else (1,)),
        key=["M", "N", "K"],
        do_bench=autotune_bench,
        cache_results=True,
    )(_small_m_linear)
    for split in (False, True)
}


def small_m_linear(x: torch.Tensor, weight: torch.Tensor, split_k: bool = False, gemv: bool = False) -> torch.Tensor:
    """``x @ weight.T`` for ``x`` ``[..., K]`` with at most 16 rows in all and ``weight``
    ``[N, K]``; contiguous ``[..., N]`` in ``x``'s dtype. ``split_k``: the
    autotuner may also cut K into 2 or 4 parts (more programs in flight on a small weight),
    the last part of a strip to finish adding them up (one launch). ``gemv``: one row runs on
    the CUDA cores (:func:`hir.interpreter.triton_one_row.one_row_linear`)."""
    lead = x.shape[:-1]
    rows = math.prod(lead)
    if gemv and runs_one_row(x, weight):
        return one_row_linear(x, weight)
    x2 = x.reshape(rows, x.shape[-1])
    n, k = weight.shape
    out = torch.empty(rows, n, device=x.device, dtype=x.dtype)
    arrived = arrival_counters(x.device, n) if split_k else None
    work = torch.empty(MAX_SPLIT_K * 16 * n if split_k else 1, device=x.device, dtype=torch.float32)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), meta["SPLIT_K"])  # noqa: E731
    launch_tuned(
        _LINEAR[split_k],
        grid,
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
    configs=_linear_configs((1,), with_split=False), key=["M", "N", "K"], do_bench=autotune_bench, cache_results=True
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
    strides = (*x2.stride(), *w_gate.stride(), *out.stride())
    launch_tuned(_SWIGLU, grid, x2, w_gate, w_up, out, rows, n, k, *strides, BLOCK_M=16)
    return out.view(*lead, n)
