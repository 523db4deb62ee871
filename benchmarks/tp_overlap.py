"""One tensor-parallel MLP layer forward on N GPUs, end to end (issue 25): the Megatron MLP
(``Linear(d, hidden)``, tanh GELU, ``Linear(hidden, d)``, bf16) imported with
``hir.from_torch`` in its sequence-parallel form (tokens split: all-gather, fc1, gelu, fc2,
reduce-scatter) and its tensor-parallel form (tokens replicated: fc1, gelu, fc2,
all-reduce), lowered with the collectives whole and pipelined (copy-engine P2P, the
accumulating reduce-scatter ring, ``hir-lower-overlap``), eager and as CUDA-graph replays,
against hand-written torch (eagerly and captured in a CUDA graph), DTensor
``parallelize_module`` and PyTorch async-TP
(``torch.ops.symm_mem.fused_all_gather_matmul`` / ``fused_matmul_reduce_scatter`` called
directly: the SP form is what async-TP's micro-pipeline turns TP into), all in one run.

    python benchmarks/tp_overlap.py --emit DIR [--worlds 1,2,4,8] [--tokens 8192 --d-model 4096 --hidden 16384]
    torchrun --nproc_per_node=N benchmarks/tp_overlap.py --from DIR

``--emit`` imports here (the GPU machines have no torch-mlir) one SP and one TP module per
world size; ``--from`` runs the pair imported for the run's world size. Weights are not
carried: both sides build the model from the config and seed 0. Each row: median ms (CUDA
events, max over ranks; a form's rows timed in turns, each its best of ``--rounds``
rounds), ratio to the hand-written torch row, relative error of this rank's output against
a float32 reference (after the first call and after the timed calls). A row that cannot
run prints n/a and why; a row whose error is above its tolerance (bf16: 1e-2, f32: 1e-4)
prints WRONG instead of its time, and the script exits 1 listing them.
"""

import argparse
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import hir
from dist_timing import emit_or_run, graphed, init_nccl
from hir.interpreter import local_arguments
from hir.interpreter.backends.process_groups import shutdown
from overlap import candidate, hir_candidates, in_turns
from sp_mlp import DTYPES, make_model
from timing import TOLERANCES, Verdicts

WHOLE = "hir-convert-to-communication{backend=nccl},hir-lower"
P2P = "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda},hir-lower"
SP_PIPELINES = [
    WHOLE,
    P2P,
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda chunks=auto comm-stream=1},hir-lower",
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda accumulate=1 chunks=auto},hir-lower",
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda "
    "accumulate=1 chunks=auto transfer=push comm-stream=1},hir-lower",
    "hir-lower-overlap",
]
# The TP form's all-reduce overlapped: hir-p2p-pipeline's rs-ag form (the matmul + a
# copy-engine reduce-scatter of its rows pipelined, then one all-gather; the SP rows' best
# reduce-scatter options), the row blocks (chunked matmul + NCCL all-reduce, 4 blocks), and
# hir-lower-overlap (overlap=auto: rs-ag at these sizes by the rule of passes/p2p/cost.py).
TP_PIPELINES = [
    WHOLE,
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda "
    "allreduce=rs-ag chunks=auto comm-stream=1},hir-lower",
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{backend=cuda "
    "allreduce=rs-ag accumulate=1 chunks=auto},hir-lower",
    "hir-convert-to-communication{backend=nccl},hir-p2p-pipeline{allreduce=chunked chunks=4},hir-lower",
    "hir-lower-overlap",
]


def placements(sequence: bool) -> dict:
    from torch.distributed.tensor import Replicate, Shard

    io = {"input0": Shard(0), "output0": Shard(0)} if sequence else {}
    return {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1), "2.bias": Replicate(), **io}


def emit(args: argparse.Namespace) -> None:
    os.makedirs(args.emit, exist_ok=True)
    for world in (int(w) for w in args.worlds.split(",")):
        config = {
            "tokens": args.tokens,
            "d_model": args.d_model,
            "hidden": args.hidden,
            "dtype": args.dtype,
            "world": world,
        }
        model, x = make_model(config)
        for form in ("sp", "tp"):
            program = hir.from_torch(model, (x,), mesh=list(range(world)), placements=placements(form == "sp"))
            with open(os.path.join(args.emit, f"{form}_w{world}.mlir"), "w") as f:
                f.write(str(program.module))
        with open(os.path.join(args.emit, f"config_w{world}.json"), "w") as f:
            json.dump(config, f)
        print(f"wrote {args.emit}/{{sp,tp}}_w{world}.mlir: {config}", flush=True)


def _dtensor(model: torch.nn.Module, sequence: bool, world: int):
    """``parallelize_module`` of a copy of ``model`` (fc1 colwise, fc2 rowwise; SP: tokens
    split in and out); returns its forward on this rank's input."""
    import copy

    from torch.distributed.tensor import DeviceMesh, Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = DeviceMesh("cuda", list(range(world)))
    layout = Shard(0) if sequence else Replicate()
    plan = {"0": ColwiseParallel(input_layouts=layout), "2": RowwiseParallel(output_layouts=layout)}
    return parallelize_module(copy.deepcopy(model), mesh, plan)


