"""A Llama training step through ``hir.train_step`` against eager PyTorch and
``torch.compile``, in one invocation: ms per step, MFU, peak memory and the first step.

    python benchmarks/train.py                 # GPU: ~1B Llama (d 2048, 16 layers, 32/8 heads, vocab 32000,
                                               # untied), batch 4 x 2048, bf16 autocast, fused AdamW
    python benchmarks/train.py --tiny          # a tiny Llama on the CPU: the script's own check (torch.compile's
                                               # row compiles C++ kernels: most of the time; --rows to leave it out)
    python benchmarks/train.py --tiny --cold   # the same, each row's first step also measured cold
    python benchmarks/train.py --cold-repeats 3 --rows "hir default,torch.compile"   # first steps: medians of 3

Weights are random from a config (seed 0, no download); every row trains its own copy of
the same weights on the same batch, with its own ``torch.optim.AdamW`` (fused on CUDA).
Rows (``benchmarks/train_rows.py`` builds them):

- ``eager``: ``loss_fn(model, ids, labels).backward(); optimizer.step(); zero_grad()``.
- ``torch.compile``: the model compiled (``torch.compile(model)``, default mode) and the
  optimizer's step compiled too (``torch.compile(optimizer.step)``).
- ``hir eager``: ``hir.train_step(..., graph=False, compile_kernels=False)``: the program's
  ops one by one.
- ``hir default``: ``hir.train_step(...)`` (CUDA graphs, compiled regions cut at their
  repeated layers, each distinct piece compiled once, elementwise values recomputed at the cuts).
- ``hir default (whole region)``: the same with ``regional=False`` (the step's region
  compiled whole).

``first step`` is the time from building the row (its model on the device) to its first
loss (import, lowering, compilation, the step); ``peak`` is the most memory the row's
model, optimizer, gradients and step held at once over its build and first 3 steps, less
what was allocated before: the bytes its tensors asked for (the allocator's
``requested_bytes`` peak), and beside it ``alloc. peak``, ``torch.cuda.max_memory_allocated``:
the caching allocator's blocks, which also count what a block was rounded up to.

Both depend on what ran before in the same process: a row built after others finds kernels
compiled (inductor's and Triton's caches, in memory and on disk), the compile workers
started, modules imported, blocks cached. With ``--cold`` (the default on CUDA, not with
``--tiny``; ``--no-cold`` turns it off) each row is first measured alone: this script again
(``--measure-row ROW --json FILE``) in a fresh process of its own, with empty
``TORCHINDUCTOR_CACHE_DIR``, ``TRITON_CACHE_DIR`` and ``HIR_CACHE_DIR`` folders, on the
same weights and batch; the table's ``cold first step s``, ``cold peak GiB`` and ``cold
alloc. peak GiB`` are those. A cold first step moves by 10-20 s from one fresh process or
machine to the next (torch.compile's row: 40-64 s over five H200 runs in benchmarks/RESULTS.md),
so ``--cold-repeats N`` measures each row N times, rows in turns, and the table shows the
median first step with its range (the largest peak). Then the rows are built again in this
process, one after the other, for the timed turns (their first steps there, warm, are
printed as they go and written to ``--json`` under ``warm``). Without ``--cold`` the
table's figures are those in-process ones.

The first step's loss (same weights, same batch) is checked against eager's: cold and in
this process, the larger error shown (a wrong row prints WRONG). Rows are timed in turns:
``--rounds`` rounds of ``--steps`` steps each, the best round per row.
MFU = (6 x parameters x tokens + 12 x layers x hidden x sequence x tokens) / step time /
``--peak-tflops`` (989: H100/H200 SXM dense bf16). A row that fails prints n/a with the
reason; the others go on.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import TOLERANCES, Verdicts, best, worst  # noqa: E402
from train_rows import ROWS, failure, flops_per_step, prepare, workload  # noqa: E402

MEASURED = ("first_s", "first_loss", "peak_gib", "alloc_peak_gib")  # what a row's first steps measure
CACHES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "HIR_CACHE_DIR")  # empty for a cold row


def measure(row: str, args: argparse.Namespace) -> dict:
    """The row's first steps in this process: :data:`MEASURED`, or ``failed`` (why)."""
    _, base, batch, sync = workload(args)
    try:
        r = prepare(row, base, args, batch, sync)
    except Exception as err:  # noqa: BLE001 - written for the parent's table
        return {"failed": failure(err)}
    return {k: r[k] for k in MEASURED}


def measure_cold(row: str, args: argparse.Namespace, batch_size: int, seq: int) -> dict:
    """:func:`measure` in a fresh process of this script, its caches empty folders of its own."""
    with tempfile.TemporaryDirectory(prefix="hir-train-cold-") as tmp:
        out = os.path.join(tmp, "row.json")
        command = [sys.executable, os.path.abspath(__file__), "--measure-row", row, "--json", out]
        command += ["--device", args.device, "--batch", str(batch_size), "--seq", str(seq)]
        command += ["--tiny"] * args.tiny + ["--fused"] * args.fused
        env = {**os.environ, **{name: os.path.join(tmp, name.lower()) for name in CACHES}}
        code = subprocess.run(command, env=env, stdin=subprocess.DEVNULL).returncode
        if not os.path.exists(out):
            return {"failed": f"its own process exited with {code}, measuring nothing"}
        with open(out) as f:
            return json.load(f)


