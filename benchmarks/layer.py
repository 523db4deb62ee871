"""A whole transformer layer forward on N GPUs, end to end (issue 39): the LLaMA block of
benchmarks/block.py (test/Frontend/Inputs/llama_block.py: pre-norm RMSNorm, attention with
RoPE, causal SDPA and grouped-query k/v heads, SwiGLU MLP; bf16, batch 1) imported with
``hir.from_torch`` in its tensor-parallel form (Megatron: q/k/v/gate/up column-parallel,
o/down row-parallel, tokens replicated: an all-reduce after attention and after the MLP)
and its sequence-parallel form (tokens split: all-gather before attention and the MLP,
reduce-scatter after), against, in one run:

- hand-written torch TP and SP (the same math with ``dist.all_reduce`` /
  ``all_gather_into_tensor`` / ``reduce_scatter_tensor``), eager and captured in a CUDA graph;
- DTensor ``parallelize_module``: the TP plan, and the SP plan (``SequenceParallel`` norms,
  each norm's output gathered once by ``PrepareModuleOutput``; o/down ``RowwiseParallel``
  scattering tokens);
- ``torch.compile`` with async-TP (``torch._inductor.config._micro_pipeline_tp``, symmetric
  memory on the group) of the hand-written SP written with functional collectives; the row
  says how many all-gather+matmul / matmul+reduce-scatter fusions inductor made;
- hir: "default" (collectives whole: ``hir-convert-to-communication{backend=nccl},hir-lower``,
  ``graph="auto"``) and ``hir-lower-overlap`` (eagerly, then as a CUDA graph), each form.

    python benchmarks/layer.py --emit DIR [--worlds 2,4] [--small]       # import here
    torchrun --nproc_per_node=N benchmarks/layer.py --from DIR           # run (N GPUs)
    torchrun --nproc_per_node=2 benchmarks/layer.py --from DIR --device cpu   # the CPU check (Gloo; --small modules)

Defaults: seq 8192, d_model 4096, 32 heads, 8 k/v heads, hidden 11008 (LLaMA-7B's layer
with GQA); ``--small``: seq 64, d_model 128, 8 heads, 4 k/v heads, hidden 256. Weights are
not carried: each rank builds the block from the config and seed 0 (block.py's ``make``).
Rows are timed in turns, each the best over ``--rounds`` rounds of a median of ``--iters``
calls (CUDA events, max over ranks); the ratio is to the best hand-written row; the error
is relative to the block computed in float32, after the first call and after the timing.
A row whose error is above 1e-2 prints WRONG instead of its time and the script exits 1; a
row that cannot run prints n/a and why.
"""

import argparse
import copy
import faulthandler
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

import hir
from block import make
from dist_timing import (
    add_emit_run_arguments,
    bench_in_turns,
    emit_or_run,
    graphed,
    init_ranks,
    lowered_collectives,
    relerr,
    selected,
)
from hir.interpreter import local_arguments
from hir.interpreter.backends.process_groups import shutdown
from layer_baselines import (
    Hand,
    async_tp,
    dtensor_forward,
    llama_block,
    nccl_gather,
    nccl_scatter,
)
from overlap import hir_callable
from timing import TOLERANCES, Verdicts, worst

WHOLE = "hir-convert-to-communication{backend=nccl},hir-lower"
SIZES = {
    "default": {"seq": 8192, "d_model": 4096, "heads": 32, "kv_heads": 8, "hidden": 11008},
    "small": {"seq": 64, "d_model": 128, "heads": 8, "kv_heads": 4, "hidden": 256},
}


def case(config: dict) -> dict:
    """block.py's case for ``config``: batch 1 (the SP forms split the sequence axis)."""
    return {
        "kind": "llama",
        "shape": [1, config["seq"], config["d_model"]],
        "heads": config["heads"],
        "kv_heads": config["kv_heads"],
        "hidden": config["hidden"],
        "dtype": config["dtype"],
    }


def placements(sequence: bool) -> dict:
    return llama_block()["sp_placements" if sequence else "tp_placements"]()


