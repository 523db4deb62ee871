"""Training a ~1B Llama on several GPUs: hir's sharded steps against FSDP2, DTensor TP+SP,
async-TP and torchtitan's FSDP x TP, in one invocation per machine (torchrun, one rank a
GPU under NCCL; on the CPU one Gloo rank a process for the script's own check):

    torchrun --standalone --nproc_per_node=8 benchmarks/train_parallel.py          # ~1B Llama, 2048 tokens a sequence
    torchrun --standalone --nproc_per_node=2 benchmarks/train_parallel.py --tiny   # a tiny Llama on CPU Gloo ranks

The model: hidden 2048, intermediate 8192, 16 layers, 32 heads / 8 KV heads, vocab 32000,
untied embeddings, random weights from the config (seed 0, no download), AdamW (fused on
CUDA). Rows and groups: ``benchmarks/train_parallel_rows.py``. Each group's rows are built
one after another (each on its own copy of the weights, the same global batch), then timed
in turns (``--rounds`` rounds of ``--steps`` steps, the best round per row, the slowest
rank's time); then the group is freed before the next.

Every row's first ``--checked`` losses (each step's loss of the global batch) are checked
against FSDP2 eager's of the same steps (the ``fsdp`` group's own row; for the other groups
FSDP2 eager with every rank computing the whole batch, which steps as one process on it):
a row above 1e-2 relative prints WRONG and the script exits 1. A row that cannot run here
(async-TP without CUDA, the 2-D mesh on fewer than 4 ranks) prints why; one that fails
prints n/a with its error; one not built within ``--budget`` seconds prints n/a.

Per row: ms per step, tokens per second per GPU, MFU (6 x parameters x tokens + 12 x layers
x hidden x sequence x tokens, over the GPUs and ``--peak-tflops``), the peak memory per GPU
(``torch.cuda.max_memory_allocated`` over the row's build and checked steps, less what was
allocated before it; the largest over the ranks), and the first step (build to first loss).
"""

import argparse
import faulthandler
import gc
import os
import re
import sys
import time
from typing import Any

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dist_timing import init_ranks, turns  # noqa: E402
from timing import TOLERANCES, Verdicts  # noqa: E402
from train_parallel_rows import ANCHORS, ROWS, build, reference, why_not  # noqa: E402
from train_rows import FULL, TINY, flops_per_step  # noqa: E402

TINY_PARALLEL = dict(TINY, num_attention_heads=8, num_key_value_heads=4)  # KV heads that 2 and 4 ranks divide


def sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def max_over_ranks(value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64, device="cuda" if torch.cuda.is_initialized() else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def global_loss(loss: torch.Tensor, local: bool) -> float:
    """The step's loss over the global batch: a rank's own mean averaged over the ranks."""
    if not local:
        return loss.item()
    total = loss.detach().float().clone().reshape(1)
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def prepare(make, checked: int) -> dict:
    """Build a row and run its checked steps: its losses, first step and peak memory."""
    cuda = torch.cuda.is_initialized()
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    sync()
    start = time.perf_counter()
    row = make()
    losses = [global_loss(row.step(), row.local)]
    first = time.perf_counter() - start
    losses += [global_loss(row.step(), row.local) for _ in range(checked - 1)]
    sync()
    peak = (torch.cuda.max_memory_allocated() - before) / 2**30 if cuda else None
    return {
        "row": row,
        "note": row.note,
        "losses": losses,
        "first_s": max_over_ranks(first),
        "peak_gib": None if peak is None else max_over_ranks(peak),
    }


def timed(step, steps: int) -> float:
    """Seconds per step over ``steps`` steps, the slowest rank's."""
    dist.barrier()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return max_over_ranks((time.perf_counter() - start) / steps)


def run_group(
    group: str, rows: list, base, batch: tuple, anchor: list | None, args, clock: float
) -> tuple[dict, list | None]:
    """The group's rows built, checked and timed in turns: ``{row: result}`` (a result
    with ``ms`` and ``losses``, or ``why`` it did not run) and the reference losses."""
    world, results, ready = dist.get_world_size(), {}, {}
    whys = {name: why_not(name, args.device, world, base.config) for name in rows}
    if anchor is None and group != "fsdp" and None in whys.values():  # FSDP2 eager on the whole batch, on every rank
        anchor = prepare(lambda: reference(base, args.device, world, batch), args.checked)["losses"]
        gc.collect()
    for name in rows:
        why = whys[name]
        if why is None and time.perf_counter() - clock > args.budget:
            why = f"not built: the --budget of {args.budget:g} s was spent"
        if why is not None:
            results[name] = {"why": why}
            continue
        try:
            ready[name] = prepare(lambda name=name: build(name, base, args.device, world, batch), args.checked)
            losses = ", ".join(f"{x:.4f}" for x in ready[name]["losses"])
            say(f"  {group}: {name}: first step {ready[name]['first_s']:.1f} s, losses {losses}")
        except Exception as err:  # noqa: BLE001 - reported in the table; the other rows go on
            results[name] = {"why": f"failed: {type(err).__name__}: {(str(err).splitlines() or [''])[0][:240]}"}
            say(f"  {group}: {name}: {results[name]['why']}")
    names = list(ready)
    best = {n: float("inf") for n in names}
    for _, i in turns(len(names), args.rounds):
        best[names[i]] = min(best[names[i]], timed(ready[names[i]]["row"].step, args.steps))
    for name in names:
        results[name] = {**{k: v for k, v in ready[name].items() if k != "row"}, "ms": best[name] * 1e3}
    ready.clear()
    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if group == "fsdp":  # its own FSDP2 eager row
        anchor = results.get("FSDP2 eager", {}).get("losses")
    return results, anchor


def say(text: str) -> None:
    if dist.get_rank() == 0:
        print(text, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny Llama (2 layers, hidden 64), 32 tokens a sequence, on the CPU"
    )
    parser.add_argument(
        "--device", choices=("cuda", "cpu"), default=None, help="default: cuda when available (not with --tiny)"
    )
    parser.add_argument("--seq", type=int, default=None, help="tokens a sequence (default 2048; --tiny 32)")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default 16; --tiny 2)")
    parser.add_argument("--groups", default=",".join(ROWS), help=f"comma-separated subset of {', '.join(ROWS)}")
    parser.add_argument(
        "--rows", default=None, help="a regex: only the rows it finds (default: all); the others print 'not selected'"
    )
    parser.add_argument(
        "--tp-batch",
        type=int,
        default=4,
        help="the tp group's global batch (default 4; hir's row steps one "
        "sequence a micro-batch, so its import grows with it)",
    )
    parser.add_argument("--steps", type=int, default=3, help="steps a timed round (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each row once a round in turns (default 2)")
    parser.add_argument(
        "--checked", type=int, default=3, help="steps whose losses are checked against FSDP2 eager's (default 3)"
    )
    parser.add_argument(
        "--budget", type=float, default=float("inf"), help="seconds after which no further row is built"
    )
    parser.add_argument(
        "--timeout", type=float, default=0, help="dump every rank's stacks and exit after this many seconds"
    )
    parser.add_argument(
        "--peak-tflops", type=float, default=989.0, help="dense bf16 peak a GPU for MFU (default 989: H100/H200 SXM)"
    )
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    if any(g not in ROWS for g in groups):
        parser.error(f"--groups: one of {', '.join(ROWS)}")
    if args.timeout:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    clock = time.perf_counter()
    init_ranks(args.device)
    world = dist.get_world_size()

    from transformers import LlamaConfig, LlamaForCausalLM

    sizes: dict[str, Any] = dict(
        TINY_PARALLEL if args.tiny else FULL, num_hidden_layers=args.layers or (2 if args.tiny else 16)
    )
    config = LlamaConfig(**sizes)
    torch.manual_seed(0)
    base = LlamaForCausalLM(config)  # on the CPU, the same on every rank: each row copies it to its device
    params = sum(p.numel() for p in base.parameters())
    seq = args.seq or (32 if args.tiny else 2048)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    fused = " (fused)" if args.device == "cuda" else ""
    say(
        f"Llama {params / 1e6:.1f}M parameters, {config.num_hidden_layers} layers, hidden {config.hidden_size}, "
        f"{seq} tokens a sequence; {world} ranks on {args.device} ({device_name}); torch {torch.__version__}; "
        f"AdamW{fused}"
    )
    say(
        "Mixed precision: FSDP2 rows MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); DTensor TP rows and "
        "hir rows bf16 autocast on fp32 parameters (fp32 gathers, gradients and AdamW state)"
    )

    selected = re.compile(args.rows) if args.rows else None
    table, anchors = [], {}
    for group in groups:
        sequences = {"fsdp": 4 * world, "tp": args.tp_batch, "fsdp_tp": 4}[group]
        ids = torch.randint(0, config.vocab_size, (sequences, seq), generator=torch.Generator().manual_seed(1)).to(
            args.device
        )
        rows = [
            r for r in ROWS[group] if selected is None or selected.search(r) or (group == "fsdp" and r == "FSDP2 eager")
        ]
        say(f"group {group}: global batch {sequences} x {seq}; rows {', '.join(rows)}")
        shared = anchors.get(sequences) if group != "fsdp" else None  # the tp and fsdp_tp groups' batch of 4
        results, reference_losses = run_group(group, rows, base, (ids, ids.clone()), shared, args, clock)
        if group != "fsdp" and reference_losses is not None:
            anchors[sequences] = reference_losses
        table += [(group, r, results[r], reference_losses, sequences * seq) for r in ROWS[group] if r in results]
        table += [(group, r, {"why": "not selected (--rows)"}, None, 0) for r in ROWS[group] if r not in results]
    return report(table, config, params, seq, world, args)


