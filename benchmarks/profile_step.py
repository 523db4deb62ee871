r"""Where a decode or prefill step's time goes, per row of ``benchmarks/generate.py`` (issue 34):
each row's calls under ``torch.profiler``, one table per case and row.

    python benchmarks/profile_step.py                                   # GPU: the ~1B Llama
    python benchmarks/profile_step.py --small --device cpu --cases decode1 --rows "HF eager,hir eager"
    python benchmarks/profile_step.py --small --layers 16 --device cpu --cases decode8,prefill \
        --rows "HF eager,hir eager" --top 0

Per row: wall ms per call, device (kernel) ms per call, kernels per call, kernel launches and
CUDA graph launches per call (host API calls), host synchronisations per call, and the top
``--top`` device kernels (or, on the CPU, host ops) by time per call, and the copies and
allocations per call (every ``aten::copy_``, ``clone``, ``_to_copy``, ``empty`` and
``empty_strided``, nested ones included: what hir eager must not do more of than HF eager,
issue 34; ``--small --layers 16``: the tiny Llama as deep as the 1B one). Rows are those of
``generate.py`` (``--rows``, comma-separated); cases ``decode1``, ``decode8``, ``prefill``.

``--timeline`` (GPU): also the last call's kernels in the order they ran, per kernel name how
far they moved the call's end (each kernel's end past the latest end before it: kernels that
overlap their predecessor, as programmatic dependents do, count only what they add), where
kernel time sums count overlapped time twice.
"""

import argparse
import os
import sys
import time
from collections import defaultdict

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402

COPIES = ("aten::copy_", "aten::clone", "aten::_to_copy", "aten::empty", "aten::empty_strided")
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy ")
LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


def profile_row(fn, calls: int, sync, cuda: bool) -> dict:
    """The profile of ``calls`` calls of ``fn`` (after two unprofiled ones)."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):
        fn()
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch.no_grad(), profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        wall = (time.perf_counter() - t0) / calls
    kernels: dict = defaultdict(lambda: [0, 0.0])
    host: dict = defaultdict(lambda: [0, 0.0])
    spans = []
    launches = graphs = syncs = 0
    for event in prof.events():
        device_type = str(getattr(event, "device_type", "")).rsplit(".", 1)[-1]
        if device_type == "CUDA":
            spans.append((event.name, event.time_range.start, event.time_range.end))
            entry = kernels[event.name]
            entry[0] += 1
            entry[1] += event.device_time_total if hasattr(event, "device_time_total") else event.cuda_time_total
            continue
        name = event.name
        launches += name.startswith(LAUNCH_CALLS)
        graphs += name.startswith("cudaGraphLaunch")
        syncs += name.startswith(SYNC_CALLS)
        if not name.startswith("cuda"):
            entry = host[name]
            entry[0] += 1
            entry[1] += event.self_cpu_time_total
    return {
        "wall_ms": wall * 1e3,
        "kernels": kernels,
        "host": host,
        "launches": launches / calls,
        "graphs": graphs / calls,
        "syncs": syncs / calls,
        "calls": calls,
        # the last call's: the calls run one after another, each the same kernels
        "spans": sorted(spans, key=lambda span: span[1])[len(spans) - len(spans) // calls :],
    }


def advances(spans: list) -> dict:
    """Per name, (kernels, us they moved the end, us they ran) of ``spans`` ((name, start us,
    end us) in start order): each kernel's end past the latest end before it."""
    table: dict = defaultdict(lambda: [0, 0.0, 0.0])
    last = spans[0][1] if spans else 0.0
    for name, start, end in spans:
        entry = table[name]
        entry[0] += 1
        entry[1] += max(end - last, 0.0)
        entry[2] += end - start
        last = max(last, end)
    return dict(table)


