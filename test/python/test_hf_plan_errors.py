"""HF plan styles as placements, and the styles hir cannot honour, checked in one process
(the import places the program without running it): packed styles give DTensor's
``_StridedShard``; a packed value read by an op that would mix up its pieces is an error
naming the plan entry's parameter; plan keys resolve through a wrapper (a decode step);
the KV cache splits by heads where the key projection does."""

import pytest
import torch

import hir

transformers = pytest.importorskip("transformers")


def test_packed_styles_place_strided_shards():
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.placement_types import _StridedShard

    from hir.frontend.hf_plans import plan_placements

    T = transformers
    config = T.MixtralConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=32,
        num_local_experts=2,
    )
    model = T.MixtralModel(config)
    found = plan_placements(model, config.base_model_tp_plan)
    assert found["layers.0.mlp.experts.gate_up_proj"] == _StridedShard(1, split_factor=2)  # [E, 2I, D]: each half split
    assert found["layers.0.mlp.experts.down_proj"] == Shard(2)
    fused = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 8))
    placed = plan_placements(fused, {"0": "packed_colwise", "1": "packed_rowwise"})
    assert placed == {
        "0.weight": _StridedShard(0, split_factor=2),
        "0.bias": _StridedShard(0, split_factor=2),
        "1.weight": _StridedShard(1, split_factor=2),
        "1.bias": Replicate(),
    }


class Fused(torch.nn.Module):
    """A fused gate/up projection whose output is read past its pieces (``[..., :5]``)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate_up = torch.nn.Linear(8, 16)

    def forward(self, x):
        return self.gate_up(x)[..., :5]


def test_packed_value_mixed_up_is_an_error_naming_the_entry():
    with pytest.raises(
        hir.HirError, match=r"reads the packed split of 'gate_up.weight' \(a packed_colwise / packed_rowwise plan entry"
    ):
        hir.from_torch(Fused(), (torch.randn(2, 8),), mesh=[0, 1], placements={"gate_up": "packed_colwise"})


def test_packed_rowwise_needs_a_packed_input():
    """A packed_rowwise weight contracted against a plain colwise output: refused by name."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    with pytest.raises(
        hir.HirError, match=r"packed split of '2.weight'.*combines it with a value split in plain blocks"
    ):
        hir.from_torch(model, (torch.randn(2, 8),), mesh=[0, 1], placements={"0": "colwise", "2": "packed_rowwise"})


def test_plan_resolves_through_a_decode_step_and_splits_its_cache():
    from torch.distributed.tensor import Shard

    from hir.frontend.hf_decode import StaticCacheStep
    from hir.frontend.hf_plans import plan_placements

    T = transformers
    model = T.LlamaForCausalLM(
        T.LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=32,
        )
    )
    step = StaticCacheStep(model, batch_size=1, max_cache_len=8)
    found = plan_placements(step, model.tp_plan)  # "model.layers.*..." under the step's "model"
    assert found["model.model.layers.0.self_attn.k_proj.weight"] == Shard(0) and found["model.lm_head.weight"] == Shard(
        0
    )
    assert found["model.model.embed_tokens.weight"] == Shard(0)
    assert found["key_cache_0"] == Shard(1) and found["value_cache_0"] == Shard(1)
    gathered = plan_placements(step, {"model.layers.*.self_attn.k_proj": "colwise_gather_output"})
    assert "key_cache_0" not in gathered  # whole heads: the cache stays whole


def test_plan_entry_of_another_layer_kind_warns():
    """Qwen3-MoE's plan names dense MLPs too; as HF, an entry of the model's own plan that
    matches nothing is skipped with a warning (a user's entry that matches nothing is an error)."""
    T = transformers
    config = T.Qwen3MoeConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        moe_intermediate_size=8,
        num_experts=2,
        head_dim=4,
    )
    from hir.frontend.hf_plans import plan_placements

    with pytest.warns(UserWarning, match="'layers.\\*.mlp.gate_proj' matches no module"):
        plan_placements(T.Qwen3MoeModel(config), config.base_model_tp_plan)


class GateUp(torch.nn.Module):
    """A fused gate/up projection, its halves taken apart by ``chunk(2)`` (a local cut)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gate_up = torch.nn.Linear(4, 8, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up


def test_packed_arguments_are_cut_piecewise(tmp_path):
    """Each rank gets its part of each half of a packed weight, from memory and from a
    safetensors file (the weights hir.load and hir-run read)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from hir.interpreter import local_arguments
    from hir.interpreter.buffers import buffer_spec
    from hir.interpreter.inputs import gather_pieces

    model = GateUp()
    x = torch.randn(3, 4)
    program = hir.from_torch(model, (x,), mesh=[0, 1], placements={"gate_up": "packed_colwise"})
    assert "packed = array<i64: 2>" in str(program.module)
    weight = model.gate_up.weight  # rows: gate 0..3, up 4..7
    save_file({"w": weight.contiguous()}, str(tmp_path / "w.safetensors"))
    main_type = next(
        op for op in program.module.body.operations if "hir.kernel" not in op.operation.attributes
    ).type.inputs[0]
    for rank, rows in ((0, [0, 1, 4, 5]), (1, [2, 3, 6, 7])):
        torch.testing.assert_close(local_arguments(program.module, [weight.detach(), x], rank)[0], weight[rows])
        with safe_open(str(tmp_path / "w.safetensors"), framework="pt") as f:
            spec = buffer_spec(main_type, rank)
            torch.testing.assert_close(
                gather_pieces(f.get_slice("w").__getitem__, spec.shape, spec.sharding, rank), weight[rows]
            )