def report(table: list, config, params: int, seq: int, world: int, args) -> int:
    verdicts = Verdicts(TOLERANCES["bf16"])
    show = dist.get_rank() == 0
    ms = {(g, r): res["ms"] for g, r, res, _, _ in table if "ms" in res}
    lines = [
        "",
        "| group | row | ms / step | vs anchor | tokens/s per GPU | MFU | peak GiB per GPU | first step s "
        "| max rel. error of the losses |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group, row, res, ref, tokens in table:
        if "ms" not in res:
            lines.append(f"| {group} | {row} | n/a | {res['why']} | | | | | |")
            continue
        errors = [abs(a - b) / abs(b) for a, b in zip(res["losses"], ref or [])]
        error = max(errors) if errors else None
        wrong = verdicts.refusal(f"{group}: {row}", error)
        anchor = ms.get((group, ANCHORS[group]))
        mfu = flops_per_step(config, params, tokens, seq) / world / (res["ms"] / 1e3) / (args.peak_tflops * 1e12)
        cells = [
            wrong or f"{res['ms']:.1f}",
            f"{res['ms'] / anchor:.2f}x" if anchor else "-",
            f"{tokens / world / (res['ms'] / 1e3):,.0f}",
            f"{100 * mfu:.1f}%",
            "-" if res["peak_gib"] is None else f"{res['peak_gib']:.2f}",
            f"{res['first_s']:.1f}",
            "no reference" if error is None else f"{error:.1e}",
        ]
        lines.append(
            f"| {group} | {row}{' (' + res['note'] + ')' if res['note'] else ''} | " + " | ".join(cells) + " |"
        )
    lines.append(
        f"Anchors (vs anchor): {'; '.join(f'{g}: {a}' for g, a in ANCHORS.items())}. Losses checked: the first "
        f"{args.checked} steps' against FSDP2 eager's (tolerance 1e-2 relative). MFU over {args.peak_tflops:g} "
        "TFLOP/s a GPU."
    )
    for group, hir_row, factor in (
        ("fsdp", "hir FSDP", 0.9),
        ("tp", "hir TP+SP", 0.9),
        ("fsdp_tp", "hir FSDP x TP", 1.0),
    ):
        a, b = ms.get((group, hir_row)), ms.get((group, ANCHORS[group]))
        lines.append(
            f"target {hir_row} <= {factor}x {ANCHORS[group]}: "
            + ("n/a" if a is None or b is None else "met" if a <= factor * b else f"NOT met ({a / b:.2f}x)")
        )
    if show:
        print("\n".join(lines), flush=True)
    status = verdicts.finish(show)
    dist.barrier()
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
