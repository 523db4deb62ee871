"""Real modules through hir.from_torch (issue 28's functionalized imports): what the export
used to leave unfunctional now imports and runs equal to eager torch.

* ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` with a boolean padding mask
  (``masked_fill_`` in the traced graph);
* HF's rotary embedding under ``@torch.no_grad()`` (transformers 4.x; a
  ``wrap_with_set_grad_enabled`` higher-order op in the raw export), and HF ``LlamaModel``;
* HF ``GPT2LMHeadModel``, whose ``lm_head.weight`` is ``transformer.wte.weight``: one state
  entry, either name accepted;
* HF ``GPT2Model`` (Conv1D is ``addmm``) with tensor-parallel placements on 2 and 4 Gloo
  ranks: lowers and each rank's output equals the unsharded model's.

The multi-rank test launches this file under ``hir.tools.launch``; ``python
test_from_torch_real_modules.py`` is the per-rank worker.
"""

import os
import sys

import pytest
import torch

import hir
from hir.frontend import from_torch
from hir.frontend.output_tree import flatten_outputs
from multirank_util import launch_workers, run_gloo_cases

PIPELINE = "hir-convert-to-communication{backend=gloo},hir-lower"


def assert_runs_equal(module: torch.nn.Module, args: tuple, state: dict = None) -> list:
    """Import ``module`` on ``args``, run it with ``state`` (default: the module's whole
    state) and compare every output with eager torch at fp32 rtol = atol = 1e-5."""
    program = from_torch(module, args)
    got = program.run(program.state(module) if state is None else state, *args, device="cpu")
    names, want = flatten_outputs(module(*args))
    assert program.output_names == names
    assert len(got) == len(want)
    for name, g, w in zip(names, got, want):
        torch.testing.assert_close(g, w.detach(), rtol=1e-5, atol=1e-5, msg=name)
    return got


class KeyPadded(torch.nn.Module):
    """``layer(x, <its key-padding-mask keyword>=mask)``: the mask is a program input."""

    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x, mask):
        if isinstance(self.layer, torch.nn.MultiheadAttention):
            return self.layer(x, x, x, key_padding_mask=mask, need_weights=False)[0]
        return self.layer(x, src_key_padding_mask=mask)


@pytest.mark.parametrize("kind", ["mha", "encoder_layer"])
def test_boolean_padding_mask(kind):
    torch.manual_seed(0)
    layer = (
        torch.nn.MultiheadAttention(16, 4, batch_first=True)
        if kind == "mha"
        else torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    )
    module = KeyPadded(layer).eval()
    x = torch.randn(2, 6, 16)
    mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    (got,) = assert_runs_equal(module, (x, mask))
    # the mask is read: batch row 1 differs from its unmasked result
    unmasked = module(x, torch.zeros_like(mask)).detach()
    assert not torch.allclose(got[1, :4], unmasked[1, :4], atol=1e-3)


def tiny_llama():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    return transformers.LlamaModel(config).eval()


def tiny_gpt2(cls_name: str = "GPT2Model", layers: int = 1):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=64,
        n_embd=32,
        n_layer=layers,
        n_head=4,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
        use_cache=False,
    )
    return getattr(transformers, cls_name)(config).eval()


class NoGradRotary(torch.nn.Module):
    """HF's rotary embedding as transformers 4.x wrote it (``@torch.no_grad()`` on forward;
    5.x dropped the decorator), applied to a projection by slice/cat."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d), persistent=False)
        self.q = torch.nn.Linear(d, d)

    @torch.no_grad()
    def angles(self, x, positions):
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def forward(self, x):
        cos, sin = self.angles(x, torch.arange(x.shape[1])[None])
        q, half = self.q(x), x.shape[-1] // 2
        return q * cos + torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin


def test_no_grad_rotary():
    torch.manual_seed(0)
    module = NoGradRotary().eval()
    x = torch.randn(2, 5, 8)
    raw = torch.export.export(module, (x,), strict=False)  # what the import starts from
    assert any("wrap_with_set_grad_enabled" in str(n.target) for n in raw.graph.nodes)
    assert_runs_equal(module, (x,))


def test_hf_llama():
    model = tiny_llama()
    assert_runs_equal(model, (torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1)),))


def test_tied_gpt2_lm_head_one_entry_either_name():
    model = tiny_gpt2("GPT2LMHeadModel")
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    assert model.lm_head.weight is model.transformer.wte.weight
    program = from_torch(model, (ids,))
    tied = {"lm_head.weight", "transformer.wte.weight"}
    assert len(tied & set(program.state_names)) == 1 and len(tied & set(program.aliases)) == 1
    state = model.state_dict()
    for drop in sorted(tied):  # a state dict with only one of the two names runs
        assert_runs_equal(model, (ids,), {n: t for n, t in state.items() if n != drop})


def gpt2_tp_placements(layers: int) -> dict:
    """Megatron on GPT-2's Conv1D (weight ``[in, out]``): c_attn and c_fc column-parallel
    (``Shard(1)``, bias ``Shard(0)``), the two c_proj row-parallel (``Shard(0)``)."""
    from torch.distributed.tensor import Replicate, Shard

    placements = {}
    for i in range(layers):
        for column in ("attn.c_attn", "mlp.c_fc"):
            placements |= {f"h.{i}.{column}.weight": Shard(1), f"h.{i}.{column}.bias": Shard(0)}
        for row in ("attn.c_proj", "mlp.c_proj"):
            placements |= {f"h.{i}.{row}.weight": Shard(0), f"h.{i}.{row}.bias": Replicate()}
    return placements


def run_case(name: str, rank: int, world: int) -> str:
    model = tiny_gpt2(layers=2)
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    want = model(ids).last_hidden_state.detach()
    program = from_torch(model, (ids,), mesh=list(range(world)), placements=gpt2_tp_placements(2))
    if f"#hir.shard<array<i64: {', '.join(map(str, range(world)))}>, 1 : i64>" not in str(program.module):
        return f"{name}: no state entry is split on its axis 1 (c_attn / c_fc)"
    hir.lower(program.module, PIPELINE)
    (got,) = hir.run(program.module, program.arguments(program.state(model), ids), device="cpu")
    if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
        return f"{name}: rank {rank}: max |error| {(got - want).abs().max().item():.2e}"
    return ""


def worker() -> int:
    return run_gloo_cases(["gpt2_tp_placements"], run_case)


@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_gpt2_tensor_parallel_placements(world):
    pytest.importorskip("transformers")
    checked, report = launch_workers(world, __file__, timeout_s=300, env=dict(os.environ))
    assert checked == world, report


if __name__ == "__main__":
    sys.exit(worker())
