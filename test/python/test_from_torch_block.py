"""A pre-norm transformer block (LayerNorm, causal self-attention with softmax, GELU MLP,
residuals) and a LLaMA-style block (RMSNorm, rotary embeddings by slice/cat, grouped-query
SDPA, SwiGLU; test/Frontend/Inputs/llama_block.py) imported with hir.from_torch and run
with tensor-parallel attention heads and MLP
(Megatron: q/k/v and fc1 column-parallel, out-proj and fc2 row-parallel) on 1, 2 and 4 Gloo
ranks, placements given explicitly and read from a module parallelized with
torch.distributed.tensor.parallel; and on a 2x2 mesh (4 ranks: batch data-parallel over
mesh axis 0, heads and MLP tensor-parallel over mesh axis 1). The attention core runs on
each rank's heads: the only collectives are the two allreduces (along the tensor-parallel
axis on the 2x2 mesh), and each rank's output equals the unsharded module's.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_from_torch_block.py`` is the per-rank worker.
"""

import math
import os
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Frontend", "Inputs"))

PIPELINE = "hir-convert-to-communication{backend=gloo},hir-lower"
CASES = ("placements", "parallelize_module", "llama_placements", "llama_parallelize_module")
CASES_2X2 = ("dp_tp_2x2", "llama_dp_tp_2x2", "llama_parallelize_module_2x2")


def block(d: int = 16, heads: int = 4, hidden: int = 32, seq: int = 8):
    import torch
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
            self.proj = torch.nn.Linear(d, d)
            self.fc1, self.fc2 = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)
            self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

        def forward(self, x):
            b, s, _ = x.shape
            h = self.ln1(x)
            q, k, v = (lin(h).view(b, s, heads, d // heads).transpose(1, 2) for lin in (self.q, self.k, self.v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(d // heads) + self.mask
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    torch.manual_seed(0)
    return Block().eval()


def tp_placements() -> dict:
    from torch.distributed.tensor import Replicate, Shard

    column = {f"{n}.weight": Shard(0) for n in ("q", "k", "v", "fc1")} | {
        f"{n}.bias": Shard(0) for n in ("q", "k", "v", "fc1")
    }
    row = {"proj.weight": Shard(1), "proj.bias": Replicate(), "fc2.weight": Shard(1), "fc2.bias": Replicate()}
    return column | row


def dp_tp_placements(tp: dict | None = None) -> dict:
    """The 2x2 mesh: batch split over mesh axis 0 (data parallel), heads and MLP over mesh
    axis 1 (tensor parallel)."""
    from torch.distributed.tensor import Replicate

    return {name: (Replicate(), p) for name, p in (tp or tp_placements()).items()} | {
        "input0": (Shard0(), Replicate()),
        "output0": (Shard0(), Replicate()),
    }


def Shard0():
    from torch.distributed.tensor import Shard

    return Shard(0)


def model(name: str):
    """(the unsharded module, a fresh copy, its example input, its TP placements and its
    parallelize_module plan) of case ``name``."""
    import torch
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    if name.startswith("llama"):
        import llama_block

        torch.manual_seed(1)
        return (
            llama_block.llama_block(),
            llama_block.llama_block(),
            torch.randn(2, 8, 32),
            llama_block.tp_placements(),
            llama_block.tp_plan(),
        )
    torch.manual_seed(1)
    plan = {n: ColwiseParallel() for n in ("q", "k", "v", "fc1")} | {n: RowwiseParallel() for n in ("proj", "fc2")}
    return block(), block(), torch.randn(2, 8, 16), tp_placements(), plan


def run_case(name: str, rank: int, world: int) -> str:
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import DeviceMesh, Replicate
    from torch.distributed.tensor.parallel import parallelize_module

    import hir
    from hir.frontend import from_torch

    module, fresh, x, placements, plan = model(name)
    want = module(x).detach()
    state = module.state_dict()
    if name.endswith("parallelize_module_2x2"):  # TP on mesh["tp"] of a 2-D dp x tp mesh
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        sharded = parallelize_module(fresh, mesh["tp"], plan)
        program = from_torch(
            sharded, (x,), mesh=mesh, placements={"input0": (Shard0(), Replicate()), "output0": (Shard0(), Replicate())}
        )
        state = sharded.state_dict()
        want = want.chunk(2, 0)[rank // 2]
    elif name.endswith("dp_tp_2x2"):
        program = from_torch(module, (x,), mesh=[[0, 1], [2, 3]], placements=dp_tp_placements(placements))
        want = want.chunk(2, 0)[rank // 2]  # this rank's batch rows
    elif name.endswith("parallelize_module"):
        sharded = parallelize_module(fresh, DeviceMesh("cpu", list(range(world))), plan)
        program = from_torch(sharded, (x,))
        state = sharded.state_dict()
    else:
        program = from_torch(module, (x,), mesh=list(range(world)), placements=placements)
    imported = str(program.module)
    hir.lower(program.module, PIPELINE)
    lowered = str(program.module)
    collectives = [
        c
        for c in ("allgather", "allreduce", "reduce_scatter", "broadcast", "scatter", "gather")
        if f'"hir.{c}"' in lowered
    ]
    if world > 1 and (collectives != ["allreduce"] or lowered.count('"hir.allreduce"') != 2):
        return (
            f"{name}: collectives {collectives} ({lowered.count(chr(34) + 'hir.allreduce' + chr(34))} "
            f"allreduces); want exactly 2 allreduces\n{imported}"
        )
    (got,) = hir.run(program.module, program.arguments(state, x), device="cpu")
    if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
        return f"{name}: rank {rank}: max |error| {(got - want).abs().max().item():.2e}"
    dist.barrier()
    return ""


def worker() -> int:
    return run_gloo_cases(CASES + (CASES_2X2 if int(os.environ["WORLD_SIZE"]) == 4 else ()), run_case)


# 1 rank (slow) runs the cases of 2 without communication; a 1-device mesh stays in the fast
# default through test_from_torch_multirank.py's world 1
@pytest.mark.parametrize("world", [pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(4, marks=pytest.mark.slow)])
def test_transformer_block_tensor_parallel_heads(world):
    checked, report = launch_workers(world, __file__, timeout_s=400, env=dict(os.environ))
    assert checked == (len(CASES) + len(CASES_2X2) * (world == 4)) * world, report


if __name__ == "__main__":
    sys.exit(worker())
