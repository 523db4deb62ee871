"""The torch baselines of benchmarks/layer.py: the layer written by hand with torch.distributed
(its collectives through NCCL or the functional collectives), DTensor's tensor/sequence parallel
forward, and async TP (torch's fused all-gather + matmul)."""

import copy
import warnings
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F

from block import LLAMA


def llama_block():
    """test/Frontend/Inputs/llama_block.py as a module (its TP plan and placements)."""
    import runpy

    return runpy.run_path(LLAMA)


class Hand:
    """The block's math on this rank's heads and MLP columns, written with torch ops; the
    callers put the collectives around :meth:`attention` and :meth:`mlp` (partial sums)."""

    def __init__(self, weights: dict, config: dict, world: int) -> None:
        self.w = weights
        self.heads, self.kv_heads = config["heads"] // world, config["kv_heads"] // world
        self.head_dim = config["d_model"] // config["heads"]

    def norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.w[f"{name}.weight"], eps=1e-6)

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        b, s, _ = h.shape
        q, k, v = (F.linear(h, self.w[f"{n}.weight"]).view(b, s, -1, self.head_dim).transpose(1, 2) for n in "qkv")
        cos, sin = self.w["cos"], self.w["sin"]
        half = self.head_dim // 2
        q, k = (t * cos + torch.cat([-t[..., half:], t[..., :half]], dim=-1) * sin for t in (q, k))
        groups = self.heads // self.kv_heads
        k, v = (
            t[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
            for t in (k, v)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.linear(y.transpose(1, 2).reshape(b, s, -1), self.w["o.weight"])

    def mlp(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(
            F.silu(F.linear(h, self.w["gate.weight"])) * F.linear(h, self.w["up.weight"]), self.w["down.weight"]
        )

    def tp(self, x: torch.Tensor) -> torch.Tensor:
        a = self.attention(self.norm(x, "norm1"))
        dist.all_reduce(a)
        y = x + a
        m = self.mlp(self.norm(y, "norm2"))
        dist.all_reduce(m)
        return y + m

    def sp(self, x: torch.Tensor, gather: Callable, scatter: Callable) -> torch.Tensor:
        y = x + scatter(self.attention(gather(self.norm(x, "norm1"))))
        return y + scatter(self.mlp(gather(self.norm(y, "norm2"))))


def nccl_gather(h: torch.Tensor) -> torch.Tensor:
    """All tokens of ``h`` [1, s/N, d] (``all_gather_into_tensor``)."""
    out = h.new_empty(h.shape[0], h.shape[1] * dist.get_world_size(), h.shape[2])
    dist.all_gather_into_tensor(out.view(-1, h.shape[2]), h.reshape(-1, h.shape[2]))
    return out


def nccl_scatter(p: torch.Tensor) -> torch.Tensor:
    """This rank's tokens of the sum of every rank's ``p`` [1, s, d] (``reduce_scatter_tensor``)."""
    out = p.new_empty(p.shape[0], p.shape[1] // dist.get_world_size(), p.shape[2])
    dist.reduce_scatter_tensor(out.view(-1, p.shape[2]), p.reshape(-1, p.shape[2]))
    return out


def functional_gather(h: torch.Tensor) -> torch.Tensor:
    from torch.distributed import _functional_collectives as funcol

    return funcol.all_gather_tensor(h.reshape(-1, h.shape[2]), 0, dist.group.WORLD).view(h.shape[0], -1, h.shape[2])


def functional_scatter(p: torch.Tensor) -> torch.Tensor:
    from torch.distributed import _functional_collectives as funcol

    return funcol.reduce_scatter_tensor(p.reshape(-1, p.shape[2]), "sum", 0, dist.group.WORLD).view(
        p.shape[0], -1, p.shape[2]
    )


def dtensor_forward(model: torch.nn.Module, sequence: bool, world: int, x: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The forward of a copy of ``model`` under ``parallelize_module`` on this rank's input
    ``x``: llama_block.py's TP plan; the SP plan adds SequenceParallel norms whose outputs
    are gathered once (one all-gather for q/k/v, one for gate/up) and o/down scattering
    tokens, the block taking and giving DTensors split on tokens (its forward reads the
    global sequence length from its input). Heads per rank as torchtitan sets them."""
    from torch.distributed.tensor import DeviceMesh, DTensor, Replicate, Shard
    from torch.distributed.tensor.parallel import (
        PrepareModuleOutput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    mesh = DeviceMesh(x.device.type, list(range(world)))
    plan = llama_block()["tp_plan"]()
    norms = ("norm1", "norm2")
    if sequence:
        plan |= {n: SequenceParallel() for n in norms} | {
            n: RowwiseParallel(output_layouts=Shard(1), use_local_output=False) for n in ("o", "down")
        }
    block = parallelize_module(copy.deepcopy(model), mesh, plan)
    block.heads, block.kv_heads = block.heads // world, block.kv_heads // world
    if not sequence:
        return lambda: block(x)
    # A second style on the norms, one that distributes nothing: a hook gathering their output.
    parallelize_module(
        block,
        mesh,
        {n: PrepareModuleOutput(output_layouts=Shard(1), desired_output_layouts=Replicate()) for n in norms},
    )
    return lambda: block(DTensor.from_local(x, mesh, [Shard(1)], run_check=False)).to_local()


def async_tp(hand: Hand, x: torch.Tensor, dev: torch.device) -> tuple[Callable, str]:
    """The functional-collective SP compiled with inductor's micro-pipeline TP (async-TP) and
    a note on the fusions it made (the generated code's fused symmetric-memory ops)."""
    from torch._inductor.utils import run_and_get_code

    if dev.type == "cuda":
        import torch.distributed._symmetric_memory as symm_mem

        with warnings.catch_warnings():  # a deprecated no-op in newer torch, needed in older
            warnings.simplefilter("ignore")
            symm_mem.enable_symm_mem_for_group(dist.group.WORLD.group_name)
    compiled = torch.compile(lambda t: hand.sp(t, functional_gather, functional_scatter), fullgraph=True)
    with torch._inductor.config.patch(_micro_pipeline_tp=dev.type == "cuda"):  # needs symmetric memory (CUDA)
        _, code = run_and_get_code(compiled, x)
    source = "\n".join(code)
    fused = (
        f"fused: {source.count('fused_all_gather_matmul')} AG+matmul,"
        f" {source.count('fused_matmul_reduce_scatter')} matmul+RS"
    )
    return (lambda: compiled(x)), fused