def cold_summary(runs: list[dict]) -> dict:
    """A row's cold measurements in one: the median first step (its every run under
    ``first_s_runs``), the largest peaks, the first run's loss."""
    return {
        **runs[0],
        "first_s": statistics.median(r["first_s"] for r in runs),
        "first_s_runs": [r["first_s"] for r in runs],
        "first_loss_runs": [r["first_loss"] for r in runs],
        "peak_gib": max(r["peak_gib"] for r in runs),
        "alloc_peak_gib": max(r["alloc_peak_gib"] for r in runs),
    }


def first_range(r: dict) -> str:
    """`` (min-max)`` of a row's cold first steps where there are several."""
    runs = r.get("first_s_runs", [])
    return f" ({min(runs):.1f}-{max(runs):.1f})" if len(runs) > 1 else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny Llama, batch 2 x 32, on the CPU unless --device says otherwise"
    )
    parser.add_argument("--device", default=None, help="default: cuda when available (not with --tiny), else cpu")
    parser.add_argument("--batch", type=int, default=None, help="sequences per step (default 4; --tiny 2)")
    parser.add_argument("--seq", type=int, default=None, help="tokens per sequence (default 2048; --tiny 32)")
    parser.add_argument("--steps", type=int, default=3, help="steps per timed round (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, rows in turns (default 3)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of: {', '.join(ROWS)}")
    parser.add_argument(
        "--peak-tflops",
        type=float,
        default=989.0,
        help="the device's dense bf16 peak for MFU (default 989: H100/H200 SXM)",
    )
    parser.add_argument("--fused", action="store_true", help="AdamW(fused=True) on the CPU too (as on CUDA)")
    parser.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="first step and peak of each row alone in a fresh process, its caches empty (default: on CUDA "
        "without --tiny)",
    )
    parser.add_argument(
        "--cold-repeats",
        type=int,
        default=1,
        help="with --cold: fresh processes per row, rows in turns; the table shows the median first step "
        "and the largest peak (default 1)",
    )
    parser.add_argument("--measure-row", choices=ROWS, help="(what --cold runs) measure this row's first steps only")
    parser.add_argument("--json", default=None, help="write the results (with --measure-row: the row's) to this file")
    args = parser.parse_args()
    if args.cold_repeats < 1:
        parser.error("--cold-repeats: at least 1")
    args.device = args.device or ("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    if args.measure_row:
        if not args.json:
            parser.error("--measure-row needs --json")
        with open(args.json, "w") as f:
            json.dump(measure(args.measure_row, args), f)
        return 0
    cold = args.device.startswith("cuda") and not args.tiny if args.cold is None else args.cold
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)} (rows: {', '.join(ROWS)})")

    config, base, batch, sync = workload(args)
    batch_size, seq = batch[0].shape
    params = sum(p.numel() for p in base.parameters())
    print(
        f"Llama {params / 1e6:.1f}M parameters, {config.num_hidden_layers} layers, hidden {config.hidden_size}; "
        f"batch {batch_size} x {seq}; bf16 autocast; "
        f"AdamW{' (fused)' if args.fused or args.device.startswith('cuda') else ''}; {args.device}"
        f"{' (' + torch.cuda.get_device_name(args.device) + ')' if args.device.startswith('cuda') else ''}; "
        f"torch {torch.__version__}",
        flush=True,
    )

    ready, failed = {}, {}
    runs: dict = {row: [] for row in rows}
    for _ in range(args.cold_repeats if cold else 0):  # rows in turns: a slow spell of the machine hits each
        for row in (r for r in rows if r not in failed):
            r = measure_cold(row, args, batch_size, seq)
            if "failed" in r:
                failed[row] = f"cold: {r['failed']}"
                print(f"  {row}: FAILED alone: {r['failed']}", flush=True)
                continue
            runs[row].append(r)
            print(
                f"  {row} (alone, cold): first step {r['first_s']:.1f} s, peak {r['peak_gib']:.2f} GiB, "
                f"loss {r['first_loss']:.4f}",
                flush=True,
            )
    alone = {row: cold_summary(r) for row, r in runs.items() if r and row not in failed}
    for row in rows:
        if row in failed:
            continue
        try:
            r = prepare(row, base, args, batch, sync)
            ready[row] = {**r, **alone.get(row, {}), "warm": {k: r[k] for k in MEASURED}}
            print(
                f"  {row}: first step {r['first_s']:.1f} s{' (warm)' if cold else ''}, loss {r['first_loss']:.4f}",
                flush=True,
            )
        except Exception as err:  # noqa: BLE001 - reported in the table; the other rows go on
            failed[row] = failure(err)
            print(f"  {row}: FAILED: {failed[row]}", flush=True)
    times: dict = {row: [] for row in ready}
    for _ in range(args.rounds):
        for row, r in ready.items():
            try:
                times[row].append(best(r["step"], 1, args.steps, sync))
            except Exception as err:  # noqa: BLE001
                failed[row] = f"while timed: {failure(err)}"
    return report(rows, ready, times, failed, config, params, batch_size, seq, cold, args)


