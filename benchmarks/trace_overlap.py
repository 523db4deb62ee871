"""Summarise a Chrome trace written by ``hir-run --trace``: GPU kernels and copies per CUDA
stream, and how long two or more streams were busy at once (the overlap the stream
pipeline is for).

    python benchmarks/trace_overlap.py out.json
"""

import json
import sys
from collections import defaultdict


def summarise(path: str) -> dict:
    events = json.load(open(path))["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    per_stream: dict = defaultdict(list)
    for e in gpu:
        stream = e.get("args", {}).get("stream", e.get("tid"))
        per_stream[stream].append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
    edges = []
    for intervals in per_stream.values():
        for start, end in intervals:
            edges += [(start, 1), (end, -1)]
    edges.sort()
    busy = overlap = 0.0
    depth, last = 0, None
    for t, delta in edges:
        if last is not None and depth >= 1:
            busy += t - last
            if depth >= 2:
                overlap += t - last
        depth += delta
        last = t
    return {
        "streams": {str(s): len(v) for s, v in sorted(per_stream.items(), key=lambda kv: str(kv[0]))},
        "gpu_busy_us": busy,
        "overlap_us": overlap,
        "cpu_events": sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
    }


def main() -> None:
    for path in sys.argv[1:]:
        s = summarise(path)
        print(
            f"{path}: GPU ops per stream {s['streams']}; GPU busy {s['gpu_busy_us']:.0f} us, "
            f"2+ streams busy {s['overlap_us']:.0f} us; {s['cpu_events']} CPU ops"
        )


if __name__ == "__main__":
    main()