def emit(args: argparse.Namespace) -> None:
    os.makedirs(args.emit, exist_ok=True)
    for world in (int(w) for w in args.worlds.split(",")):
        config = {**SIZES["small" if args.small else "default"], "dtype": "bf16", "world": world}
        if config["kv_heads"] % world or config["hidden"] % world:
            raise SystemExit(
                f"error: {world} ranks do not divide {config['kv_heads']} k/v heads and hidden {config['hidden']}"
            )
        model, x = make(case(config), torch.device("cpu"))
        config["collectives"] = {}
        for form in ("tp", "sp"):
            program = hir.from_torch(model, (x,), mesh=list(range(world)), placements=placements(form == "sp"))
            text = str(program.module)
            with open(os.path.join(args.emit, f"{form}_w{world}.mlir"), "w") as f:
                f.write(text)
            config["collectives"][form] = lowered_collectives(text, WHOLE)
        with open(os.path.join(args.emit, f"config_w{world}.json"), "w") as f:
            json.dump(config, f)
        print(f"wrote {args.emit}/{{tp,sp}}_w{world}.mlir: {config}", flush=True)


@dataclass
class Result:
    """One row of the table: its function (None: it cannot run here, ``why``), time, error."""

    label: str
    form: str  # "tp" or "sp": which reference its output is checked against
    handwritten: bool  # a candidate for the ratio's base
    fn: Callable[[], torch.Tensor] | None = None
    ms: float | None = None
    error: float | None = None
    why: str = ""
    setup_s: float = 0.0  # building it and its first call (import, lowering, compiles, capture)


