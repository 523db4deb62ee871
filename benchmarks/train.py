"""A Llama training step through ``hir.train_step`` against eager PyTorch and
``torch.compile``, in one invocation: ms per step, MFU, peak memory and the first step.

    python benchmarks/train.py                 # GPU: ~1B Llama (d 2048, 16 layers, 32/8 heads, vocab 32000,
                                               # untied), batch 4 x 2048, bf16 autocast, fused AdamW
    python benchmarks/train.py --tiny          # a tiny Llama on the CPU: the script's own check (torch.compile's
                                               # row compiles C++ kernels: most of the time; --rows to leave it out)

Weights are random from a config (seed 0, no download); every row trains its own copy of
the same weights on the same batch, with its own ``torch.optim.AdamW`` (fused on CUDA).
Rows:

- ``eager``: ``loss_fn(model, ids, labels).backward(); optimizer.step(); zero_grad()``.
- ``torch.compile``: the model compiled (``torch.compile(model)``, default mode) and the
  optimizer's step compiled too (``torch.compile(optimizer.step)``).
- ``hir eager``: ``hir.train_step(..., graph=False, compile_kernels=False)``: the program's
  ops one by one.
- ``hir default``: ``hir.train_step(...)`` (CUDA graphs, compiled regions, each compiled
  whole).
- ``hir default (regional)``: the same with ``regional=True`` (a region cut at its repeated
  layers, each distinct piece compiled once).

``first step`` is the time from building the row (its model on the device) to its first
loss (import, lowering, compilation, the step); ``peak`` is the most memory the row's
model, optimizer, gradients and step held at once over its build and first steps, less what
the other rows hold: the bytes its tensors asked for (the allocator's ``requested_bytes``
peak), and beside it ``alloc. peak``, ``torch.cuda.max_memory_allocated``: the caching
allocator's blocks, which also count what a block was rounded up to, and so depend on
what the rows before left cached (the same row measured 27.2-27.9 GiB from run to run);
the first step's loss
(same weights, same batch) is checked against eager's (a wrong row prints WRONG). Rows are
timed in turns: ``--rounds`` rounds of ``--steps`` steps each, the best round per row.
MFU = (6 x parameters x tokens + 12 x layers x hidden x sequence x tokens) / step time /
``--peak-tflops`` (989: H100/H200 SXM dense bf16). A row that fails prints n/a with the
reason; the others go on.
"""

import argparse
import copy
import gc
import json
import os
import sys
import time
from collections.abc import Callable

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import TOLERANCES, Verdicts, best  # noqa: E402

FULL = dict(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
TINY = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    tie_word_embeddings=False,
)
ROWS = ["eager", "torch.compile", "hir eager", "hir default", "hir default (regional)"]


def loss_fn_for(device: str) -> Callable:
    kind = "cuda" if device.startswith("cuda") else "cpu"

    def loss_fn(model, ids, labels):
        with torch.autocast(kind, dtype=torch.bfloat16):
            return model(ids, labels=labels).loss

    return loss_fn


def make_optimizer(model: torch.nn.Module, device: str, fused: bool = False) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=fused or device.startswith("cuda"))


def build(row: str, model: torch.nn.Module, args: argparse.Namespace, batch: tuple) -> Callable[[], torch.Tensor]:
    """The row's step: a callable running one training step on ``batch``, returning the loss."""
    import hir

    loss_fn = loss_fn_for(args.device)
    opt = make_optimizer(model, args.device, getattr(args, "fused", False))
    if row == "eager":

        def step():
            loss = loss_fn(model, *batch)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()

        return step
    if row == "torch.compile":
        compiled = torch.compile(model)
        opt_step = torch.compile(opt.step)

        def step():
            loss = loss_fn(compiled, *batch)
            loss.backward()
            opt_step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()

        return step
    options = {
        "hir eager": {"graph": False, "compile_kernels": False},
        "hir default (regional)": {"regional": True},
    }.get(row, {})
    train = hir.train_step(model, opt, loss_fn, batch, **options)

    def step():
        return train(*batch)

    step.hir_step = train  # (benchmarks/profile_train.py reads its programs)
    return step


def memory(device: str) -> tuple[Callable[[], None], Callable[[], tuple[int, int]], Callable[[], tuple[int, int]]]:
    """(reset the peaks, bytes (requested, allocated) now, peak bytes (requested, allocated))
    on ``device`` (zeros on the CPU)."""
    if device.startswith("cuda"):

        def stats(kind: str) -> tuple[int, int]:
            s = torch.cuda.memory_stats(device)
            return s[f"requested_bytes.all.{kind}"], s[f"allocated_bytes.all.{kind}"]

        return torch.cuda.reset_peak_memory_stats, lambda: stats("current"), lambda: stats("peak")
    return (lambda: None), (lambda: (0, 0)), (lambda: (0, 0))


