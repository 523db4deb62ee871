"""The rows of ``benchmarks/train_parallel.py``: each builds, on its own copy of the same
random Llama, one training step on several ranks and returns it as a callable giving the
step's loss over the global batch (the same number on every rank).

Three groups, each on its own mesh and global batch:

- ``fsdp``: every rank its 4 sequences of a global batch of 4 x N. FSDP2 (``fully_shard``
  per decoder layer and at the root, ``MixedPrecisionPolicy(param_dtype=bf16,
  reduce_dtype=fp32)``), eager and with each layer compiled as torchtitan compiles them;
  hir's fully sharded step with its scheduling passes (deferred waits, prefetch, buckets,
  the update inside the backward).
- ``tp``: a global batch of 4, the tokens split between the blocks (Megatron TP + SP on all
  ranks): DTensor ``parallelize_module`` with torchtitan's plan on HF's module names, eager,
  compiled, and async-TP (compiled with ``_micro_pipeline_tp`` and symmetric memory); hir's
  step with the same placements, lowered by ``hir-lower-overlap``.
- ``fsdp_tp``: a global batch of 4 on a 2 x N/2 mesh (rows: FSDP, columns: TP without SP):
  torchtitan's layout (``parallelize_module`` on the TP axis, then ``fully_shard`` on the
  data-parallel one) against hir's ``data_parallel="fully_shard"`` with ``placements``.

hir has no bf16 parameter dtype for a sharded step: its rows compute under bf16 autocast
(``loss_fn``) on float32 parameters, so gathers carry float32 shards, matmuls run in bf16,
gradients are reduced in float32 and AdamW's state is float32; FSDP2's rows gather bf16
parameters, compute in bf16 and reduce float32 gradients onto float32 shards.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch
import torch.distributed as dist

ROWS = {
    "fsdp": ["FSDP2 eager", "FSDP2 compiled", "hir FSDP"],
    "tp": ["DTensor TP+SP eager", "DTensor TP+SP compiled", "async-TP", "hir TP+SP"],
    "fsdp_tp": ["FSDP2 x TP eager", "FSDP2 x TP compiled", "hir FSDP x TP"],
}
ANCHORS = {
    "fsdp": "FSDP2 compiled",
    "tp": "async-TP",
    "fsdp_tp": "FSDP2 x TP compiled",
}  # what each group's hir row races
COLWISE, ROWWISE = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"), ("o_proj", "down_proj")
SCHEDULE = {"defer_waits": True, "prefetch": True, "bucket_bytes": 64 << 20, "optimizer_in_backward": True}


@dataclass
class Row:
    """A built row: ``step()`` runs one step and returns its loss tensor; ``local`` when that
    loss is the rank's own rows' mean (averaged over the ranks to give the global one)."""

    step: Callable[[], torch.Tensor]
    local: bool = False
    note: str = ""  # printed after its name (async-TP: the fused collective matmuls inductor made)


def why_not(row: str, device: str, world: int, config) -> str | None:
    """Why ``row`` cannot run here (None: it can)."""
    group = next(g for g, rows in ROWS.items() if row in rows)
    if row == "async-TP" and device != "cuda":
        return "async-TP needs CUDA (symmetric memory and inductor's fused collective matmuls)"
    if group == "tp" and (config.num_key_value_heads % world or config.vocab_size % world):
        heads = config.num_key_value_heads
        return f"TP on {world} ranks needs {world} to divide the KV heads ({heads}) and the vocabulary"
    if group == "fsdp_tp" and (world < 4 or world % 2):
        return f"a 2 x N/2 mesh needs an even world of 4 or more ranks (have {world})"
    return None


def loss_fn_for(device: str, autocast: bool) -> Callable:
    """The mean next-token loss of HF's Llama; under bf16 autocast for the rows whose
    parameters stay float32 (hir's, DTensor TP's)."""

    def loss_fn(model, ids, labels):
        if not autocast:
            return model(ids, labels=labels).loss
        with torch.autocast(device, dtype=torch.bfloat16):
            return model(ids, labels=labels).loss

    return loss_fn


def optimizer_for(model: torch.nn.Module, device: str) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=device == "cuda")


def _plain(model, optimizer, loss_fn, batch) -> Callable[[], torch.Tensor]:
    def step() -> torch.Tensor:
        loss = loss_fn(model, *batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """HF Llama's decoder layers."""
    return cast(torch.nn.ModuleList, model.get_submodule("model.layers"))


