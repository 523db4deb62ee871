"""hir.from_torch with placements on a 1-D mesh, lowered (Gloo) and run on 1, 2 and 4 CPU ranks:
the Megatron MLP (fc1 column-parallel, GELU, fc2 row-parallel), its sequence-parallel form
(also through hir-p2p-pipeline), and the same MLP parallelized with
torch.distributed.tensor.parallel (placements read from its DTensor parameters), with a
LayerNorm in front under SequenceParallel; [B, S, D] sequence parallelism
(SequenceParallel() on a LayerNorm or RMSNorm, sequence dim 1: the inner axis is transposed
to lead around the streamed forms); and the LLaMA block of llama_block.py in that form (two
all-gathers, two reduce-scatters). Each rank checks its local output against the unsharded
module.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_from_torch_multirank.py`` is the per-rank worker.
"""

import os
import re
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases

PIPELINE = (
    "hir-convert-to-communication{backend=gloo},hir-stream-lowering,"
    "hir-fuse-loops,hir-insert-deallocations,canonicalize,cse"
)
# The sequence-parallel forms again through nvFuser's P2P pipelines (shifts, no collectives).
P2P_PIPELINE = "hir-convert-to-communication{backend=gloo},hir-p2p-pipeline,hir-lower"
CASES = (
    "tp",
    "sp",
    "tp_parallelize_module",
    "sp_parallelize_module",
    "sp_layernorm_parallelize_module",
    "sp_bsd_layernorm",
    "sp_bsd_rmsnorm",
    "sp_llama",
)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Frontend", "Inputs"))


def _mlp(d: int, f: int):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, f), nn.Linear(f, d)

        def forward(self, x):
            return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))

    torch.manual_seed(0)
    return MLP().eval()


def _norm_mlp(d: int, f: int):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, f), nn.GELU(approximate="tanh"), nn.Linear(f, d)).eval()


def run_norm_case(rank: int, world: int) -> str:
    """SequenceParallel on the LayerNorm (tokens split), then the Megatron MLP: allgather,
    linear, gelu, matmul, reduce_scatter; the norm runs on each rank's tokens."""
    import torch
    from torch.distributed.tensor import DeviceMesh, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

    from hir.frontend import from_torch

    d, f, tokens = 8, 16 * world, 4 * world
    module = _norm_mlp(d, f)
    torch.manual_seed(1)
    x = torch.randn(tokens, d)
    want = module(x).detach().chunk(world, 0)[rank]
    plan = {
        "0": SequenceParallel(sequence_dim=0),
        "1": ColwiseParallel(input_layouts=Shard(0)),
        "3": RowwiseParallel(output_layouts=Shard(0)),
    }
    sharded = parallelize_module(_norm_mlp(d, f), DeviceMesh("cpu", list(range(world))), plan)
    program = from_torch(sharded, (x,), placements={"input0": Shard(0), "output0": Shard(0)})
    return check_sequence_parallel(
        "sp_layernorm", program, program.arguments(sharded.state_dict(), x), want, world, 1e-5
    )


def run_bsd_case(rms: bool, rank: int, world: int) -> str:
    """[B, S, D] sequence parallelism: the norm on each rank's sequence shard, fc1's input
    gathered along S (an inner axis), fc2's sum reduce-scattered back onto S."""
    import torch
    from torch.distributed.tensor import DeviceMesh, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

    from hir.frontend import from_torch
    from sp_mlp import norm_mlp

    module = norm_mlp(rms)
    torch.manual_seed(1)
    x = torch.randn(2, 8, 16)
    want = module(x).detach().chunk(world, 1)[rank]
    plan = {
        "norm": SequenceParallel(),
        "fc1": ColwiseParallel(input_layouts=Shard(1)),
        "fc2": RowwiseParallel(output_layouts=Shard(1)),
    }
    sharded = parallelize_module(norm_mlp(rms), DeviceMesh("cpu", list(range(world))), plan)
    program = from_torch(sharded, (x,), placements={"input0": Shard(1), "output0": Shard(1)})
    return check_sequence_parallel(
        "sp_bsd_rmsnorm" if rms else "sp_bsd_layernorm",
        program,
        program.arguments(sharded.state_dict(), x),
        want,
        world,
        1e-5,
    )


