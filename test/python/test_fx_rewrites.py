"""The exported graph's rewrites before import (python/hir/frontend/fx_rewrites.py, issue 34),
on a tiny HF Llama (2 layers, 4 query / 2 key-value heads): grouped-query attention on the
un-repeated keys and values, q/k/v fused into one GEMM whose concatenated weight is
parameter work (``hir.once``), and the MLP's gated product one op (``hir::swiglu``). Each
program equals eager torch, at two token counts of one dynamic import; a rewrite whose fake
values cannot be computed is skipped with a warning, never a failed import."""

import logging

import pytest
import torch

import hir
from hir.frontend import fx_rewrites

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch_mlir.fx")


@pytest.fixture(scope="module")
def llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return transformers.LlamaModel(config).eval()


def linears(program) -> int:
    return str(program.module).count('"hir.linear"')


def check_equal(program, model, tokens=(5, 9)) -> None:
    for n in tokens:
        ids = torch.randint(0, 128, (2, n), generator=torch.Generator().manual_seed(n))
        with torch.no_grad():
            want = model(ids).last_hidden_state
        got = program.run(program.state(model), ids, device="cpu")[program.output_names.index("last_hidden_state")]
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_fused_projections_and_grouped_attention_dynamic_tokens(llama):
    ids = torch.zeros(2, 4, dtype=torch.long)
    program = hir.from_torch(llama, (ids,), dynamic={"input0": {1: "tokens"}})
    plain = hir.from_torch(
        llama, (ids,), dynamic={"input0": {1: "tokens"}}, fused_projections=False, grouped_attention=False
    )
    # per layer: q, k, v one GEMM; gate and up one hir::swiglu with its SiLU and product
    assert linears(plain) - linears(program) == 2 * (2 + 2)
    assert str(program.module).count('"torch.hir.swiglu"') == 2 and '"torch.hir.swiglu"' not in str(plain.module)
    program.lower()
    assert "hir.once" in str(program.module)  # the concatenation runs once per set of weights
    check_equal(program, llama)
    check_equal(plain, llama)


def test_a_rewrite_that_cannot_type_its_nodes_is_skipped(llama, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("no fake kernel")

    monkeypatch.setattr(fx_rewrites, "linear_value", broken)
    ids = torch.zeros(2, 5, dtype=torch.long)
    with caplog.at_level(logging.WARNING, logger="hir.import"):
        program = hir.from_torch(llama, (ids,))
    assert "fuse_projections: rewrite skipped: RuntimeError: no fake kernel" in caplog.text
    assert linears(program) == linears(hir.from_torch(llama, (ids,), fused_projections=False))
    check_equal(program, llama, tokens=(5,))


def sdpa_masks(graph) -> list:
    sdpas = [
        n
        for n in graph.nodes
        if n.op == "call_function" and n.target is torch.ops.aten.scaled_dot_product_attention.default
    ]
    return [n.args[3] if len(n.args) > 3 else n.kwargs.get("attn_mask") for n in sdpas]


def test_the_layers_share_one_stacked_mask(llama):
    from hir.frontend.export import export

    masks = sdpa_masks(export(llama, (torch.zeros(2, 5, dtype=torch.long),), group_heads=True).program.graph)
    assert len(masks) == 2 and masks[0] is masks[1]  # stacked once for both layers, not per layer
    assert masks[0].target is torch.ops.aten.reshape.default
    assert masks[0].meta["val"].shape == (2, 1, 2 * 5, 5)  # 2 query heads per KV head: 2 x 5 rows


def test_a_one_row_mask_is_not_stacked():
    from hir.frontend.export import export
    from hir.frontend.hf_decode import StaticCacheStep

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        eos_token_id=None,
    )
    step = StaticCacheStep(transformers.LlamaForCausalLM(config).eval(), batch_size=3, max_cache_len=16)
    masks = sdpa_masks(
        export(step, (torch.zeros(3, 1, dtype=torch.long), torch.tensor([4])), group_heads=True).program.graph
    )
    assert len(masks) == 2 and all(m.meta["val"].shape == (3, 1, 1, 16) for m in masks)  # as HF made it: it broadcasts


class _Counter(torch.nn.Module):
    """A buffer written with ``copy_`` and then updated (as HF's static cache writes a layer's
    length), and one whose ``copy_`` is its new value."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("length", torch.zeros((), dtype=torch.long))
        self.register_buffer("last", torch.zeros(3))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.length.copy_(position[0])
        self.length.add_(x.shape[0])
        self.last.copy_(x)
        return x * self.length


def test_a_copy_into_a_fresh_tensor_is_its_source():
    from hir.frontend.export import export

    module = _Counter()
    x, position = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([5])
    graph = export(module, (x, position)).program.graph
    copies = [n for n in graph.nodes if n.op == "call_function" and n.target is torch.ops.aten.copy.default]
    assert len(copies) == 1 and copies[0].args[1].meta["val"].shape == (3,)  # `last`'s copy is its new value: kept
    program = hir.from_torch(module, (x, position))
    assert str(program.module).count("torch.aten.copy") == 1
    state = program.state(module)
    (got,) = program.run(state, x, position, device="cpu")
    torch.testing.assert_close(got, x * 8)
    assert int(state["length"]) == 8 and torch.equal(state["last"], x)


def test_the_two_step_exports_metadata_checks_are_erased():
    """The fallback export (``torch.export.export(...).run_decompositions({})``, for a torch
    without the one-trace internals) keeps a check per ``.to()``; erased, the graph is the
    one-trace export's, and the casts still run."""

    class Casts(torch.nn.Module):
        def forward(self, x):
            return x.to(torch.float64).sin().to(torch.float32)

    program = torch.export.export(Casts(), (torch.randn(4),), strict=False).run_decompositions({})
    checks = [n for n in program.graph.nodes if n.target is torch.ops.aten._assert_tensor_metadata.default]
    assert checks and fx_rewrites.drop_metadata_checks(program.graph) == len(checks)
    assert not [n for n in program.graph.nodes if n.target is torch.ops.aten._assert_tensor_metadata.default]
    x = torch.randn(4)
    torch.testing.assert_close(program.module()(x), x.double().sin().float())
