"""Triton kernels of a decode step (imported only where Triton is; :mod:`hir.interpreter.decode_kernels`
decides when they run, :mod:`hir.interpreter.decode_ops` registers them as torch ops).

- :func:`split_kv_attention`: attention of a few query rows over a long key/value cache,
  reading only the positions up to the last one the boolean mask lets a row see (flash-decoding:
  the cache's used part cut into ``splits`` chunks, one program per (batch, head, chunk), then
  one program per (batch, head) combining the chunks' partial softmaxes; with ``fused_combine``
  the chunk programs of a (batch, head) count their arrivals on a counter and the last one
  combines, one launch instead of two). How far the cache is used is read from the mask on the
  device, so the launch is the same at every position: a CUDA graph captured at one step
  replays right at the next.
- the small-M products are in :mod:`hir.interpreter.triton_small_m` and
  :mod:`hir.interpreter.triton_one_row`, which share :func:`arrival_counters`,
  :func:`autotune_bench` and :func:`launch_tuned`.
"""

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import torch

# triton comes with CUDA builds of torch; where it is not installed (CPU machines) pyright cannot resolve it
import triton  # pyright: ignore[reportMissingImports]
import triton.language as tl  # pyright: ignore[reportMissingImports]
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # pyright: ignore[reportMissingImports]

LOG2E = 1.4426950408889634