def _async_tp(x_local, w1, b1, w2, b2):
    """PyTorch async-TP's fused symmetric-memory ops on the SP MLP: all-gather+fc1, then
    fc2+reduce-scatter (the input staged once in symmetric memory, as async-TP does)."""
    import warnings

    import torch.distributed._symmetric_memory as symm_mem

    group = dist.group.WORLD.group_name
    with warnings.catch_warnings():  # deprecated (a no-op) in newer torch; needed in older
        warnings.simplefilter("ignore")
        symm_mem.enable_symm_mem_for_group(group)
    sym = symm_mem.empty(x_local.shape, device=x_local.device, dtype=x_local.dtype)
    sym.copy_(x_local)
    w1t, w2t = w1.t(), w2.t()

    def forward():
        _, (h,) = torch.ops.symm_mem.fused_all_gather_matmul(sym, [w1t], gather_dim=0, group_name=group)
        h = F.gelu(h + b1, approximate="tanh")
        return torch.ops.symm_mem.fused_matmul_reduce_scatter(h, w2t, "sum", scatter_dim=0, group_name=group).add_(b2)

    return forward


def run(args: argparse.Namespace) -> int:
    faulthandler.dump_traceback_later(args.timeout, exit=True)  # a hung rank dumps stacks and exits
    rank = init_nccl()
    world = dist.get_world_size()
    path = os.path.join(args.from_dir, f"config_w{world}.json")
    if not os.path.exists(path):
        if rank == 0:
            print(f"skipped: no modules imported for {world} ranks in {args.from_dir} (emit with --worlds {world})")
        dist.destroy_process_group()
        return 0
    with open(path) as f:
        config = json.load(f)
    verdicts = Verdicts(TOLERANCES[config["dtype"]])
    dev = torch.device("cuda", rank)
    model, x = make_model(config)
    model, x = model.to(dev), x.to(dev)
    with torch.no_grad():
        full = model.float()(x.float())
        model = model.to(DTYPES[config["dtype"]])
    state = list(model.state_dict().values())
    if rank == 0:
        print(
            f"\nMLP layer forward, {world} GPU(s), {config['dtype']}, "
            f"tokens={config['tokens']} d_model={config['d_model']} hidden={config['hidden']} "
            f"({torch.cuda.get_device_name()}, torch {torch.__version__})"
        )
    for form in ("sp", "tp"):
        sequence = form == "sp"
        with open(os.path.join(args.from_dir, f"{form}_w{world}.mlir")) as f:
            text = f.read()
        local = [t.to(dev) for t in local_arguments(hir.parse(text, f"{form}.mlir"), state + [x], rank)]
        w1, b1, w2, b2, x_in = local
        reference = full.chunk(world)[rank] if sequence else full
        gathered, out = torch.empty_like(x), torch.empty_like(reference, dtype=x.dtype)

        def torch_sp(gathered=gathered, x_in=x_in, w1=w1, b1=b1, out=out, w2=w2, b2=b2):
            dist.all_gather_into_tensor(gathered, x_in)
            h = F.gelu(F.linear(gathered, w1, b1), approximate="tanh")
            dist.reduce_scatter_tensor(out, h @ w2.t())
            return out.add_(b2)

        def torch_tp(x_in=x_in, w1=w1, b1=b1, w2=w2, b2=b2):
            h = F.gelu(F.linear(x_in, w1, b1), approximate="tanh")
            y = h @ w2.t()
            dist.all_reduce(y)
            return y.add_(b2)

        with torch.no_grad():
            hand = torch_sp if sequence else torch_tp
            calls = (
                "all_gather_into_tensor, linear, gelu, matmul, reduce_scatter_tensor"
                if sequence
                else "linear, gelu, matmul, all_reduce"
            )
            items = [
                (
                    f"torch {form.upper()} (hand-written: {calls})",
                    hand,
                    reference,
                ),
                # the same calls captured in a CUDA graph: what hir's graph rows are set against
                candidate(
                    f"torch {form.upper()} hand-written, captured in a CUDA graph",
                    lambda hand=hand: graphed(hand),
                    reference,
                ),
            ]

            def dtensor_forward(sequence=sequence, x_in=x_in):
                module = _dtensor(model, sequence, world)
                return lambda x_in=x_in: module(x_in)

            items.append(candidate("DTensor parallelize_module", dtensor_forward, reference))
            if sequence:
                items.append(
                    candidate(
                        "PyTorch async-TP (fused_all_gather_matmul, gelu, fused_matmul_reduce_scatter)",
                        lambda b1=b1, b2=b2, w1=w1, w2=w2, x_in=x_in: _async_tp(x_in, w1, b1, w2, b2),
                        reference,
                    )
                )
            items += hir_candidates(
                lambda form=form, text=text: hir.parse(text, f"{form}.mlir"),
                SP_PIPELINES if sequence else TP_PIPELINES,
                local,
                reference,
                graph=True,
            )
            rows = in_turns(items, args.rounds)  # every row of the form in turns, the hand-written one first in round 0
            del items
            if rank == 0:
                print(
                    f"\n{form.upper()} MLP, {world} GPU(s)\n| row | ms | x "
                    f"torch {form.upper()} | rel. error |\n|---|---:|---:|---:|",
                    flush=True,
                )
            verdicts.table = f"{form.upper()} MLP, {world} GPU(s)"
            verdicts.print_rows(rows, rows[0][1], show=rank == 0)
    shutdown()  # hir's team groups first, then the default group
    return verdicts.finish(show=rank == 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--emit", metavar="DIR", help="import here: DIR/{sp,tp}_w<N>.mlir + config_w<N>.json per world size")
    p.add_argument("--from", dest="from_dir", metavar="DIR", help="run DIR's modules under torchrun, one GPU per rank")
    p.add_argument("--worlds", default="1,2,4,8", help="world sizes to import for (--emit)")
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--d-model", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=16384)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument(
        "--rounds", type=int, default=5, help="rounds of the rows timed in turns (a row's time: its best round)"
    )
    p.add_argument("--timeout", type=float, default=540, help="seconds before a hung run dumps its stacks and exits")
    return emit_or_run(p, emit, run)


if __name__ == "__main__":
    sys.exit(main())