def prepare(row: str, base: torch.nn.Module, args: argparse.Namespace, batch: tuple, sync) -> dict:
    """Build the row on its own copy of the weights, run its first steps; what it measured."""
    reset, allocated, peak = memory(args.device)
    gc.collect()  # the rows before this one leave no garbage that this row's compile would free
    sync()
    reset()
    before = allocated()
    model = copy.deepcopy(base).to(args.device)
    sync()
    start = time.perf_counter()
    step = build(row, model, args, batch)
    first_loss = step().item()
    first = time.perf_counter() - start
    for _ in range(2):
        step()
    sync()
    (requested, blocks), (requested_before, blocks_before) = peak(), before
    return {
        "step": step,
        "first_s": first,
        "first_loss": first_loss,
        "peak_gib": (requested - requested_before) / 2**30,
        "alloc_peak_gib": (blocks - blocks_before) / 2**30,
    }


def flops_per_step(config, params: int, tokens: int, seq: int) -> float:
    return 6.0 * params * tokens + 12.0 * config.num_hidden_layers * config.hidden_size * seq * tokens


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
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    batch_size, seq = args.batch or (2 if args.tiny else 4), args.seq or (32 if args.tiny else 2048)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"--rows: unknown {', '.join(unknown)} (rows: {', '.join(ROWS)})")

    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**(TINY if args.tiny else FULL))
    torch.manual_seed(0)
    base = LlamaForCausalLM(config)  # on the CPU: each row copies it to the device
    params = sum(p.numel() for p in base.parameters())
    ids = torch.randint(0, config.vocab_size, (batch_size, seq), generator=torch.Generator().manual_seed(1)).to(
        args.device
    )
    batch = (ids, ids.clone())
    sync = (lambda: torch.cuda.synchronize(args.device)) if args.device.startswith("cuda") else (lambda: None)
    print(
        f"Llama {params / 1e6:.1f}M parameters, {config.num_hidden_layers} layers, hidden {config.hidden_size}; "
        f"batch {batch_size} x {seq}; bf16 autocast; "
        f"AdamW{' (fused)' if args.fused or args.device.startswith('cuda') else ''}; {args.device}"
        f"{' (' + torch.cuda.get_device_name(args.device) + ')' if args.device.startswith('cuda') else ''}; "
        f"torch {torch.__version__}",
        flush=True,
    )

    ready, failed = {}, {}
    for row in rows:
        try:
            ready[row] = prepare(row, base, args, batch, sync)
            print(f"  {row}: first step {ready[row]['first_s']:.1f} s, loss {ready[row]['first_loss']:.4f}", flush=True)
        except Exception as err:  # noqa: BLE001 - reported in the table; the other rows go on
            failed[row] = f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"
            print(f"  {row}: FAILED: {failed[row]}", flush=True)
    times: dict = {row: [] for row in ready}
    for _ in range(args.rounds):
        for row, r in ready.items():
            try:
                times[row].append(best(r["step"], 1, args.steps, sync))
            except Exception as err:  # noqa: BLE001
                failed[row] = f"while timed: {type(err).__name__}: {str(err)[:300]}"
    return report(rows, ready, times, failed, config, params, batch_size, seq, args)


def report(
    rows: list, ready: dict, times: dict, failed: dict, config, params: int, batch_size: int, seq: int, args
) -> int:
    verdicts = Verdicts(TOLERANCES["bf16"])
    flops = flops_per_step(config, params, batch_size * seq, seq)
    base = ready.get("eager", {}).get("first_loss")
    ms = {row: min(times[row]) * 1e3 for row in ready if row not in failed and times.get(row)}
    print(
        "\n| row | ms / step | vs eager | vs torch.compile | MFU | peak GiB | alloc. peak GiB | first step s "
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
        error = None if base is None else abs(r["first_loss"] - base) / abs(base)
        wrong = verdicts.refusal(row, error)
        ratio = lambda other, row=row: f"{ms[row] / ms[other]:.2f}x" if other in ms else "-"  # noqa: E731
        mfu = flops / (ms[row] / 1e3) / (args.peak_tflops * 1e12)
        cells = [
            wrong or f"{ms[row]:.1f}",
            ratio("eager"),
            ratio("torch.compile"),
            f"{100 * mfu:.1f}%",
            f"{r['peak_gib']:.2f}",
            f"{r['alloc_peak_gib']:.2f}",
            f"{r['first_s']:.1f}",
            f"{r['first_loss']:.4f}",
            "" if error is None else f"{error:.1e}",
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
                "first_loss": r["first_loss"],
                "error": error,
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
            "hir default peak (requested bytes) <= torch.compile's",
            "hir default",
            "torch.compile",
            lambda a, b: ready[a]["peak_gib"] <= ready[b]["peak_gib"],
        ),
        (
            "hir default first step <= torch.compile's",
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
                {"device": args.device, "params": params, "batch": batch_size, "seq": seq, "rows": results}, f, indent=1
            )
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