def run_llama_case(rank: int, world: int) -> str:
    """The LLaMA block (RMSNorm, RoPE, causal SDPA with GQA, SwiGLU; llama_block.py) in its
    sequence-parallel form, [B, S, D] split on S (issue 39): the normed activation is
    gathered once for q, k and v and once for gate and up, o and down reduce-scattered."""
    import llama_block
    import torch
    from torch.distributed.tensor import Shard

    from hir.frontend import from_torch

    module = llama_block.llama_block()
    torch.manual_seed(1)
    x = torch.randn(2, 8, 32)
    want = module(x).detach().chunk(world, 1)[rank]
    placements = llama_block.tp_placements() | {"input0": Shard(1), "output0": Shard(1)}
    program = from_torch(module, (x,), mesh=list(range(world)), placements=placements)
    return check_sequence_parallel(
        "sp_llama",
        program,
        program.arguments(module.state_dict(), x),
        want,
        world,
        1e-5,
        overlap=True,
        counts={'"hir.allgather"': 2, '"hir.reduce_scatter"': 2},
    )


def check_sequence_parallel(
    name: str,
    program,
    arguments: list,
    want,
    world: int,
    atol: float,
    overlap: bool = False,
    counts: dict | None = None,
) -> str:
    """Lower the imported SP program both ways (collectives run whole; hir-p2p-pipeline's
    shifts) and compare each run with the unsharded module's rows for this rank. With
    ``overlap``, also hir-lower-overlap's forms (auto: whole at these sizes; forced on and
    off) and the accumulating reduce-scatter ring. ``counts``: how often each op occurs
    in the whole form."""
    import torch

    import hir
    from hir.passes import overlap_pipeline

    text = str(program.module)
    whole, shifts = (
        (['"hir.allgather"', '"hir.reduce_scatter"'], []),
        (['"hir.shift"'], ['"hir.allgather"', '"hir.reduce_scatter"']),
    )
    cases = [(PIPELINE, *whole), (P2P_PIPELINE, *shifts)]
    if overlap:
        cases += [
            (overlap_pipeline("auto"), *whole),
            (overlap_pipeline("off"), *whole),
            (overlap_pipeline("on"), *shifts),
            (
                P2P_PIPELINE.replace("hir-p2p-pipeline", "hir-p2p-pipeline{accumulate=1 chunks=2}"),
                ['"hir.shift"', "{accumulate}"],
                ['"hir.reduction"', '"hir.reduce_scatter"'],
            ),
        ]
    for pipeline, present, absent in cases:
        module = hir.parse(text, f"{name}.mlir")
        hir.lower(module, pipeline)
        lowered = str(module)
        if world > 1 and (any(c not in lowered for c in present) or any(c in lowered for c in absent)):
            return f"{name} [{pipeline}]: lowered program should have {present} and not {absent}\n{lowered}"
        found = {c: lowered.count(c) for c in counts or {}}
        if world > 1 and pipeline == PIPELINE and found != (counts or {}):
            return f"{name} [{pipeline}]: the whole form has {found}, want {counts}\n{lowered}"
        (got,) = hir.run(module, arguments, device="cpu")
        if not torch.allclose(got, want, rtol=1e-5, atol=atol):
            return f"{name} [{pipeline}]: got {got}, want {want}"
    return ""