def _compile_layers(model: torch.nn.Module) -> None:
    """Each decoder layer compiled in place, as torchtitan compiles its blocks (before FSDP)."""
    for layer in layers(model):
        layer.compile()


def _fully_shard(model: torch.nn.Module, mesh) -> None:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in layers(model):
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)


def _path(projection: str) -> str:
    """A projection's path in HF Llama's decoder layer."""
    return f"{'self_attn' if projection in ('q_proj', 'k_proj', 'v_proj', 'o_proj') else 'mlp'}.{projection}"


def sp_plan(model: torch.nn.Module) -> dict:
    """torchtitan's TP + SP plan on HF Llama's module names, the embedding replicated (hir
    has no placement for a row-split table read by split ids; torchtitan row-splits it and
    reduce-scatters its output) and its output cut to each rank's tokens; the norms on their tokens; each block's input
    gathered (PrepareModuleInput), q/k/v, gate and up column-split, o and down row-split
    with their outputs reduce-scattered onto the tokens; the head column-split, its logits
    gathered whole. Outputs between blocks stay DTensors (HF reads their global shapes)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        PrepareModuleOutput,
        RowwiseParallel,
        SequenceParallel,
    )

    plan = {
        "model.embed_tokens": PrepareModuleOutput(
            output_layouts=Replicate(), desired_output_layouts=Shard(1), use_local_output=False
        ),
        "model.norm": SequenceParallel(),
        "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
    }
    for i in range(len(layers(model))):
        p = f"model.layers.{i}."
        plan |= {
            p + "input_layernorm": SequenceParallel(),
            p + "post_attention_layernorm": SequenceParallel(),
            p + "self_attn": PrepareModuleInput(
                input_kwarg_layouts={"hidden_states": Shard(1)},
                desired_input_kwarg_layouts={"hidden_states": Replicate()},
            ),
            p + "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        }
        plan |= {p + _path(n): ColwiseParallel() for n in COLWISE}
        plan |= {p + _path(n): RowwiseParallel(output_layouts=Shard(1), use_local_output=False) for n in ROWWISE}
    return plan


def tp_plan(model: torch.nn.Module) -> dict:
    """Megatron's TP plan without SP (the 2-D mesh's axis 1): q/k/v, gate and up
    column-split, o and down row-split, their outputs summed whole; embedding, norms and
    head replicated."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    plan = {}
    for i in range(len(layers(model))):
        plan |= {
            f"model.layers.{i}.{_path(n)}": ColwiseParallel() if n in COLWISE else RowwiseParallel()
            for n in (*COLWISE, *ROWWISE)
        }
    return plan


def hir_placements(model: torch.nn.Module, sequence_parallel: bool) -> dict:
    """The same layouts as hir placements (the model's parameter names): the projections
    as :func:`tp_plan`; with ``sequence_parallel`` the head column-split with its logits
    gathered (HF's ``colwise_gather_output``) and the ids split on the tokens (the residual
    stream between the blocks split so, as :func:`sp_plan`'s)."""
    from torch.distributed.tensor import Shard

    out = {}
    for name, _ in model.named_parameters():
        owner = name.rsplit(".", 2)[-2]
        if owner in COLWISE or owner in ROWWISE:
            out[name] = Shard(0 if owner in COLWISE else 1)
    if sequence_parallel:
        out |= {"lm_head": "colwise_gather_output", "input0": Shard(1)}
    return out


