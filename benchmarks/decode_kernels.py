"""The decode step's kernels alone (``hir.interpreter.decode_kernels``) against what runs
without them, on the ~1B Llama's shapes (one GPU):

    python benchmarks/decode_kernels.py            # CUDA only

- products ``x [M, K] @ w.T [K, N]`` for M = 1 and 8 over the model's weights (the fused q/k/v,
  o, the fused gate/up and gate or up alone, down, lm_head): ``hir::small_m_linear``'s Triton
  kernel (autotuned per shape) against ``torch.nn.functional.linear`` (cuBLAS);
- the MLP's gated product ``silu(x @ w_gate.T) * (x @ w_up.T)`` (8192 x 2048 each) for M = 1
  and 8: ``hir::swiglu_small_m``'s one launch against the two small-M products and torch's
  SiLU and product (what the step ran without it), and against cuBLAS and torch's;
- M = 1, a product with its neighbours in one launch (``hir.interpreter.decode_fusions``): the
  RMSNorm before q/k/v and before the gated product, the residual add after o and down,
  against the one-row kernel and the norm (compiled by inductor) or add apart, and cuBLAS
  with the same (the error there is against the cuBLAS row, not float64);
- attention of a KV head's 4 stacked query rows over a 1024-position cache at batch 1 and 8,
  513 positions used (the benchmark's decode steps): the split-KV kernel against
  ``scaled_dot_product_attention`` with the boolean mask (what runs without it);
- then, in a table of its own, a batch-1 step's chain of those kernels (16 layers and the head,
  one CUDA graph) launched plainly and as programmatic dependents (``kernel-pdl``,
  :func:`chain_rows`).

Each kernel is timed as it ran before (column "plain": the attention a chunk and a combine
kernel) and with its mechanism (``hir.interpreter.decode_kernels``): the product "split-K" (the
autotuner may cut K into parts; with "one-row GEMV" too, one row runs on the CUDA cores, so at
M=8 that column is split-K's again), the attention "fused" (the combine folded into the chunk
kernel).

Times are medians of ``triton.testing.do_bench`` over a CUDA graph of 20 calls rotating
through enough weight copies to exceed the L2 (so every call reads from HBM); bandwidth counts
the bytes each call must read (weights and x; the cache's used part) over that time.
"""

import argparse
import math
import sys

import torch

LINEAR_VARIANTS = {
    "plain": (False, False),
    "split-K": (True, False),
    "split-K + one-row GEMV": (True, True),
}  # -> split_k, gemv
LINEARS = {
    "qkv": (3072, 2048),
    "o": (2048, 2048),
    "gate_up": (16384, 2048),
    "gate or up": (8192, 2048),
    "down": (2048, 8192),
    "lm_head": (32000, 2048),
}


def graph_time(calls: list) -> float:
    """ms per call of ``calls`` (each a no-argument function) captured in one CUDA graph."""
    import triton.testing

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for fn in calls:
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for fn in calls:
            fn()
    return triton.testing.do_bench(graph.replay, warmup=40, rep=200, return_mode="median") / len(calls)


def copies_for(nbytes: int, l2: int = 60 << 20) -> int:
    return max(2, math.ceil(3 * l2 / nbytes))


def linear_rows() -> list:
    from hir.interpreter.triton_small_m import small_m_linear

    rows = []
    for name, (n, k) in LINEARS.items():
        count = min(copies_for(n * k * 2), 20)
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(count)]
        for m in (1, 8):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            ref = x.double() @ weights[0].double().T
            errors = [
                ((small_m_linear(x, weights[0], *s).double() - ref).norm() / ref.norm()).item()
                for s in LINEAR_VARIANTS.values()
            ]
            times = {
                label: graph_time([lambda w=w, x=x, s=s: small_m_linear(x, w, *s) for w in weights])
                for label, s in LINEAR_VARIANTS.items()
            }
            cublas = graph_time([lambda w=w, x=x: torch.nn.functional.linear(x, w) for w in weights])
            rows.append((f"linear {name} [{n}x{k}], M={m}", times, cublas, (n * k + m * k + m * n) * 2, max(errors)))
    return rows


def swiglu_rows() -> list:
    from hir.interpreter.triton_small_m import small_m_linear, swiglu_small_m

    rows = []
    n, k = LINEARS["gate or up"]
    count = min(copies_for(2 * n * k * 2), 20)
    weights = [
        [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in range(2)] for _ in range(count)
    ]
    silu, linear = torch.nn.functional.silu, torch.nn.functional.linear
    for m in (1, 8):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        gate, up = weights[0]
        ref = silu(x.double() @ gate.double().T) * (x.double() @ up.double().T)
        error = ((swiglu_small_m(x, gate, up).double() - ref).norm() / ref.norm()).item()
        times = {
            "two products + SiLU*mul": graph_time(
                [lambda g=g, u=u, x=x: silu(small_m_linear(x, g)) * small_m_linear(x, u) for g, u in weights]
            ),
            "one launch": graph_time([lambda g=g, u=u, x=x: swiglu_small_m(x, g, u) for g, u in weights]),
        }
        cublas = graph_time([lambda g=g, u=u, x=x: silu(linear(x, g)) * linear(x, u) for g, u in weights])
        rows.append((f"swiglu gate+up [2x{n}x{k}], M={m}", times, cublas, (2 * n * k + m * k + m * n) * 2, error))
    return rows


