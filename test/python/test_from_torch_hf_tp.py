"""HF models sharded by their own tensor-parallel plan (``config.base_model_tp_plan`` passed as
``placements``), lowered (Gloo) and run on 2 and 4 CPU ranks: Llama and Qwen2 (tiny random
configs, default options, so ``use_cache=True``), grouped-query attention with the kv heads
split across the ranks. Each rank's outputs equal the unsharded model's (the new cache's
tensors are this rank's kv heads, as under HF's own TP), and the lowered program holds
exactly two allreduces per layer (after o_proj and down_proj) and no other collective.

The plan-to-placement mapping and its errors are checked in one process (no ranks needed:
the import places the program without running it).

The test launches this file as a script under ``hir.tools.launch`` (one process per rank);
``python test_from_torch_hf_tp.py`` is the per-rank worker.
"""

import os
import re
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases

transformers = pytest.importorskip("transformers")

FAMILIES = ("llama", "qwen2")
LAYERS = 2
PIPELINE = "hir-convert-to-communication{backend=gloo},hir-lower"
COLLECTIVE = re.compile(
    r'"hir\.(allreduce|allgather|reduce_scatter|broadcast|scatter|gather|reduce|send|recv|shift|all_to_all)"'
)


def tiny(family: str):
    """8 query heads over 4 kv heads (GQA): 2 ranks hold 2 kv heads each, 4 ranks one."""
    import torch

    T = transformers
    config_class, model_class = {"llama": (T.LlamaConfig, T.LlamaModel), "qwen2": (T.Qwen2Config, T.Qwen2Model)}[family]
    torch.manual_seed(0)
    config = config_class(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=LAYERS,
        num_attention_heads=8,
        num_key_value_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    return model_class(config).eval()


def run_case(family: str, rank: int, world: int) -> str:
    import torch

    import hir
    from hir.frontend.output_tree import flatten_outputs

    model = tiny(family)
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    program = hir.from_torch(model, (ids,), mesh=list(range(world)), placements=model.config.base_model_tp_plan)
    hir.lower(program.module, PIPELINE)
    collectives = COLLECTIVE.findall(str(program.module))
    if collectives != ["allreduce"] * (2 * LAYERS):
        return f"{family}: rank {rank}: collectives {collectives}, want two allreduces per layer"
    got = program.run(model.state_dict(), ids, device="cpu")
    with torch.no_grad():
        names, want = flatten_outputs(model(ids))
    for name, g, w in zip(names, got, want):
        if name.startswith("cache."):  # [B, kv heads, S, D]: this rank's kv heads
            w = w.chunk(world, 1)[rank]
        if g.shape != w.shape or not torch.allclose(g, w, rtol=1e-5, atol=1e-5):
            return (
                f"{family}: rank {rank}: {name} differs: got {tuple(g.shape)}, want "
                f"{tuple(w.shape)}, max error {(g - w).abs().max() if g.shape == w.shape else '-'}"
            )
    return ""


def worker() -> int:
    return run_gloo_cases(os.environ["HIR_TEST_FAMILIES"].split(","), run_case)


# Llama on 2 ranks in the fast default; Qwen2 (the same path: another family) and 4 ranks
# (slow: minutes on 2 cores; one kv head per rank) with HIR_TEST_SLOW=1.
@pytest.mark.parametrize(
    "world,families",
    [
        pytest.param(2, ("llama",), id="2-llama"),
        pytest.param(2, ("qwen2",), id="2-qwen2", marks=pytest.mark.slow),
        pytest.param(4, FAMILIES, id="4-llama-qwen2", marks=pytest.mark.slow),
    ],
)
def test_hf_tp_plan_equals_unsharded(world, families):
    checked, report = launch_workers(
        world, __file__, timeout_s=500, env=dict(os.environ, HIR_TEST_FAMILIES=",".join(families))
    )
    assert checked == len(families) * world, report


def test_plan_placements_follow_hf_styles():
    from torch.distributed.tensor import Replicate, Shard

    from hir.frontend.hf_plans import plan_placements

    model = tiny("qwen2")  # q/k/v have biases
    found = plan_placements(
        model, {**model.config.base_model_tp_plan, "norm": "sequence_parallel", "embed_tokens": "embedding_colwise"}
    )
    assert found["layers.1.self_attn.q_proj.weight"] == Shard(0) and found["layers.1.self_attn.q_proj.bias"] == Shard(0)
    assert found["layers.0.self_attn.o_proj.weight"] == Shard(1)
    assert found["layers.0.mlp.down_proj.weight"] == Shard(1)
    assert found["norm.weight"] == Replicate() and found["embed_tokens.weight"] == Shard(1)
    assert "layers.0.input_layernorm.weight" not in found
    # the plan of a model with a head applies under its base_model_prefix ("model.")
    T = transformers
    lm = T.LlamaForCausalLM(
        T.LlamaConfig(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64)
    )
    assert plan_placements(lm, lm.config.base_model_tp_plan)["model.layers.0.mlp.up_proj.weight"] == Shard(0)


@pytest.mark.parametrize(
    "plan, message",
    [
        (
            {"layers.*.mlp.gate_proj": "expert_dispatch"},
            r"'layers.\*.mlp.gate_proj': style \"expert_dispatch\" is not supported",
        ),
        (
            {"layers.*.feed_forward": "colwise"},
            r"'layers.\*.feed_forward' matches no module or parameter of LlamaModel",
        ),
    ],
)
def test_bad_plan_is_named(plan, message):
    import torch

    import hir

    with pytest.raises(hir.HirError, match=message):
        hir.from_torch(tiny("llama"), (torch.randint(0, 128, (1, 4)),), mesh=[0, 1], placements=plan)


if __name__ == "__main__":
    sys.exit(worker())
