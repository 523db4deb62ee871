"""The sequence-parallel Megatron MLP imported from PyTorch (``hir.from_torch`` with SP
placements: tokens split on the mesh, fc1 column-parallel, fc2 row-parallel) on N GPUs: its
collectives run whole (NCCL) against hir-p2p-pipeline's copy-engine pipelines, eager and as
a CUDA-graph replay, beside a hand-written torch SP MLP (``all_gather_into_tensor``, linear,
gelu, matmul, ``reduce_scatter_tensor``), side by side in one run (issue 13).

    python benchmarks/sp_mlp.py --emit DIR [--world 2] [--tokens 8192 --d-model 4096 --hidden 16384]
    torchrun --nproc_per_node=2 benchmarks/sp_mlp.py --from DIR [--pipelines ...]

``--emit`` imports the module here (torch.export + the FX importer need torch-mlir's
``torch_mlir.fx``; the GPU machines have only the MLIR bindings) and writes the
program-level module and its config; ``--from`` runs it on one GPU per rank. The weights
are not carried (hundreds of MB at these sizes): both sides build the model from the same
config and seed, and the module takes its weights as arguments, sharded per rank as its
argument types place them (``hir.interpreter.local_arguments``). Each row prints the median
ms (CUDA events, max over ranks; the rows timed in turns, each its best of 5 rounds), its
ratio to the torch SP row and the relative error of this rank's rows against a float32
reference; a row whose error is above its tolerance (bf16: 1e-2, f32: 1e-4) prints WRONG
instead of its time, and the script exits 1 listing them.
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
from dist_timing import emit_or_run, init_nccl
from hir.interpreter import local_arguments
from hir.interpreter.backends.process_groups import shutdown
from overlap import hir_candidates, in_turns
from timing import TOLERANCES, Verdicts

COLLECTIVES = "hir-convert-to-communication{backend=nccl},hir-lower"
P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower"
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def make_model(config: dict) -> tuple[torch.nn.Module, torch.Tensor]:
    """The MLP and an input, from ``config`` (the same on every machine: seed 0)."""
    torch.manual_seed(0)
    d, hidden, dtype = config["d_model"], config["hidden"], DTYPES[config["dtype"]]
    model = torch.nn.Sequential(
        torch.nn.Linear(d, hidden), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(hidden, d)
    )
    x = torch.randn(config["tokens"], d)
    return model.to(dtype).eval(), x.to(dtype)


def placements() -> dict:
    from torch.distributed.tensor import Replicate, Shard

    return {
        "0.weight": Shard(0),
        "0.bias": Shard(0),
        "2.weight": Shard(1),
        "2.bias": Replicate(),
        "input0": Shard(0),
        "output0": Shard(0),
    }


def emit(args: argparse.Namespace) -> None:
    config = {
        "tokens": args.tokens,
        "d_model": args.d_model,
        "hidden": args.hidden,
        "dtype": args.dtype,
        "world": args.world,
    }
    model, x = make_model(config)
    program = hir.from_torch(model, (x,), mesh=list(range(args.world)), placements=placements())
    os.makedirs(args.emit, exist_ok=True)
    with open(os.path.join(args.emit, "sp_mlp.mlir"), "w") as f:
        f.write(str(program.module))
    with open(os.path.join(args.emit, "config.json"), "w") as f:
        json.dump(config, f)
    print(f"wrote {args.emit}/sp_mlp.mlir and config.json: {config}")


def run(args: argparse.Namespace) -> int:
    with open(os.path.join(args.from_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(args.from_dir, "sp_mlp.mlir")) as f:
        text = f.read()
    # A hang (a rank waiting on a peer that never comes) dumps every thread's stack and exits.
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    rank = init_nccl()
    world = dist.get_world_size()
    if world != config["world"]:
        raise SystemExit(
            f"error: the module was imported for {config['world']} "
            f"ranks; run it with --nproc_per_node={config['world']}"
        )
    dev = torch.device("cuda", rank)
    model, x = make_model(config)
    model, x = model.to(dev), x.to(dev)
    with torch.no_grad():
        reference = model.float()(x.float()).chunk(world)[rank]
        model = model.to(DTYPES[config["dtype"]])
    args_local = [
        t.to(dev)
        for t in local_arguments(hir.parse(text, "sp_mlp.mlir"), list(model.state_dict().values()) + [x], rank)
    ]
    w1, b1, w2, b2, x_local = args_local
    gathered = torch.empty_like(x)
    out = torch.empty_like(x_local)

    def torch_sp() -> torch.Tensor:
        dist.all_gather_into_tensor(gathered, x_local)
        h = F.gelu(F.linear(gathered, w1, b1), approximate="tanh")
        dist.reduce_scatter_tensor(out, h @ w2.t())
        return out.add_(b2)

    verdicts = Verdicts(TOLERANCES[config["dtype"]])
    with torch.no_grad():
        hand = ("torch SP (all_gather_into_tensor, linear, gelu, matmul, reduce_scatter_tensor)", torch_sp, reference)
        rows = in_turns(
            [
                hand,
                *hir_candidates(
                    lambda: hir.parse(text, "sp_mlp.mlir"), args.pipelines, args_local, reference, graph=True
                ),
            ]
        )
        if rank == 0:
            print(
                f"\nSP MLP, {world} GPUs, {config['dtype']}, tokens={config['tokens']} d_model={config['d_model']} "
                f"hidden={config['hidden']} ({torch.cuda.get_device_name()}, torch {torch.__version__})"
            )
            print("| row | ms | x torch SP | rel. error |\n|---|---:|---:|---:|", flush=True)
        verdicts.print_rows(rows, rows[0][1], show=rank == 0)
    shutdown()  # hir's team groups first, then the default group
    return verdicts.finish(show=rank == 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--emit", metavar="DIR", help="import here and write DIR/sp_mlp.mlir + config.json")
    p.add_argument("--from", dest="from_dir", metavar="DIR", help="run DIR's module under torchrun, one GPU per rank")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--d-model", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=16384)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--timeout", type=float, default=300, help="seconds before a hung run dumps its stacks and exits")
    p.add_argument("--pipelines", nargs="*", default=[COLLECTIVES, P2P], help="hir pipelines to time")
    return emit_or_run(p, emit, run)


if __name__ == "__main__":
    sys.exit(main())
