"""hir.from_torch on the models people run, at one rank: HF transformer families (tiny random
configs, default options: ``use_cache=True`` included) and torch modules whose export needs
functionalizing; every output (named as the module returns it) equals eager torch."""

import re

import pytest
import torch
import torch.nn as nn

from hir import HirError
from hir.frontend import from_torch
from hir.frontend.output_tree import flatten_outputs

transformers = pytest.importorskip("transformers")

COMMON = dict(
    vocab_size=128,
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=64,
)


def hf_model(family: str) -> nn.Module:
    """A tiny randomly initialized HF model (no weights are downloaded)."""
    T = transformers
    torch.manual_seed(0)
    if family in ("gpt2", "gpt2-lm"):
        config = T.GPT2Config(
            vocab_size=128, n_embd=32, n_layer=1, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
        )
        return (T.GPT2LMHeadModel if family == "gpt2-lm" else T.GPT2Model)(config).eval()
    if family == "bert":
        return T.BertModel(T.BertConfig(**COMMON)).eval()
    config_class, model_class = {
        "llama": (T.LlamaConfig, T.LlamaModel),
        "qwen2": (T.Qwen2Config, T.Qwen2Model),
        "mistral": (T.MistralConfig, T.MistralModel),
    }[family]
    return model_class(config_class(num_key_value_heads=2, **COMMON)).eval()


def check(module: nn.Module, *inputs, state: dict = None):
    """Import, run with ``state`` (default: the module's state_dict) and compare every named output."""
    program = from_torch(module, inputs)
    got = program.run(module.state_dict() if state is None else state, *inputs, device="cpu")
    with torch.no_grad():
        names, want = flatten_outputs(module(*inputs))
    assert program.output_names == names
    assert len(got) == len(want)
    for name, g, w in zip(names, got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=lambda m, name=name: f"{name}: {m}")
    return program


# Qwen2 and Mistral (Llama's code path under other names: an import each) with HIR_TEST_SLOW=1
@pytest.mark.parametrize(
    "family",
    [
        "gpt2",
        "llama",
        pytest.param("qwen2", marks=pytest.mark.slow),
        pytest.param("mistral", marks=pytest.mark.slow),
        "bert",
    ],
)
def test_hf_model_defaults_equal_eager(family):
    """Non-persistent buffers (rotary ``inv_freq``, BERT's ``position_ids``) are left out of
    ``state_dict()`` but are arguments of @main, filled from the values seen at import."""
    model = hf_model(family)
    ids = torch.randint(0, 128, (2, 8))
    program = check(model, ids)
    if family != "bert":  # use_cache=True (the default): the new cache's tensors come out, named
        assert program.output_names[1:] == ["cache.0.keys", "cache.0.values"]
    transient = {"llama": "rotary_emb.inv_freq", "bert": "embeddings.position_ids"}.get(family)
    if transient:
        assert (
            transient in program.state_names and transient in program.captured and transient not in model.state_dict()
        )
        # program.state(model) is the whole state, non-persistent buffers included
        assert set(program.state_names) - set(program.state(model)) == {
            n for n in program.state_names if n.startswith("<constant")
        }
        first = next(n for n in program.state_names if n not in program.captured)
        with pytest.raises(HirError, match=f"error: the state dict lacks {re.escape(first)}"):
            program.run({}, ids, device="cpu")


def test_tied_weights_one_entry_both_names():
    model = hf_model("gpt2-lm")
    ids = torch.randint(0, 128, (2, 8))
    program = check(model, ids)
    assert program.aliases == {"lm_head.weight": "transformer.wte.weight"}
    assert "lm_head.weight" not in program.state_names
    # a state dict holding the tensor under the other name only runs too
    state = dict(model.state_dict())
    state["lm_head.weight"] = state.pop("transformer.wte.weight")
    (logits, *_), want = program.run(state, ids, device="cpu"), model(ids).logits
    torch.testing.assert_close(logits, want.detach(), rtol=1e-5, atol=1e-5)


class PaddedEncoder(nn.Module):
    """An encoder layer called with a boolean key padding mask (``from_torch`` passes inputs
    positionally; the layer's second positional argument is the attention mask)."""

    def __init__(self, norm_first: bool) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first)

    def forward(self, x, padding):
        return self.layer(x, src_key_padding_mask=padding)


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)  # (output, head-averaged weights)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_equal_eager(norm_first):
    torch.manual_seed(0)
    check(
        nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval(),
        torch.randn(2, 6, 32),
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_boolean_padding_mask_is_functionalized(norm_first):
    """A key padding mask leaves ``masked_fill_`` in the export; the functionalized graph
    imports and runs."""
    torch.manual_seed(0)
    mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    check(PaddedEncoder(norm_first).eval(), torch.randn(2, 6, 32), mask)


def test_multihead_attention_equal_eager():
    torch.manual_seed(0)
    program = check(SelfAttention().eval(), torch.randn(2, 6, 32))
    assert program.output_names == ["output0", "output1"]