def within(started: float, budget: float, dev: torch.device) -> bool:
    """Whether every rank is within ``budget`` seconds of ``started`` (one decision for all
    ranks: a row one rank skipped and another built would pair their collectives wrongly)."""
    ok = torch.tensor([float(time.perf_counter() - started < budget)], device=dev)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    return bool(ok.item())


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # torch >= 2.12 calls all_gather_into_tensor / reduce_scatter_tensor deprecated on every call
    warnings.filterwarnings("ignore", message=r".*is deprecated. Please use `torch.distributed", category=FutureWarning)
    faulthandler.enable()  # a crashing rank (SIGSEGV, SIGABRT) prints its Python stack
    faulthandler.dump_traceback_later(args.timeout, exit=True)  # a hung rank dumps stacks and exits
    dev = init_ranks(args.device)
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(args.from_dir, f"config_w{world}.json")
    if not os.path.exists(path):
        if rank == 0:
            print(f"skipped: no modules imported for {world} ranks in {args.from_dir} (emit with --worlds {world})")
        dist.destroy_process_group()
        return 0
    with open(path) as f:
        config = json.load(f)
    texts = {}
    for form in ("tp", "sp"):
        with open(os.path.join(args.from_dir, f"{form}_w{world}.mlir")) as f:
            texts[form] = f.read()
    model, x = make(case(config), dev)
    with torch.no_grad():
        full = copy.deepcopy(model).float()(x.float())
    state = model.state_dict()
    local = {
        form: local_arguments(hir.parse(texts[form], f"{form}.mlir"), list(state.values()) + [x], rank)
        for form in texts
    }
    hand = Hand(dict(zip(state, local["tp"])), config, world)
    x_tokens = local["sp"][-1]
    references = {"tp": full, "sp": full.chunk(world, 1)[rank]}
    cuda = dev.type == "cuda"
    rows: list[tuple[str, str, bool, Callable[[], Callable | None] | None]] = [  # (label, form, hand-written, build)
        ("torch TP, hand-written (all_reduce after attention and MLP)", "tp", True, lambda: lambda: hand.tp(x)),
        ("torch TP, hand-written, CUDA graph", "tp", True, lambda: graphed(lambda: hand.tp(x)) if cuda else None),
        (
            "torch SP, hand-written (all_gather_into_tensor, reduce_scatter_tensor)",
            "sp",
            True,
            lambda: lambda: hand.sp(x_tokens, nccl_gather, nccl_scatter),
        ),
        (
            "torch SP, hand-written, CUDA graph",
            "sp",
            True,
            lambda: graphed(lambda: hand.sp(x_tokens, nccl_gather, nccl_scatter)) if cuda else None,
        ),
        ("DTensor parallelize_module, TP plan", "tp", False, lambda: dtensor_forward(model, False, world, x)),
        (
            "DTensor parallelize_module, SP plan (SequenceParallel)",
            "sp",
            False,
            lambda: dtensor_forward(model, True, world, x_tokens),
        ),
    ]
    # Built in this order (the rows the targets name first; --budget may leave the last unbuilt).
    for form in ("tp", "sp"):
        rows.append(
            (
                f"hir {form.upper()} default [{WHOLE}] (graph=auto)",
                form,
                False,
                lambda form=form: hir_callable(
                    lambda: hir.parse(texts[form], f"{form}.mlir"), WHOLE, local[form], dev, "auto"
                ),
            )
        )
    rows.append(("torch.compile async-TP (SP, _micro_pipeline_tp)", "sp", False, None))
    # On CUDA each form's overlap program runs eagerly first, then as a graph: a failure in
    # only the graph row is the capture's (issue 39's SP illegal access), in both the ops'.
    for form in ("tp", "sp"):
        for graph in (False, True) if cuda else (False,):
            rows.append(
                (
                    f"hir {form.upper()} [hir-lower-overlap] ({'CUDA graph' if graph else 'eager'})",
                    form,
                    False,
                    lambda form=form, graph=graph: hir_callable(
                        lambda: hir.parse(texts[form], f"{form}.mlir"), "hir-lower-overlap", local[form], dev, graph
                    ),
                )
            )
    rows = selected(rows, args.rows)
    results = []
    with torch.no_grad():
        for label, form, handwritten, build in rows:
            result = Result(label, form, handwritten)
            start = time.perf_counter()
            if not within(started, args.budget, dev):
                result.why = f"not built: the set-up passed --budget {args.budget:.0f} s"
                results.append(result)
                continue
            try:
                if build is None:  # async-TP: its label carries the fusions found
                    result.fn, fused = async_tp(hand, x_tokens, dev)
                    result.label += f" ({fused})"
                else:
                    result.fn = build()
                if result.fn is None:
                    result.why = "needs CUDA"
                else:
                    result.error = relerr(result.fn(), references[form])
            except Exception as err:  # an API this torch lacks, a plan it rejects: say why
                first = str(err).splitlines()[0] if str(err) else ""
                result.fn, result.why = None, f"{type(err).__name__}: {first[:120]}"
                if rank == 0 and len(first) > 120:  # the table keeps 120 characters; the log all (an op's location)
                    print(f"  {label}: {type(err).__name__}: {first}", flush=True)
            result.setup_s = time.perf_counter() - start
            results.append(result)
            if rank == 0:  # as it goes: a run that dies later still says which rows were built
                print(f"  {label}: {result.why or 'ready'} after {result.setup_s:.1f} s", flush=True)
        timed = [r for r in results if r.fn is not None]
        for r, ms in zip(timed, bench_in_turns([r.fn for r in timed], rounds=args.rounds, iters=args.iters)):
            r.ms = ms
            r.error = worst(
                r.error, relerr(r.fn(), references[r.form])
            )  # after the timed calls too: a race shows in either
    verdicts = Verdicts(TOLERANCES[config["dtype"]])
    verdicts.table = f"layer, {world} rank(s)"
    base = min((r.ms for r in timed if r.handwritten and r.error <= verdicts.tolerance), default=None)
    if rank == 0:
        name = torch.cuda.get_device_name() if cuda else "CPU, Gloo"
        print(
            f"\nLLaMA layer forward, {world} rank(s), {config['dtype']}, tokens "
            f"{config['seq']}, d_model {config['d_model']}, heads {config['heads']} "
            f"(k/v {config['kv_heads']}), hidden {config['hidden']} ({name},"
            f" torch {torch.__version__}); best of {args.rounds} rounds"
        )
        print("| row | ms | x best hand-written | rel. error |\n|---|---:|---:|---:|")
    verdicts.print_rows([(r.label, r.ms, r.error, r.why) for r in results], base, show=rank == 0)
    counts = config.get("collectives")  # recorded by --emit
    if rank == 0 and counts:  # hand-written and DTensor: TP 2 all-reduces, SP 2 all-gathers + 2 reduce-scatters
        print(
            "hir's collectives (hir-lower, imported here): "
            + "; ".join(
                f"{form.upper()} " + ", ".join(f"{n} {kind}" for kind, n in counts[form].items())
                for form in ("tp", "sp")
            ),
            flush=True,
        )
    if rank == 0:
        print(
            "set-up s (build + first call: imports, lowering, compiles, captures; rank 0): "
            + ", ".join(f"{r.label.split(' (')[0]} {r.setup_s:.1f}" for r in results),
            flush=True,
        )
    shutdown()  # hir's team groups first, then the default group
    return verdicts.finish(show=rank == 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_emit_run_arguments(
        p,
        emits="DIR/{tp,sp}_w<N>.mlir + config_w<N>.json",
        runs="DIR's modules",
        small="the small sizes",
        rounds=5,
        iters=10,
        iters_help="timed calls per row and round (the median counts)",
        budget=300,
        timeout=420,
    )
    return emit_or_run(p, emit, run)


if __name__ == "__main__":
    sys.exit(main())