def fused_rows() -> list:
    """M = 1: each product with its RMSNorm or residual add in one launch
    (``hir.interpreter.decode_fusions``) against the one-row product and the norm or add apart
    (the norm compiled by inductor into one kernel, as a compiled region runs it), and against
    cuBLAS with the same."""
    from hir.interpreter.decode_fusions import rms_norm
    from hir.interpreter.triton_one_row import one_row_linear
    from hir.interpreter.triton_small_m import small_m_linear, swiglu_small_m

    norm = torch.compile(rms_norm)
    silu, linear = torch.nn.functional.silu, torch.nn.functional.linear

    def gated(ws, x, nw, r):
        normed = norm(x, nw, 1e-5)
        return silu(linear(normed, ws[0])) * linear(normed, ws[1])

    # name -> (weights of, weights per call, one launch, apart, cuBLAS); each fn(ws, x, nw, r)
    cases = {
        "rms_norm + qkv": (
            "qkv",
            1,
            lambda ws, x, nw, r: one_row_linear(x, ws[0], norm_weight=nw, eps=1e-5),
            lambda ws, x, nw, r: small_m_linear(norm(x, nw, 1e-5), ws[0], True, True),
            lambda ws, x, nw, r: linear(norm(x, nw, 1e-5), ws[0]),
        ),
        "rms_norm + gate/up": (
            "gate or up",
            2,
            lambda ws, x, nw, r: one_row_linear(x, ws[0], norm_weight=nw, eps=1e-5, w_up=ws[1]),
            lambda ws, x, nw, r: swiglu_small_m(norm(x, nw, 1e-5), *ws),
            gated,
        ),
    }
    for name, weights_of in (("o + residual", "o"), ("down + residual", "down")):
        cases[name] = (
            weights_of,
            1,
            lambda ws, x, nw, r: one_row_linear(x, ws[0], residual=r),
            lambda ws, x, nw, r: r + small_m_linear(x, ws[0], True, True),
            lambda ws, x, nw, r: r + linear(x, ws[0]),
        )
    rows = []
    for name, (weights_of, per_call, fused, apart, theirs) in cases.items():
        n, k = LINEARS[weights_of]
        count = min(copies_for(per_call * n * k * 2), 20)
        bf16 = {"device": "cuda", "dtype": torch.bfloat16}
        weights = [[torch.randn(n, k, **bf16) / k**0.5 for _ in range(per_call)] for _ in range(count)]
        row = (torch.randn(1, k, **bf16), torch.randn(k, **bf16), torch.randn(1, n, **bf16))
        ref = theirs(weights[0], *row).double()
        error = ((fused(weights[0], *row).double() - ref).norm() / ref.norm()).item()
        times = {
            label: graph_time([lambda ws=ws, fn=fn, row=row: fn(ws, *row) for ws in weights])
            for label, fn in (("apart", apart), ("one launch", fused))
        }
        cublas = graph_time([lambda ws=ws, fn=theirs, row=row: fn(ws, *row) for ws in weights])
        shape = f"{'2x' * (per_call == 2)}{n}x{k}"
        rows.append((f"{name} [{shape}], M=1", times, cublas, (per_call * n * k + 2 * k + 2 * n) * 2, error))
    return rows


def attention_rows() -> list:
    from hir.interpreter.triton_decode import split_kv_attention

    rows = []
    length, used, heads, dim = 1024, 513, 8, 64
    variants = {"plain": False, "fused": True}  # -> fused_combine
    for batch in (1, 8):
        count = copies_for(batch * heads * length * dim * 4)
        q = torch.randn(batch, heads, 4, dim, device="cuda", dtype=torch.bfloat16)
        caches = [
            (
                torch.randn(batch, heads, length, dim, device="cuda", dtype=torch.bfloat16),
                torch.randn(batch, heads, length, dim, device="cuda", dtype=torch.bfloat16),
            )
            for _ in range(count)
        ]
        mask = (
            (torch.arange(length, device="cuda") < used).view(1, 1, 1, length).expand(batch, 1, 1, length).contiguous()
        )
        k, v = caches[0]
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), mask, scale=dim**-0.5
        )
        errors = [
            ((split_kv_attention(q, k, v, mask, dim**-0.5, fused).double() - ref).norm() / ref.norm()).item()
            for fused in variants.values()
        ]
        times = {
            label: graph_time(
                [
                    lambda k=k, v=v, q=q, mask=mask, f=f: split_kv_attention(q, k, v, mask, dim**-0.5, f)
                    for k, v in caches
                ]
            )
            for label, f in variants.items()
        }
        sdpa = graph_time(
            [
                lambda k=k, v=v, q=q, mask=mask: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, mask, scale=dim**-0.5
                )
                for k, v in caches
            ]
        )
        rows.append(
            (
                f"attention batch {batch}, 8 KV heads x 4 rows, {used}/{length} used",
                times,
                sdpa,
                batch * heads * used * dim * 2 * 2,
                max(errors),
            )
        )
    return rows


