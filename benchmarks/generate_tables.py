"""The tables benchmarks/generate.py prints from its results: ms per call of each row and case,
and each decode row's bandwidth (the bytes a step must read over its time)."""


def print_steps(results: list, title: str = "ms per call", peak: float = 4.8) -> None:
    print(f"\n| {title} | " + " | ".join(r["case"] for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for name in dict.fromkeys(n for r in results for n in (row["row"] for row in r["rows"])):
        cells = []
        for r in results:
            by = {row["row"]: row for row in r["rows"]}
            base = by.get("HF eager" if "eager" in name else "torch.compile reduce-overhead")
            row = by.get(name)
            ratio = (
                f" ({row['ms'] / base['ms']:.2f}x {'HF eager' if 'eager' in name else 'r-o'})" if row and base else ""
            )
            cells.append("-" if row is None else f"{row['ms']:.3f}{ratio}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "ready in (build + first 3 calls + check, s): "
        + "; ".join(
            f"{r['case']}: " + ", ".join(f"{row['row']} {row['ready_s']:.1f}" for row in r["rows"]) for r in results
        )
    )
    if any(r["case"].startswith("prefill") for r in results):
        print(
            "prefill: HF eager = HF's step (skips the mask from an empty cache); torch.compile = HF's step compiled "
            "(masked, every cache position); hir rows = StaticCachePrefill's program (hir.generate's prefill: the "
            "prompt's own tokens, causal)"
        )
    for r in results:
        for failure in r["failed"]:
            print(f"FAILED {r['case']}: {failure['row']}: {failure['error']}")
    print_bandwidth([r for r in results if "bytes" in r], peak)


def print_bandwidth(results: list, peak: float) -> None:
    """Per decode row: the bytes a step must read (``Case.bytes_read``) over its time, and
    that bandwidth's share of the GPU's ``peak`` (TB/s)."""
    if not results:
        return
    print(
        "\n| achieved weight+KV bandwidth (GB/s, share of "
        + f"{peak:g} TB/s) | "
        + " | ".join(f"{r['case']} ({r['bytes'] / 1e9:.3f} GB a step)" for r in results)
        + " |"
    )
    print("|---|" + "---:|" * len(results))
    for name in dict.fromkeys(n for r in results for n in (row["row"] for row in r["rows"])):
        cells = []
        for r in results:
            row = {row["row"]: row for row in r["rows"]}.get(name)
            cells.append(
                "-"
                if row is None
                else f"{r['bytes'] / row['ms'] / 1e6:.0f} ({r['bytes'] / row['ms'] / 1e9 / peak:.0%})"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")
