"""Where a training step's time goes, per row of ``benchmarks/train.py``: one step of each
row under ``torch.profiler``, its device time by kernel category, the host's share, the
attention kernels that ran and the largest kernels.

    python benchmarks/profile_train.py                    # GPU: train.py's ~1B Llama, batch 4 x 2048
    python benchmarks/profile_train.py --layers 4         # the same model, fewer layers
    python benchmarks/profile_train.py --tiny --rows "eager,hir eager"   # CPU: the script's own check

Rows are built one at a time (``train.py``'s ``build`` on a fresh copy of the weights) and
freed before the next, so each row's peak is its own. Per row: ``ms`` is a step's wall time
without the profiler (best of ``--steps``), ``profiled ms`` the profiled step's, ``busy``
the union of the device's kernel intervals in that step (``idle`` = profiled wall - busy:
the device waiting for the host), kernels and launches (kernel launches, CUDA graph
launches), host ops (``aten::`` calls) and syncs. Categories: kernels by name (GEMM,
attention, fused optimizer, inductor/triton, reductions, copies and casts, other
elementwise, memcpy / memset, other); ``after last GEMM`` is the device time from the end of
the step's last GEMM on (the optimizer's update, with the embedding's gradient). For hir
rows, the step program's counts of attention, cast and kernel ops (its IR text).
"""

import argparse
import copy
import json
import os
import sys
import time
from collections import defaultdict

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_rows  # noqa: E402

CATEGORIES = (  # first match wins (lower-case kernel names)
    ("memcpy/memset", ("memcpy", "memset")),
    ("attention", ("flash", "fmha", "attention", "sdpa", "_mha", "attn")),
    ("GEMM", ("gemm", "xmma", "cutlass", "nvjet", "wgmma", "matmul", "splitk", "cublas", "sm90_", "sm80_")),
    ("fused optimizer", ("multi_tensor", "adam", "foreach")),
    ("inductor (triton)", ("triton",)),
    ("reduction/softmax/loss", ("reduce", "softmax", "norm", "nll", "loss", "scan", "embedding", "index")),
    ("copies/casts", ("copy", "cat", "convert", "cast")),
    ("elementwise", ("elementwise", "vectorized", "unrolled")),
)
ROW_ORDER = ["eager", "hir eager", "hir default", "torch.compile"]
IR_COUNTS = (
    "hir.flash_attention",
    "aten._scaled_dot_product_flash",
    "aten._scaled_dot_product_efficient",
    "aten._scaled_dot_product_cudnn",
    "aten._to_copy",
    "hir.kernel",
    "hir.matmul",
)


def category(name: str) -> str:
    low = name.lower()
    for label, keys in CATEGORIES:
        if any(k in low for k in keys):
            return label
    return "other"


def busy_us(intervals: list) -> float:
    """The length of the union of ``intervals`` ((start, end) pairs)."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def profile_step(step, sync, cuda: bool) -> dict:
    """One profiled call of ``step`` (after the caller's warm-up)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync()
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        step()
        sync()
        wall = time.perf_counter() - start
    kernels, host_ops, launches, graphs, syncs = [], 0, 0, 0, 0
    for event in prof.events():
        device_type = str(getattr(event, "device_type", "")).rsplit(".", 1)[-1]
        if device_type == "CUDA":
            if getattr(
                event, "is_user_annotation", False
            ):  # a record_function's range (Optimizer.step#...), not a kernel
                continue
            kernels.append((event.time_range.start, event.time_range.end, event.name))
            continue
        name = event.name
        host_ops += name.startswith("aten::")
        launches += name.startswith(("cudaLaunchKernel", "cuLaunchKernel"))
        graphs += name.startswith("cudaGraphLaunch")
        syncs += name.startswith(("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"))
    return {
        "wall_us": wall * 1e6,
        "kernels": kernels,
        "host_ops": host_ops,
        "launches": launches,
        "graphs": graphs,
        "syncs": syncs,
    }


def summarize(p: dict) -> dict:
    kernels = p["kernels"]
    by_cat: dict = defaultdict(lambda: [0, 0.0])
    by_name: dict = defaultdict(lambda: [0, 0.0])
    for s, e, name in kernels:
        c = by_cat[category(name)]
        c[0] += 1
        c[1] += e - s
        n = by_name[name]
        n[0] += 1
        n[1] += e - s
    gemm_ends = [e for s, e, name in kernels if category(name) == "GEMM"]
    last = max(gemm_ends) if gemm_ends else None
    tail = [(s, e) for s, e, _ in kernels if last is not None and s >= last]
    busy = busy_us([(s, e) for s, e, _ in kernels])
    attention = sorted({name for _, _, name in kernels if category(name) == "attention"})
    return {
        "wall_ms": p["wall_us"] / 1e3,
        "busy_ms": busy / 1e3,
        "kernel_ms": sum(e - s for s, e, _ in kernels) / 1e3,
        "kernels": len(kernels),
        "launches": p["launches"],
        "graph_launches": p["graphs"],
        "host_ops": p["host_ops"],
        "syncs": p["syncs"],
        "tail_ms": sum(e - s for s, e in tail) / 1e3,
        "tail_kernels": len(tail),
        "categories": {
            k: {"kernels": v[0], "ms": v[1] / 1e3} for k, v in sorted(by_cat.items(), key=lambda kv: -kv[1][1])
        },
        "top": [(name, v[0], v[1] / 1e3) for name, v in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:15]],
        "attention_kernels": attention,
    }