def chain_rows(layers: int = 16) -> list:
    """The decode step's hir kernels at batch 1 chained as the step runs them (per layer the
    normed q/k/v product, the attention, o + residual, the normed gate/up product, down +
    residual; then the normed head; distinct random weights, ~2.1 GB, so every launch reads
    HBM) in one CUDA graph, launched plainly, as programmatic dependents that wait first, and
    with the products' first weight columns loaded before that wait (``kernel-pdl``). No RoPE
    or cache writes between (the step's inductor kernels)."""
    from hir.interpreter.triton_decode import split_kv_attention
    from hir.interpreter.triton_one_row import one_row_linear

    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    hidden, inter, vocab = 2048, 8192, 32000

    def weight(*shape):
        return torch.randn(*shape, **bf16) / shape[-1] ** 0.5

    stack = [
        [weight(3072, hidden), weight(hidden, hidden), weight(inter, hidden), weight(inter, hidden)]
        + [weight(hidden, inter), 1 + weight(hidden) / 10, 1 + weight(hidden) / 10]
        + [torch.randn(1, 8, 1024, 64, **bf16) for _ in range(2)]
        for _ in range(layers)
    ]
    head, final_norm = weight(vocab, hidden), 1 + weight(hidden) / 10
    mask = (torch.arange(1024, device="cuda") < 513).view(1, 1, 1, 1024).expand(1, 1, 4, 1024).contiguous()
    x = torch.randn(1, hidden, **bf16)
    nbytes = sum(t.numel() * 2 for layer in stack for t in layer[:7]) + head.numel() * 2 + layers * 8 * 513 * 64 * 4

    def chain(pdl: bool, first: bool) -> torch.Tensor:
        h = x
        for qkv, o, gate, up, down, norm1, norm2, keys, values in stack:
            q = one_row_linear(h, qkv, norm_weight=norm1, eps=1e-5, pdl=pdl, weight_first=first)[:, :hidden]
            a = split_kv_attention(q.view(1, 8, 4, 64), keys, values, mask, 0.125, True, pdl)
            h = one_row_linear(a.view(1, hidden), o, residual=h, pdl=pdl, weight_first=first)
            act = one_row_linear(h, gate, norm_weight=norm2, eps=1e-5, w_up=up, pdl=pdl, weight_first=first)
            h = one_row_linear(act, down, residual=h, pdl=pdl, weight_first=first)
        return one_row_linear(h, head, norm_weight=final_norm, eps=1e-5, pdl=pdl, weight_first=first)

    plain = chain(False, False).double()
    rows = []
    for label, flags in (("plain", (False, False)), ("PDL", (True, False)), ("PDL, weight first", (True, True))):
        out = {}
        ms = graph_time([lambda flags=flags, out=out: out.__setitem__("logits", chain(*flags))])  # the graph's
        rows.append((label, ms, nbytes, (out["logits"].double() - plain).abs().max().item()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peak-tbps", type=float, default=4.8, help="the GPU's memory bandwidth (H200: 4.8 TB/s)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("decode_kernels.py: needs CUDA")
    torch.manual_seed(0)
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    print(
        "| shape | hir kernel: us per variant | without (cuBLAS / SDPA) (us) | best / without "
        "| best GB/s (share of peak) | rel. error vs float64 |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for rows in (attention_rows, swiglu_rows, fused_rows, linear_rows):  # each table row printed as it is measured
        for name, times, theirs, nbytes, error in rows():
            best = min(times.values())
            gbps = nbytes / best / 1e6
            variants = ", ".join(f"{label} {ms * 1e3:.1f}" for label, ms in times.items())
            print(
                f"| {name} | {variants} | {theirs * 1e3:.1f} | {best / theirs:.2f}x "
                f"| {gbps:.0f} ({gbps / (args.peak_tbps * 1e3):.0%}) | {error:.1e} |",
                flush=True,
            )
    print("\n| 16 layers + head of hir's kernels in one CUDA graph | us per chain | GB/s (share of peak) | max diff |")
    print("|---|---:|---:|---:|")
    for label, ms, nbytes, diff in chain_rows():
        gbps = nbytes / ms / 1e6
        print(
            f"| {label} | {ms * 1e3:.0f} | {gbps:.0f} ({gbps / (args.peak_tbps * 1e3):.0%}) | {diff:.3g} |", flush=True
        )


if __name__ == "__main__":
    main()
