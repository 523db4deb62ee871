"""Dynamic dims with bounds in hir's short form (``dynamic={"input0": {1: ("seq", 2, 64)}}``):
HF models whose code bounds the sequence (BERT's position table, Gemma2's) import with one
program for every size, equal to torch at three sizes; without the bound the error keeps
torch's reason and suggested fix (also in the short form); keyword inputs
(``example_kwargs``) are inputs too."""

import pytest
import torch

import hir

transformers = pytest.importorskip("transformers")

SIZES = [(1, 5), (3, 16), (2, 64)]


def bert():
    torch.manual_seed(0)
    T = transformers
    config = T.BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return T.BertModel(config).eval()


def test_unbounded_seq_error_keeps_torchs_fix():
    with pytest.raises(hir.HirError) as err:
        hir.from_torch(bert(), (torch.randint(0, 128, (2, 8)),), dynamic={"input0": {0: "batch", 1: "seq"}})
    message = str(err.value)
    assert "Constraints violated (seq)" in message and "<= 64" in message, message
    assert "torch suggests: seq = Dim('seq', max=64) (with dynamic=: {dim: ('seq', None, 64)})" in message, message


def test_bert_batch_and_seq_with_a_mask_keyword():
    model = bert()
    ids, mask = torch.randint(0, 128, (2, 8)), torch.ones(2, 8, dtype=torch.long)
    seq = ("seq", 2, 64)
    program = hir.from_torch(
        model,
        (ids,),
        example_kwargs={"attention_mask": mask, "output_hidden_states": False},
        dynamic={"input0": {0: "batch", 1: seq}, "attention_mask": {0: "batch", 1: seq}},
    )
    assert program.keyword_inputs == ["attention_mask"] and program.num_inputs == 2
    for batch, length in SIZES:
        x, m = torch.randint(0, 128, (batch, length)), torch.ones(batch, length, dtype=torch.long)
        m[0, -2:] = 0  # padding
        (hidden, pooled) = program.run(None, x, attention_mask=m, device="cpu")
        with torch.no_grad():
            want = model(x, attention_mask=m)
        torch.testing.assert_close(hidden, want.last_hidden_state)
        torch.testing.assert_close(pooled, want.pooler_output)
    with pytest.raises(hir.HirError, match=r"keyword inputs are \['attention_mask'\]; got \['mask'\]"):
        program.arguments(None, ids, mask=mask)
    # sizes outside the declared bounds are refused at the call, located (seq 65 would index past the position table)
    for length in (65, 1):
        x, m = torch.randint(0, 128, (1, length)), torch.ones(1, length, dtype=torch.long)
        message = (
            r"test_dynamic_bounds.py:\d+: error: input 0: dim 1 is dynamic "
            rf"dim seq, declared 2 <= seq <= 64 at import, got {length}"
        )
        with pytest.raises(hir.HirError, match=message):
            program.run(None, x, attention_mask=m, device="cpu")
        with pytest.raises(hir.HirError, match=message):
            program.compile(device="cpu")(x, m)


def test_torch_export_dim_bounds_are_enforced():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    program = hir.from_torch(
        model,
        (torch.randn(3, 5, 4),),
        dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=16), 1: torch.export.Dim("seq")},),
    )
    fn = program.compile(model.state_dict(), device="cpu")
    with torch.no_grad():
        for batch, seq in [(2, 1), (16, 300)]:
            x = torch.randn(batch, seq, 4)
            torch.testing.assert_close(fn(x), model(x))
        for batch in (1, 17):
            with pytest.raises(
                hir.HirError,
                match=rf"input 0: dim 0 is dynamic dim batch, declared 2 <= batch <= 16 at import, got {batch}",
            ):
                fn(torch.randn(batch, 4, 4))


@pytest.mark.slow  # the fast default: BERT above (and docs/from-pytorch.md's example)
def test_gemma2_seq():
    torch.manual_seed(0)
    T = transformers
    config = T.Gemma2Config(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        head_dim=8,
        max_position_embeddings=64,
    )
    model = T.Gemma2Model(config).eval()
    program = hir.from_torch(model, (torch.randint(0, 128, (2, 8)),), dynamic={"input0": {1: ("seq", 2, 64)}})
    for length in (3, 17, 40):
        x = torch.randint(0, 128, (2, length))
        got = program.run(None, x, device="cpu")
        with torch.no_grad():
            want = model(x)
        torch.testing.assert_close(got[0], want.last_hidden_state)


@pytest.mark.parametrize(
    "dynamic, message",
    [
        ({"input0": {1: ("seq", 2)}}, r"must map dims to names \(identifiers\) or \(name, min, max\)"),
        (
            {"input0": {0: ("n", 2, 8), 1: ("n", 2, 16)}},
            r"gives dim 'n' the bounds \{'min': 2, 'max': 16\}, another entry \{'min': 2, 'max': 8\}",
        ),
        ({"input0": {1: ("seq", 9, 4)}}, r"bounds \{'min': 9, 'max': 4\} of 'seq'"),
        ({"mask": {1: "seq"}}, r"dynamic names 'mask'; the inputs are input0 \.\.\. input0"),
    ],
)
def test_bad_bounds_are_named(dynamic, message):
    model = torch.nn.Linear(4, 4)
    with pytest.raises(hir.HirError, match=message):
        hir.from_torch(model, (torch.randn(3, 5, 4),), dynamic=dynamic)