def report(
    rows: list, ready: dict, times: dict, failed: dict, config, params: int, batch_size: int, seq: int, cold: bool, args
) -> int:
    verdicts = Verdicts(TOLERANCES["bf16"])
    flops = flops_per_step(config, params, batch_size * seq, seq)
    eager = ready.get("eager")
    ms = {row: min(times[row]) * 1e3 for row in ready if row not in failed and times.get(row)}

    def error(r: dict) -> float | None:
        """The first loss's error against eager's: the larger of the cold one's and this process's."""
        if eager is None:
            return None
        pairs = [(loss, eager["first_loss"]) for loss in r.get("first_loss_runs", [r["first_loss"]])]
        pairs.append((r["warm"]["first_loss"], eager["warm"]["first_loss"]))
        return worst(*(abs(loss - base) / abs(base) for loss, base in pairs))

    if cold:
        repeats = (
            f" ({args.cold_repeats} processes per row, rows in turns: the median first step, its range, "
            "and the largest peak)"
            if args.cold_repeats > 1
            else ""
        )
        print(f"\ncold: each row's first step and peak measured alone, in a fresh process with empty caches{repeats}")
    c = "cold " if cold else ""
    print(
        f"\n| row | ms / step | vs eager | vs torch.compile | MFU | {c}peak GiB | {c}alloc. peak GiB | {c}first step s "
        "| first loss | rel. error |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results = []
    for row in rows:
        if row not in ms:
            print(f"| {row} | n/a | {failed.get(row, 'not run')} | | | | | | | |")
            results.append({"row": row, "failed": failed.get(row, "not run")})
            continue
        r = ready[row]
        err = error(r)
        wrong = verdicts.refusal(row, err)
        ratio = lambda other, row=row: f"{ms[row] / ms[other]:.2f}x" if other in ms else "-"  # noqa: E731
        mfu = flops / (ms[row] / 1e3) / (args.peak_tflops * 1e12)
        cells = [
            wrong or f"{ms[row]:.1f}",
            ratio("eager"),
            ratio("torch.compile"),
            f"{100 * mfu:.1f}%",
            f"{r['peak_gib']:.2f}",
            f"{r['alloc_peak_gib']:.2f}",
            f"{r['first_s']:.1f}" + first_range(r),
            f"{r['first_loss']:.4f}",
            "" if err is None else f"{err:.1e}",
        ]
        print(f"| {row} | " + " | ".join(cells) + " |")
        results.append(
            {
                "row": row,
                "ms": ms[row],
                "mfu": mfu,
                "peak_gib": r["peak_gib"],
                "alloc_peak_gib": r["alloc_peak_gib"],
                "first_s": r["first_s"],
                **({"first_s_runs": r["first_s_runs"]} if "first_s_runs" in r else {}),
                "first_loss": r["first_loss"],
                "error": err,
                **({"warm": r["warm"]} if cold else {}),
            }
        )
    print(
        f"MFU: (6 x {params / 1e6:.1f}M parameters x {batch_size * seq} tokens "
        f"+ 12 x layers x hidden x {seq} x tokens) = "
        f"{flops / 1e12:.2f} TFLOP per step, over {args.peak_tflops:g} TFLOP/s"
    )
    targets = [
        (
            "hir default <= 0.95x torch.compile (step)",
            "hir default",
            "torch.compile",
            lambda a, b: ms[a] <= 0.95 * ms[b],
        ),
        ("hir eager <= 1.05x eager (step)", "hir eager", "eager", lambda a, b: ms[a] <= 1.05 * ms[b]),
        (
            f"hir default {c}peak (requested bytes) <= torch.compile's",
            "hir default",
            "torch.compile",
            lambda a, b: ready[a]["peak_gib"] <= ready[b]["peak_gib"],
        ),
        (
            f"hir default {c}first step{' (medians)' if cold and args.cold_repeats > 1 else ''} <= torch.compile's",
            "hir default",
            "torch.compile",
            lambda a, b: ready[a]["first_s"] <= ready[b]["first_s"],
        ),
    ]
    for text, a, b, met in targets:
        print(
            f"target {text}: "
            f"{'met' if a in ms and b in ms and met(a, b) else 'NOT met' if a in ms and b in ms else 'n/a'}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "device": args.device,
                    "params": params,
                    "batch": batch_size,
                    "seq": seq,
                    "cold": cold,
                    "rows": results,
                },
                f,
                indent=1,
            )
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