def build(row: str, base: torch.nn.Module, device: str, world: int, batch: tuple) -> Row:
    """``row`` on its own copy of ``base`` (``batch``: the group's global batch, every rank
    the same tensors)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module

    import hir

    model = copy.deepcopy(base).to(device)
    rank = dist.get_rank()
    if row.startswith("hir"):
        optimizer = optimizer_for(model, device)
        loss_fn = loss_fn_for(device, autocast=True)
        if row == "hir FSDP":
            step = hir.train_step(
                model,
                optimizer,
                loss_fn,
                batch,
                mesh=list(range(world)),
                data_parallel="fully_shard",
                schedule=SCHEDULE,
            )
        elif row == "hir TP+SP":
            return _hir_sequence_parallel(model, optimizer, device, world, batch)
        else:
            mesh = [list(range(r * world // 2, (r + 1) * world // 2)) for r in range(2)]
            step = hir.train_step(
                model,
                optimizer,
                loss_fn,
                batch,
                mesh=mesh,
                data_parallel="fully_shard",
                placements=hir_placements(model, False),
                schedule=SCHEDULE,
            )
        return Row(lambda: step(*batch))
    loss_fn = loss_fn_for(device, autocast=False)
    if row.startswith("FSDP2 x TP"):
        mesh = init_device_mesh(device, (2, world // 2), mesh_dim_names=("dp", "tp"))
        parallelize_module(model, mesh["tp"], tp_plan(model))
        if "compiled" in row:
            _compile_layers(model)
        _fully_shard(model, mesh["dp"])
        rows = batch[0].shape[0] // 2
        local = tuple(t[mesh["dp"].get_local_rank() * rows :][:rows] for t in batch)
        return Row(_plain(model, optimizer_for(model, device), loss_fn, local), local=True)
    mesh = init_device_mesh(device, (world,))
    if row.startswith("FSDP2"):
        if "compiled" in row:
            _compile_layers(model)
        _fully_shard(model, mesh)
        rows = batch[0].shape[0] // world
        local = tuple(t[rank * rows :][:rows] for t in batch)
        return Row(_plain(model, optimizer_for(model, device), loss_fn, local), local=True)
    # no FSDP: bf16 autocast on float32 parameters, as torchtitan runs TP alone
    parallelize_module(model, mesh, sp_plan(model))
    if row != "DTensor TP+SP eager":
        _compile_layers(model)
    step = _plain(model, optimizer_for(model, device), loss_fn_for(device, autocast=True), batch)
    if row != "async-TP":
        return Row(step)
    import warnings

    import torch._inductor.config as inductor_config
    import torch.distributed._symmetric_memory as symm_mem
    from torch._inductor.utils import run_and_get_code

    with warnings.catch_warnings():  # a deprecated no-op in newer torch, needed in older
        warnings.simplefilter("ignore")
        symm_mem.enable_symm_mem_for_group(mesh.get_group().group_name)
    built = Row(step)

    def async_tp() -> (
        torch.Tensor
    ):  # inductor fuses all-gather + matmul, matmul + reduce-scatter (compiled at the first call)
        with inductor_config.patch(_micro_pipeline_tp=True):
            if built.note:
                return step()
            loss, code = run_and_get_code(step)
        source = "\n".join(code)
        fused = source.count("fused_all_gather_matmul"), source.count("fused_matmul_reduce_scatter")
        built.note = f"fused: {fused[0]} AG+matmul, {fused[1]} matmul+RS"
        return loss

    built.step = async_tp
    return built


def _hir_sequence_parallel(model, optimizer, device: str, world: int, batch: tuple) -> Row:
    """hir's TP + SP step under bf16 autocast, one sequence a micro-batch (hir splits the
    tokens of a [1, S] batch only: docs/training.md)."""
    import hir

    loss_fn, placements = loss_fn_for(device, autocast=True), hir_placements(model, True)
    step = hir.train_step(
        model, optimizer, loss_fn, batch, mesh=list(range(world)), placements=placements, accumulate=batch[0].shape[0]
    )
    return Row(lambda: step(*batch))


def reference(base: torch.nn.Module, device: str, world: int, batch: tuple) -> Row:
    """FSDP2 eager (per-layer ``fully_shard``, bf16 parameters, float32 reductions) with every
    rank computing the whole ``batch``: the gradients averaged over the ranks are the
    batch's, so its steps are one process's on the whole batch (the anchor of the groups
    whose global batch the ranks do not split as FSDP2 would)."""
    from torch.distributed.device_mesh import init_device_mesh

    model = copy.deepcopy(base).to(device)
    _fully_shard(model, init_device_mesh(device, (world,)))
    return Row(_plain(model, optimizer_for(model, device), loss_fn_for(device, autocast=False), batch))