def run_case(name: str, rank: int, world: int) -> str:
    if name == "sp_layernorm_parallelize_module":
        return run_norm_case(rank, world)
    if name == "sp_llama":
        return run_llama_case(rank, world)
    if name.startswith("sp_bsd"):
        return run_bsd_case(name.endswith("rmsnorm"), rank, world)
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import DeviceMesh, Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import hir
    from hir.frontend import from_torch

    d, f, tokens = 8, 16 * world, 4 * world
    module = _mlp(d, f)
    torch.manual_seed(1)
    x = torch.randn(tokens, d)
    want = module(x).detach()
    sequence = name.startswith("sp")
    io = {"input0": Shard(0), "output0": Shard(0)} if sequence else {}
    if name.endswith("parallelize_module"):
        mesh = DeviceMesh("cpu", list(range(world)))
        plan = {
            "fc1": ColwiseParallel(input_layouts=Shard(0) if sequence else Replicate()),
            "fc2": RowwiseParallel(output_layouts=Shard(0) if sequence else Replicate()),
        }
        sharded = parallelize_module(_mlp(d, f), mesh, plan)
        program = from_torch(sharded, (x,), placements=io)
        state = sharded.state_dict()
    else:
        placements = {
            "fc1.weight": Shard(0),
            "fc1.bias": Shard(0),
            "fc2.weight": Shard(1),
            "fc2.bias": Replicate(),
            **io,
        }
        program = from_torch(module, (x,), mesh=list(range(world)), placements=placements)
        state = module.state_dict()
    text = str(program.module)
    if "torch.aten.gelu" not in text:
        return f"{name}: the imported program has no gelu segment\n{text}"
    # fc2 reads the gelu output in place (issue 39): its operand is a view stacking the
    # shards, not a kernel's copy (one rank: a plain linear, no partial sum).
    views, fc2 = re.findall(r'(%\w+) = "hir.alias_stack_shards"', text), re.search(r'"hir.matmul"\((%\w+),', text)
    if world > 1 and (fc2 is None or fc2.group(1) not in views):
        return f"{name}: fc2's activation operand should be an hir.alias_stack_shards view, not a kernel's copy\n{text}"
    if sequence:
        failure = check_sequence_parallel(
            name, program, program.arguments(state, x), want.chunk(world, 0)[rank], world, 1e-6, overlap=name == "sp"
        )
        dist.barrier()
        return failure
    # TP: the all-reduce whole, and as hir-p2p-pipeline's reduce-scatter (the accumulating
    # ring, in two parts; pushed copies) + all-gather, fc2's bias added to the scattered rows
    # before it, and in row blocks (chunked).
    rs_ag = P2P_PIPELINE.replace("hir-p2p-pipeline", "hir-p2p-pipeline{allreduce=rs-ag accumulate=1 chunks=2}")
    pushed = P2P_PIPELINE.replace("hir-p2p-pipeline", "hir-p2p-pipeline{allreduce=rs-ag transfer=push chunks=2}")
    chunked = P2P_PIPELINE.replace("hir-p2p-pipeline", "hir-p2p-pipeline{allreduce=chunked chunks=2}")
    for pipeline, kept in (
        (PIPELINE, '"hir.allreduce"'),
        (rs_ag, '"hir.allgather"'),
        (pushed, '"hir.allgather"'),
        (chunked, '"hir.alias_chunk"'),
    ):
        lowered_module = hir.parse(text, f"{name}.mlir")
        hir.lower(lowered_module, pipeline)
        lowered = str(lowered_module)
        if world > 1 and (kept not in lowered or (pipeline == rs_ag) != ("{accumulate}" in lowered)):
            return f"{name} [{pipeline}]: the lowered program lacks {kept} or the accumulating ring's form"
        if world > 1 and pipeline in (rs_ag, pushed) and not _gathers_biased_rows(lowered):
            return (
                f"{name} [{pipeline}]: fc2's bias is added after the all-gather, not to the scattered rows\n{lowered}"
            )
        (got,) = hir.run(lowered_module, program.arguments(state, x), device="cpu")
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
            return f"{name} [{pipeline}]: rank {rank} got {got}, want {want}"
    dist.barrier()
    return ""


def _gathers_biased_rows(lowered: str) -> bool:
    """Whether the all-gather sends what an ``hir.binary`` wrote (the scattered rows plus the bias)."""
    sent = re.search(r'"hir\.allgather"\((%\w+),', lowered)
    return (
        sent is not None
        and re.search(r'"hir\.binary"\([^)]*, ' + re.escape(sent.group(1)) + r"\)", lowered) is not None
    )


def worker() -> int:
    return run_gloo_cases(CASES, run_case)


# 2 ranks in the fast default; one rank (a mesh of one device) and 4 with HIR_TEST_SLOW=1
@pytest.mark.parametrize("world", [pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(4, marks=pytest.mark.slow)])
def test_megatron_mlp_tp_and_sp(world):
    """TP: linear, gelu segment, matmul, allreduce; SP: allgather ... reduce_scatter."""
    checked, report = launch_workers(world, __file__, timeout_s=400, env=dict(os.environ))
    assert checked == len(CASES) * world, report


if __name__ == "__main__":
    sys.exit(worker())
