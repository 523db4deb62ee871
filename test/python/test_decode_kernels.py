"""Decode-shaped kernels (:mod:`hir.interpreter.decode_kernels`): which ops they stand in for
(decided from the op's static types), what the ``hir::`` ops compute where they fall back to
torch's kernels (CPU), a decode program planned with them standing in giving the same logits,
and (marked ``gpu``) the Triton kernels against float64 references on random data, the
attention reading only the used part of the cache."""

import pytest
import torch

from hir.dialect.context import HirError
from hir.interpreter import decode_kernels

transformers = pytest.importorskip("transformers")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

Q = "!torch.vtensor<[1,8,4,64],bf16>"
KV = "!torch.vtensor<[1,8,1024,64],bf16>"
MASK = "!torch.vtensor<[1,1,1,1024],i1>"
DECODE = [Q, KV, KV, MASK, "!torch.float", "!torch.bool", "!torch.float", "!torch.bool"]
CONSTANTS = [None, None, None, None, 0.0, False, 0.125, False]
SDPA = torch.ops.aten.scaled_dot_product_attention.default


def test_attention_stands_in_for_decode_shapes_only():
    assert decode_kernels.attention_fits(DECODE, CONSTANTS)
    causal = CONSTANTS[:5] + [True] + CONSTANTS[6:]
    assert not decode_kernels.attention_fits(DECODE, causal)
    prefill = [Q.replace("4,64", "512,64")] + DECODE[1:]
    assert not decode_kernels.attention_fits(prefill, CONSTANTS)
    float_mask = DECODE[:3] + [MASK.replace("i1", "bf16")] + DECODE[4:]
    assert not decode_kernels.attention_fits(float_mask, CONSTANTS)
    short = [DECODE[0], KV.replace("1024", "64"), KV.replace("1024", "64")] + DECODE[3:]
    assert not decode_kernels.attention_fits(short, CONSTANTS)
    dynamic = [Q.replace("[1,", "[?,")] + DECODE[1:]
    assert not decode_kernels.attention_fits(dynamic, CONSTANTS)
    # on the CPU nothing stands in
    assert decode_kernels.substitute(SDPA, lambda: DECODE, lambda: CONSTANTS, torch.device("cpu")) is SDPA


def test_linear_stands_in_for_a_few_rows(monkeypatch):
    fits = decode_kernels.linear_fits
    assert not fits((8, 1, 2048), torch.bfloat16, (2048, 2048), True, False, torch.device("cpu"))
    monkeypatch.setattr(decode_kernels, "available", lambda device: True)
    cuda = torch.device("cuda")
    assert fits((8, 1, 2048), torch.bfloat16, (2048, 2048), True, False, cuda)
    assert not fits((1, 512, 2048), torch.bfloat16, (2048, 2048), True, False, cuda)  # a prefill
    assert not fits((1, 1, 2048), torch.float32, (2048, 2048), True, False, cuda)
    assert not fits((1, 1, 2048), torch.bfloat16, (2048, 2048), True, True, cuda)  # a bias
    monkeypatch.setenv(decode_kernels.ENV, "attention")
    assert not fits((8, 1, 2048), torch.bfloat16, (2048, 2048), True, False, cuda)


def test_kernel_choice_by_environment(monkeypatch):
    monkeypatch.setenv(decode_kernels.ENV, "linear")
    assert decode_kernels.enabled("linear") and not decode_kernels.enabled("attention")
    monkeypatch.setenv(decode_kernels.ENV, "none")
    assert not decode_kernels.enabled("linear")
    monkeypatch.setenv(decode_kernels.ENV, "attention,gemm")
    with pytest.raises(HirError, match="unknown kernel.*gemm"):
        decode_kernels.enabled("attention")


def test_ops_fall_back_to_torch_off_cuda():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 3, 16), torch.randn(2, 4, 40, 16), torch.randn(2, 4, 40, 16)
    mask = (torch.arange(40) < 23).view(1, 1, 1, 40)
    got = torch.ops.hir.attention(q, k, v, mask, scale=0.3)
    assert torch.equal(got, torch.nn.functional.scaled_dot_product_attention(q, k, v, mask, scale=0.3))
    x, w = torch.randn(2, 1, 16), torch.randn(24, 16)
    assert torch.equal(torch.ops.hir.small_m_linear(x, w), torch.nn.functional.linear(x, w))


def test_decode_program_with_the_kernels_standing_in(monkeypatch):
    """A bf16 decode step planned as on CUDA (the ops stand in; on the CPU they run torch's
    kernels) gives the logits of the program without them."""
    import hir
    from hir.frontend.hf_decode import StaticCacheStep

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      intermediate_size=128, max_position_embeddings=256, bos_token_id=0, eos_token_id=None, pad_token_id=0)
    model = transformers.LlamaForCausalLM(config).eval().to(torch.bfloat16)
    step = StaticCacheStep(model, batch_size=2, max_cache_len=decode_kernels.MIN_CACHE)
    ids, pos = torch.tensor([[5], [9]]), torch.tensor([0])
    program = hir.from_torch(step, (ids, pos))
    chosen = []
    substitute = decode_kernels.substitute

    def recorded(overload, types, constants, device):
        chosen.append(substitute(overload, types, constants, torch.device("cuda")))
        return chosen[-1]

    monkeypatch.setattr(decode_kernels, "available", lambda device: True)
    monkeypatch.setattr(decode_kernels, "substitute", recorded)
    with torch.no_grad():
        fast = program.compile(program.state(step), device="cpu", graph=False, compile_kernels=False)
        monkeypatch.setenv(decode_kernels.ENV, "none")
        plain = program.compile(program.state(step), device="cpu", graph=False, compile_kernels=False)
        for position in range(3):
            ids, pos = torch.randint(0, 128, (2, 1)), torch.tensor([position])
            # each program has its own copy of the cache state, fed the same tokens
            assert torch.equal(fast(ids, pos), plain(ids, pos)), position
    assert chosen.count(torch.ops.hir.attention.default) == config.num_hidden_layers


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("batch,heads,rows,length,used", [(1, 8, 4, 1024, 513), (8, 8, 4, 1024, 1), (2, 4, 1, 300, 300), (1, 2, 16, 4096, 2500)])
def test_split_kv_attention_equals_sdpa(batch, heads, rows, length, used):
    from hir.interpreter.triton_decode import split_kv_attention

    torch.manual_seed(batch * 7 + length)
    q = torch.randn(batch, heads, rows, 64, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(batch, heads, length, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    mask = (torch.arange(length, device="cuda") < used).view(1, 1, 1, length).expand(batch, 1, 1, length).clone()
    if used > 2:
        mask[0, :, :, 0] = False  # a hole before the end
    # what lies past the used part is never read: poison it
    k[:, :, used:] = float("nan")
    v[:, :, used:] = float("nan")
    out = split_kv_attention(q, k, v, mask, 0.125)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double().nan_to_num(), v.double().nan_to_num(), mask, scale=0.125)
    assert out.is_contiguous() and not out.isnan().any()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("rows,n,k", [(1, 2048, 2048), (8, 16384, 2048), (8, 2048, 8192), (3, 32000, 2048), (16, 100, 72)])
def test_small_m_linear_equals_float64(rows, n, k):
    from hir.interpreter.triton_decode import small_m_linear

    torch.manual_seed(rows + n)
    x = torch.randn(rows, 1, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = small_m_linear(x, w)
    ref = x.double() @ w.double().T
    assert out.shape == (rows, 1, n) and out.is_contiguous() and ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