def print_timeline(spans: list) -> None:
    """The table of :func:`advances` for one call's kernels."""
    if not spans:
        print("\n(no device kernels: --timeline needs a GPU)")
        return
    print(f"\none call's {len(spans)} kernels, first start to last end {spans[-1][2] - spans[0][1]:.1f} us:")
    print("| kernel | per call | us it moves the end | us it runs |\n|---|---:|---:|---:|")
    for name, (n, moved, ran) in sorted(advances(spans).items(), key=lambda kv: -kv[1][1]):
        print(f"| `{name[:90]}` | {n} | {moved:.1f} | {ran:.1f} |")


def print_profile(case: str, row: str, p: dict, top: int) -> None:
    calls = p["calls"]
    device_ms = sum(t for _, t in p["kernels"].values()) / calls / 1e3
    count = sum(n for n, _ in p["kernels"].values()) / calls
    print(
        f"\n### {case}: {row}\nwall {p['wall_ms']:.3f} ms/call, kernels {device_ms:.3f} ms/call ({count:.0f} kernels), "
        f"launches {p['launches']:.0f}, graph launches {p['graphs']:.0f}, host syncs {p['syncs']:.1f} per call"
    )
    print(
        "copies and allocations per call: "
        + ", ".join(f"`{name[6:]}` {p['host'][name][0] / calls:.0f}" for name in COPIES if name in p["host"])
    )
    if top <= 0:
        return
    table = p["kernels"] if p["kernels"] else p["host"]
    what = "kernel" if p["kernels"] else "host op (self time)"
    print(f"| {what} | per call | us per call |\n|---|---:|---:|")
    for name, (n, t) in sorted(table.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| `{name[:90]}` | {n / calls:.1f} | {t / calls:.1f} |")
    if p["kernels"]:
        host = sorted(p["host"].items(), key=lambda kv: -kv[1][1])[:top]
        print("\nhost ops by self time:\n| host op | per call | us per call |\n|---|---:|---:|")
        for name, (n, t) in host:
            print(f"| `{name[:90]}` | {n / calls:.1f} | {t / calls:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--device", default=None)
    parser.add_argument("--cases", default="decode1,prefill")
    parser.add_argument("--rows", default="torch.compile reduce-overhead,hir default,HF eager,hir eager")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cache", type=int, default=None)
    parser.add_argument("--prefill", type=int, default=None)
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default: the model's, 16; --small 2)")
    parser.add_argument("--timeline", action="store_true", help="also how far each kernel moves a call's end (GPU)")
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    args.dtype = torch.float32 if args.small else torch.bfloat16
    args.cache = args.cache or (64 if args.small else 1024)
    args.prefill = args.prefill or (16 if args.small else 512)
    args.repeat, args.number = 1, 1
    model = generate.make_model(args)
    shapes = {
        "decode1": ("decode, batch 1", 1, 1, args.cache // 2),
        "decode8": ("decode, batch 8", 8, 1, args.cache // 2),
        "prefill": (f"prefill, {args.prefill} tokens", 1, args.prefill, 0),
    }
    builders = {
        "HF eager": lambda c: lambda: c.step(c.ids, c.pos),
        "torch.compile reduce-overhead": lambda c: (lambda f: lambda: f(c.ids, c.pos))(
            torch.compile(c.step, mode="reduce-overhead")
        ),
        "hir eager": lambda c: c.hir_row(graph=False, compile_kernels=False),
        "hir default": lambda c: c.hir_row(),
        "hir compiled, no graph": lambda c: c.hir_row(graph=False),
    }
    cuda = args.device.startswith("cuda")
    for key in args.cases.split(","):
        case = generate.Case(model, args, *shapes[key])
        for row in args.rows.split(","):
            case.add(row, lambda row=row, case=case: builders[row](case))
            if row in case.rows:
                profiled = profile_row(case.rows[row][0], args.calls, case.sync, cuda)
                print_profile(case.name, row, profiled, args.top)
                if args.timeline:
                    print_timeline(profiled["spans"])
                sys.stdout.flush()


if __name__ == "__main__":
    main()
