"""The exported graph's rewrites before import (python/hir/frontend/fx_rewrites.py, issue 34),
on a tiny HF Llama (2 layers, 4 query / 2 key-value heads): grouped-query attention on the
un-repeated keys and values, and q/k/v fused into one GEMM whose concatenated weight is
parameter work (``hir.once``). Each program equals eager torch, at two token counts of one
dynamic import; a rewrite whose fake values cannot be computed is skipped with a warning,
never a failed import."""

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
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64)
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
    plain = hir.from_torch(llama, (ids,), dynamic={"input0": {1: "tokens"}}, fused_projections=False, grouped_attention=False)
    assert linears(plain) - linears(program) == 2 * 2  # q, k, v: one GEMM per layer
    program.lower()
    assert "hir.once" in str(program.module)  # the concatenation runs once per set of weights
    check_equal(program, llama)
    check_equal(plain, llama)


def test_a_rewrite_that_cannot_type_its_nodes_is_skipped(llama, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("no fake kernel")

    monkeypatch.setattr(fx_rewrites, "_linear_value", broken)
    ids = torch.zeros(2, 5, dtype=torch.long)
    with caplog.at_level(logging.WARNING, logger="hir.import"):
        program = hir.from_torch(llama, (ids,))
    assert "fuse_projections: rewrite skipped: RuntimeError: no fake kernel" in caplog.text
    assert linears(program) == linears(hir.from_torch(llama, (ids,), fused_projections=False))
    check_equal(program, llama, tokens=(5,))
