"""Where a training row's memory goes at its peak: one row of ``benchmarks/train.py`` (the
~1B Llama, batch 4 x 2048, bf16 autocast, fused AdamW) in this process alone, with the CUDA
caching allocator's history recorded.

    python benchmarks/train_memory.py --row "hir default"
    python benchmarks/train_memory.py --row torch.compile --layers 4

Prints the first step's time, the peak over the build and first step, the peak of steps 2-3
(requested bytes and the allocator's blocks), the stack of the allocation that reached the
trace's peak, then the blocks live at the trace's peak grouped
by the line that allocated them (inductor's generated code, hir's interpreter, the model,
the optimizer), largest first. A row alone in a fresh process sees no other row's cached
blocks, so its allocator figures are not shifted by what ran before it.
"""

import argparse
import collections
import copy
import linecache
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_rows  # noqa: E402

ORIGINS = ("torchinductor", "/hir/", "benchmarks/", "torch/optim", "transformers/", "autograd")


def origin(event: dict) -> str:
    """The innermost frame of an allocation that is ours, the model's or inductor's code."""
    frames = event.get("frames") or []
    for f in frames:
        if any(s in f["filename"] for s in ORIGINS):
            source = linecache.getline(f["filename"], f["line"]).strip()[:90]
            return f"{os.path.basename(f['filename'])}:{f['line']} {f['name']} | {source}"
    return f"{os.path.basename(frames[0]['filename'])}:{frames[0]['name']}" if frames else "?"


def live_at_peak(trace: list) -> tuple[int, int, dict]:
    """(peak bytes, event index of the peak, the blocks live there by address) of one
    device's allocator trace."""
    live: dict = {}
    total = best = best_at = 0
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            live[e["addr"]] = e
            total += e["size"]
            if total > best:
                best, best_at = total, i
        elif e["action"] == "free_completed" and e["addr"] in live:
            total -= live.pop(e["addr"])["size"]
    live = {}
    for e in trace[: best_at + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    return best, best_at, live


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--row", required=True, choices=train_rows.ROWS)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--top", type=int, default=30, help="origins to list (default 30)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("needs CUDA (the allocator's history)")
    run = argparse.Namespace(tiny=False, device="cuda", batch=None, seq=None, fused=False)
    _, base, batch, _ = train_rows.workload(run, args.layers)
    reset, now, peak = train_rows.memory("cuda")
    torch.cuda.synchronize()
    reset()
    before = now()
    torch.cuda.memory._record_memory_history(max_entries=3_000_000, stacks="python")
    model = copy.deepcopy(base).cuda()
    torch.cuda.synchronize()
    start = time.perf_counter()
    step = train_rows.build(args.row, model, run, batch)
    loss = step().item()
    first = time.perf_counter() - start
    first_peak = peak()
    reset()
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    steady = peak()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)

    def gib(pair: tuple[int, int]) -> str:
        return f"{(pair[0] - before[0]) / 2**30:.3f} GiB requested, {(pair[1] - before[1]) / 2**30:.3f} GiB in blocks"

    print(f"{args.row}, {args.layers} layers: first step {first:.1f} s, loss {loss:.4f}")
    print(f"  peak over the build and first step: {gib(first_peak)}")
    print(f"  peak of steps 2-3: {gib(steady)}")
    best, best_at, live = live_at_peak(snapshot["device_traces"][0])
    print(f"  trace: {len(snapshot['device_traces'][0])} events; its peak {best / 2**30:.3f} GiB in {len(live)} blocks")
    groups: dict = collections.defaultdict(lambda: [0, 0])
    for e in live.values():
        g = groups[origin(e)]
        g[0] += e["size"]
        g[1] += 1
    print("  the allocation that reached the peak, innermost frame first:")
    for f in snapshot["device_traces"][0][best_at].get("frames", [])[:40]:
        if "/torch/" not in f["filename"] or "torchinductor" in f["filename"]:
            source = linecache.getline(f["filename"], f["line"]).strip()[:90]
            print(f"    {os.path.basename(f['filename'])}:{f['line']} {f['name']} | {source}")
    print("\n| MiB | blocks | allocated at |\n|---:|---:|---|")
    for where, (size, count) in sorted(groups.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"| {size / 2**20:.1f} | {count} | `{where}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