def ir_counts(step) -> dict:
    """Counts of a few op names in the hir step program's IR (empty for torch rows)."""
    holder = getattr(step, "hir_step", None)
    if holder is None:
        return {}
    text = "\n".join(str(p.module) for p in holder.programs.values())
    return {k: text.count(k) for k in IR_COUNTS}


def run_row(row: str, base, args, batch, sync) -> dict:
    reset, allocated, peak = train_rows.memory(args.device)
    sync()
    reset()
    before = allocated()
    model = copy.deepcopy(base).to(args.device)
    start = time.perf_counter()
    step = train_rows.build(row, model, args, batch)
    step()
    sync()
    first = time.perf_counter() - start
    step()
    sync()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    result = summarize(profile_step(step, sync, args.device.startswith("cuda")))
    result.update(
        row=row, ms=min(times) * 1e3, first_s=first, peak_gib=(peak()[0] - before[0]) / 2**30, ir=ir_counts(step)
    )
    return result


def print_row(r: dict, top: int) -> None:
    print(
        f"\n### {r['row']}\nstep {r['ms']:.1f} ms (profiled {r['wall_ms']:.1f} ms: "
        f"device busy {r['busy_ms']:.1f} ms, idle {r['wall_ms'] - r['busy_ms']:.1f} ms; "
        f"kernel time {r['kernel_ms']:.1f} ms); {r['kernels']} kernels, {r['launches']} kernel launches, "
        f"{r['graph_launches']} graph launches, {r['host_ops']} aten ops on the host, {r['syncs']} syncs; "
        f"peak {r['peak_gib']:.2f} GiB; first step {r['first_s']:.1f} s"
    )
    print(
        f"after the last GEMM: {r['tail_ms']:.1f} ms in {r['tail_kernels']} kernels; "
        f"attention kernels: {', '.join(r['attention_kernels']) or 'none'}"
    )
    if r["ir"]:
        print("step program IR: " + ", ".join(f"{k} {v}" for k, v in r["ir"].items()))
    print("| category | kernels | ms |\n|---|---:|---:|")
    for name, c in r["categories"].items():
        print(f"| {name} | {c['kernels']} | {c['ms']:.2f} |")
    if top:
        print("| kernel | count | ms |\n|---|---:|---:|")
        for name, n, ms in r["top"][:top]:
            print(f"| `{name[:100]}` | {n} | {ms:.2f} |")


def print_summary(results: list) -> None:
    cats = []
    for r in results:
        cats += [c for c in r["categories"] if c not in cats]
    print("\n## Summary (device ms per step by category; one profiled step)")
    print("| row | step ms | busy ms | idle ms | kernels | after last GEMM ms | peak GiB | " + " | ".join(cats) + " |")
    print("|---|" + "---:|" * (7 + len(cats)))
    for r in results:
        cells = [
            f"{r['ms']:.1f}",
            f"{r['busy_ms']:.1f}",
            f"{r['wall_ms'] - r['busy_ms']:.1f}",
            str(r["kernels"]),
            f"{r['tail_ms']:.1f}",
            f"{r['peak_gib']:.2f}",
        ]
        cells += [f"{r['categories'][c]['ms']:.1f}" if c in r["categories"] else "-" for c in cats]
        print(f"| {r['row']} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="train.py's tiny Llama, batch 2 x 32, on the CPU unless --device says otherwise",
    )
    parser.add_argument("--device", default=None)
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default: the config's)")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seq", type=int, default=None)
    parser.add_argument("--steps", type=int, default=2, help="unprofiled timed steps per row (default 2)")
    parser.add_argument("--rows", default=",".join(ROW_ORDER), help="comma-separated rows, run in this order")
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds: start no row after this much time has passed"
    )
    parser.add_argument("--fused", action="store_true", help="AdamW(fused=True) on the CPU too (as on CUDA)")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in train_rows.ROWS]
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)}")
    config, base, batch, sync = train_rows.workload(args, args.layers)
    batch_size, seq = batch[0].shape
    params = sum(p.numel() for p in base.parameters())
    print(
        f"Llama {params / 1e6:.1f}M parameters, {config.num_hidden_layers} layers, hidden {config.hidden_size}; "
        f"batch {batch_size} x {seq}; bf16 autocast; "
        f"AdamW{' (fused)' if args.fused or args.device.startswith('cuda') else ''}; {args.device}; "
        f"torch {torch.__version__}",
        flush=True,
    )
    started = time.perf_counter()
    results = []
    for row in rows:
        if args.budget is not None and time.perf_counter() - started > args.budget:
            print(f"\n### {row}: not run (--budget {args.budget:g} s spent)", flush=True)
            continue
        try:
            results.append(run_row(row, base, args, batch, sync))
            print_row(results[-1], args.top)
        except Exception as err:  # noqa: BLE001 - reported; the other rows go on
            print(f"\n### {row}: FAILED: {type(err).__name__}: {str(err)[:400]}", flush=True)
        sys.stdout.flush()
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    print_summary(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