@triton.jit
def _attention_chunk(
    Q,
    K,
    V,
    Mask,
    PartO,
    PartM,
    PartL,
    Arrived,
    Out,
    scale_log2,
    sqb,
    sqh,
    sqm,
    sqd,
    skb,
    skh,
    skn,
    skd,
    svb,
    svh,
    svn,
    svd,
    smb,
    smh,
    smm,
    smn,
    sob,
    soh,
    som,
    sod,
    H,
    M,
    L,
    SPLITS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    D: tl.constexpr,
    SCAN: tl.constexpr,
    FUSED: tl.constexpr,
    PDL: tl.constexpr,
):
    if PDL:  # a programmatic dependent: everything it reads may be the kernel before's output
        gdc_wait()
        gdc_launch_dependents()
    split = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows = tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    row_ok = rows < M
    mask_base = Mask + b * smb + h * smh
    # the used part of the cache: up to the last position any row may see (the M rows only, not
    # the dot's padding to BLOCK_M)
    scanned = tl.arange(0, ROWS)
    end = tl.full([], 0, tl.int32)
    for start in range(0, L, SCAN):
        cols = start + tl.arange(0, SCAN)
        seen = tl.load(
            mask_base + scanned[:, None] * smm + cols[None, :] * smn,
            mask=(scanned < M)[:, None] & (cols[None, :] < L),
            other=0,
        )
        end = tl.maximum(end, tl.max(tl.max(tl.where(seen != 0, cols[None, :] + 1, 0), 1), 0))
    blocks = tl.cdiv(end, BLOCK_N)
    chunk = tl.cdiv(blocks, SPLITS) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, end)
    q = tl.load(Q + b * sqb + h * sqh + rows[:, None] * sqm + dims[None, :] * sqd, mask=row_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    k_base = K + b * skb + h * skh
    v_base = V + b * svb + h * svh
    for start in range(lo, hi, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < hi
        k = tl.load(k_base + cols[:, None] * skn + dims[None, :] * skd, mask=col_ok[:, None], other=0.0)
        v = tl.load(v_base + cols[:, None] * svn + dims[None, :] * svd, mask=col_ok[:, None], other=0.0)
        seen = tl.load(
            mask_base + rows[:, None] * smm + cols[None, :] * smn, mask=row_ok[:, None] & col_ok[None, :], other=0
        )
        s = tl.dot(q, tl.trans(k)) * scale_log2
        s = tl.where(seen != 0, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    part = bh * SPLITS + split
    tl.store(PartO + (part * BLOCK_M + rows[:, None]) * D + dims[None, :], acc)
    tl.store(PartM + part * BLOCK_M + rows, m_i)
    tl.store(PartL + part * BLOCK_M + rows, l_i)
    if FUSED:
        # every thread's partial stored before the (one-thread) release of the arrival
        tl.debug_barrier()
        if tl.atomic_add(Arrived + bh, 1, sem="acq_rel") == SPLITS - 1:
            _combine(PartO, PartM, PartL, Out, bh, sob, soh, som, sod, H, M, SPLITS, BLOCK_M, ROWS, D)
            # zero again for the next call: no ordering needed, the kernel's end orders it
            tl.atomic_xchg(Arrived + bh, 0, sem="relaxed")


@triton.jit
def _combine(
    PartO,
    PartM,
    PartL,
    Out,
    bh,
    sob,
    soh,
    som,
    sod,
    H,
    M,
    SPLITS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    ROWS: tl.constexpr,
    D: tl.constexpr,
):
    """Out[b, h] from the (batch, head)'s ``SPLITS`` partial softmaxes (read from the L2: other
    programs wrote them): the M rows' parts of ``GROUP`` chunks loaded at once, so the L2's
    latency is paid once a group, not once a chunk."""
    GROUP: tl.constexpr = _combine_group(SPLITS, ROWS, D)
    b = bh // H
    h = bh % H
    rows = tl.arange(0, ROWS)
    dims = tl.arange(0, D)
    group = tl.arange(0, GROUP)
    m = tl.full([ROWS], float("-inf"), tl.float32)
    l_sum = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, D], tl.float32)
    for first in tl.static_range(0, SPLITS, GROUP):
        parts = (bh * SPLITS + first + group[:, None]) * BLOCK_M + rows[None, :]  # [GROUP, ROWS]
        ms = tl.load(PartM + parts, cache_modifier=".cg")
        ls = tl.load(PartL + parts, cache_modifier=".cg")
        outs = tl.load(PartO + parts[:, :, None] * D + dims[None, None, :], cache_modifier=".cg")
        m_new = tl.maximum(m, tl.max(ms, 0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m - m_safe)
        w = tl.exp2(ms - m_safe[None, :])  # [GROUP, ROWS]
        l_sum = l_sum * alpha + tl.sum(w * ls, 0)
        acc = acc * alpha[:, None] + tl.sum(w[:, :, None] * outs, 0)
        m = m_new
    out = acc / l_sum[:, None]
    tl.store(
        Out + b * sob + h * soh + rows[:, None] * som + dims[None, :] * sod,
        out.to(Out.dtype.element_ty),
        mask=(rows < M)[:, None],
    )


@triton.constexpr_function  # pyright: ignore[reportAttributeAccessIssue]
def _combine_group(splits, rows, dim):
    """Chunks whose parts :func:`_combine` loads at once: all of them where their float32
    elements fit 8192 (64 registers a thread at 4 warps), else the most that do (powers of two)."""
    group = splits
    while group > 1 and group * rows * dim > 8192:
        group //= 2
    return group


@triton.jit
def _attention_combine(
    PartO,
    PartM,
    PartL,
    Out,
    sob,
    soh,
    som,
    sod,
    H,
    M,
    SPLITS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    ROWS: tl.constexpr,
    D: tl.constexpr,
):
    _combine(PartO, PartM, PartL, Out, tl.program_id(0), sob, soh, som, sod, H, M, SPLITS, BLOCK_M, ROWS, D)


def attention_splits(batch_heads: int, length: int, block_n: int, processors: int) -> int:
    """Chunks per (batch, head): about two programs per multiprocessor in all, a power of two,
    no more than the cache has blocks."""
    most = min(max(1, (2 * processors) // max(batch_heads, 1)), triton.cdiv(length, block_n), 64)
    return 1 << (most.bit_length() - 1)


def autotune_bench(kernel_call, quantiles):
    """A candidate's time for the decode kernels' autotuners: Triton's ``do_bench`` (the L2 emptied before each
    run) over 5 ms of warm-up and 25 ms of runs, not 25 and 100: a run is 6-40 us and the L2's
    emptying ~0.1 ms, so still ~250 runs a candidate."""
    return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)


_POOL = threading.local()  # .pool: the threads compiling candidates on this thread's behalf


@contextmanager
def candidates_compiled_in_threads(threads: int) -> Iterator[None]:
    """While the kernels are tuned ahead (:mod:`hir.interpreter.decode_tuning`'s child): an
    autotuned kernel launched by :func:`launch_tuned` first compiles all its candidate tiles at
    once, in ``threads`` threads (Triton's compiler and ``ptxas`` run outside the GIL), where
    the autotuner would compile each one just before timing it: tens of compiles of a few
    tenths of a second each."""
    with ThreadPoolExecutor(max(threads, 1), thread_name_prefix="hir-triton-compile") as pool:
        _POOL.pool = pool
        try:
            yield
        finally:
            _POOL.pool = None


def launch_tuned(kernel, grid, *args, **kwargs) -> None:
    """``kernel[grid](*args, **kwargs)`` for a ``triton.autotune`` kernel; within
    :func:`candidates_compiled_in_threads`, its candidates compiled first (in-memory or on-disk
    copies cost a lookup; one that fails to compile is left to the autotuner, which compiles it
    again and times it as failed)."""
    pool = getattr(_POOL, "pool", None)
    if pool is not None:
        with triton.AsyncCompileMode(pool, ignore_errors=True):
            kernel.warmup(*args, grid=grid, **kwargs)
    kernel[grid](*args, **kwargs)


_ARRIVALS: dict = {}  # (device, stream) -> zeroed int32 counters (every kernel that uses them leaves them zero)


def arrival_counters(device: torch.device, count: int) -> torch.Tensor:
    """At least ``count`` zeroed counters for the kernels launched on ``device``'s current
    stream: kernels of one stream run one after another, so they may share counters; two
    streams (a stream loop's iterations, a graph's forked streams) never do. Made during a
    capture, their zeroing is captured too (a memset the graph replays before its kernels).
    Replaced buffers stay alive: a captured graph holds their address."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    buffers = _ARRIVALS.setdefault((device, stream), [])
    if not buffers or buffers[-1].numel() < count:
        buffers.append(torch.zeros(max(count, 4096), device=device, dtype=torch.int32))
    return buffers[-1]


def split_kv_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    fused_combine: bool = False,
    pdl: bool = False,
) -> torch.Tensor:
    """``softmax(q k^T * scale, where mask) v`` for ``query`` ``[B, H, M, D]``, ``key`` /
    ``value`` ``[B, H, L, D]`` and a boolean ``mask`` broadcastable to ``[B, H, M, L]``; the
    result is contiguous ``[B, H, M, D]`` in ``query``'s dtype. ``fused_combine``: one launch
    (module docstring). ``pdl`` (Hopper or newer): launched as a programmatic dependent of the
    kernel before it, waiting for it before reading anything (with ``fused_combine`` only)."""
    batch, heads, rows, dim = query.shape
    pdl = pdl and fused_combine
    length = key.shape[2]
    mask = mask.expand(batch, heads, rows, length)
    query_rows = triton.next_power_of_2(rows)  # the combine's and the scan's rows
    block_m = max(16, query_rows)  # tl.dot's least
    block_n = 64 if dim <= 64 else 32
    processors = torch.cuda.get_device_properties(query.device).multi_processor_count if query.is_cuda else 132
    splits = attention_splits(batch * heads, length, block_n, processors)
    part_o = torch.empty(batch * heads * splits * block_m * dim, device=query.device, dtype=torch.float32)
    part_m = torch.empty(batch * heads * splits * block_m, device=query.device, dtype=torch.float32)
    part_l = torch.empty_like(part_m)
    out = torch.empty(batch, heads, rows, dim, device=query.device, dtype=query.dtype)
    arrived = arrival_counters(query.device, batch * heads) if fused_combine else None
    # a triton.jit kernel on its grid (to pyright a bare function where triton is not installed)
    _attention_chunk[(splits, batch * heads)](  # pyright: ignore[reportIndexIssue]
        query,
        key,
        value,
        mask,
        part_o,
        part_m,
        part_l,
        arrived if fused_combine else part_m,
        out,
        scale * LOG2E,
        *query.stride(),
        *key.stride(),
        *value.stride(),
        *mask.stride(),
        *out.stride(),
        heads,
        rows,
        length,
        SPLITS=splits,
        BLOCK_M=block_m,
        ROWS=query_rows,
        BLOCK_N=block_n,
        D=dim,
        SCAN=min(1024, triton.next_power_of_2(length)),
        FUSED=fused_combine,
        PDL=pdl,
        num_warps=4,
        num_stages=2,
        launch_pdl=pdl,
    )
    if not fused_combine:
        # a triton.jit kernel on its grid (to pyright a bare function where triton is not installed)
        _attention_combine[(batch * heads,)](  # pyright: ignore[reportIndexIssue]
            part_o,
            part_m,
            part_l,
            out,
            *out.stride(),
            heads,
            rows,
            SPLITS=splits,
            BLOCK_M=block_m,
            ROWS=query_rows,
            D=dim,
            num_warps=4,
        )
    return out
