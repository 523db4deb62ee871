"""One-row products with their RMSNorm or residual add as one op (python/hir/frontend/
fx_fusions.py, python/hir/interpreter/decode_fusions.py): what the import rewrites (a bf16
Llama decode step at batch 1; not a prefill, not batch 2, not with the mechanism off), the
composites equal the torch ops they stand for bit for bit, which kernel a plan picks from the
op's types, and the decode program with the fusions equal to the one without."""

import pytest
import torch
import torch.nn.functional as F

import hir
from decode_util import bf16_llama_step
from hir.interpreter import decode_fusions, decode_kernels

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch_mlir.fx")

FUSED = ("torch.hir.rms_norm_linear", "torch.hir.rms_norm_swiglu", "torch.hir.linear_residual")
LAYERS = 2


@pytest.fixture(scope="module")
def step():
    return bf16_llama_step(hidden=64, intermediate=128, vocab=128, max_cache_len=32, layers=LAYERS)


def fused_ops(program) -> list[int]:
    text = str(program.module)
    return [text.count(f'"{name}"') for name in FUSED]


def test_a_one_row_decode_step_fuses_each_layers_norms_and_residuals(step, monkeypatch):
    monkeypatch.delenv(decode_kernels.ENV, raising=False)
    program = hir.from_torch(step, (torch.tensor([[5]]), torch.tensor([0])))
    # per layer: the attention's norm and q/k/v product, the MLP's norm and gated product,
    # and the residual adds after the output and down projections; the last norm and the head
    assert fused_ops(program) == [LAYERS + 1, LAYERS, 2 * LAYERS]
    monkeypatch.setenv(decode_kernels.ENV, "attention,linear,swiglu,gemv")
    assert fused_ops(hir.from_torch(step, (torch.tensor([[5]]), torch.tensor([0])))) == [0, 0, 0]


def test_more_rows_are_not_fused(step):
    prefill = hir.from_torch(step, (torch.tensor([[5, 6, 7]]), torch.arange(3)))
    assert fused_ops(prefill) == [0, 0, 0]


def test_the_decode_program_equals_the_unfused_one(step, monkeypatch):
    monkeypatch.delenv(decode_kernels.ENV, raising=False)
    ids, pos = torch.tensor([[5]]), torch.tensor([0])
    fused = hir.from_torch(step, (ids, pos))
    monkeypatch.setenv(decode_kernels.ENV, "none")
    plain = hir.from_torch(step, (ids, pos))
    assert fused_ops(plain) == [0, 0, 0]
    with torch.no_grad():
        runs = [p.compile(p.state(step), device="cpu", graph=False) for p in (fused, plain)]
        for position in range(3):
            ids = torch.randint(0, 128, (1, 1), generator=torch.Generator().manual_seed(position))
            got, want = (run(ids, torch.tensor([position])) for run in runs)
            assert torch.equal(got, want), position


class NormThenProject(torch.nn.Module):
    """A Llama RMSNorm and a product of its row; ``twice``: the normalized row used again."""

    def __init__(self, twice: bool) -> None:
        super().__init__()
        self.twice = twice
        self.norm = transformers.models.llama.modeling_llama.LlamaRMSNorm(16)
        self.proj = torch.nn.Linear(16, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = self.norm(x)
        return self.proj(normed).sum() + normed.sum() if self.twice else self.proj(normed)


@pytest.mark.parametrize("twice", [False, True])
def test_a_normalized_row_used_twice_is_not_fused(twice):
    module = NormThenProject(twice).to(torch.bfloat16)
    x = torch.randn(1, 1, 16, dtype=torch.bfloat16)
    program = hir.from_torch(module, (x,))
    assert fused_ops(program) == [0 if twice else 1, 0, 0]
    with torch.no_grad():
        assert torch.equal(program.run(program.state(module), x, device="cpu")[0], module(x))


def test_the_composites_are_their_torch_ops():
    torch.manual_seed(0)
    norm = transformers.models.llama.modeling_llama.LlamaRMSNorm(48, eps=1e-5).to(torch.bfloat16)
    torch.nn.init.normal_(norm.weight)
    x = torch.randn(1, 1, 48, dtype=torch.bfloat16)
    w, w_up = (torch.randn(40, 48, dtype=torch.bfloat16) for _ in range(2))
    residual = torch.randn(1, 1, 40, dtype=torch.bfloat16)
    with torch.no_grad():
        normed = norm(x)
        assert torch.equal(torch.ops.hir.rms_norm_linear(x, norm.weight, w, 1e-5), F.linear(normed, w))
        want = F.silu(F.linear(normed, w)) * F.linear(normed, w_up)
        assert torch.equal(torch.ops.hir.rms_norm_swiglu(x, norm.weight, w, w_up, 1e-5), want)
        assert torch.equal(torch.ops.hir.linear_residual(x, w, residual), residual + F.linear(x, w))
        # the kernels' ops, off CUDA, are the composites
        assert torch.equal(torch.ops.hir.rms_norm_linear_gemv(x, norm.weight, w, 1e-5), F.linear(normed, w))
        assert torch.equal(torch.ops.hir.rms_norm_swiglu_gemv(x, norm.weight, w, w_up, 1e-5), want)
        assert torch.equal(torch.ops.hir.linear_residual_gemv(x, w, residual), residual + F.linear(x, w))


ROW = "!torch.vtensor<[1,1,2048],bf16>"
NORM = "!torch.vtensor<[2048],bf16>"
WEIGHT = "!torch.vtensor<[3072,2048],bf16>"
EPS = "!torch.float"


def test_the_kernel_stands_in_for_one_row_only(monkeypatch):
    cuda = torch.device("cuda")
    norm_linear = decode_fusions.RMS_NORM_LINEAR
    assert decode_fusions.substitute(norm_linear, lambda: [ROW, NORM, WEIGHT, EPS], torch.device("cpu")) is norm_linear
    monkeypatch.setattr(decode_kernels, "available", lambda device: True)
    monkeypatch.setenv(decode_kernels.ENV, "norm-residual")
    kernel = torch.ops.hir.rms_norm_linear_gemv.default
    assert decode_fusions.substitute(norm_linear, lambda: [ROW, NORM, WEIGHT, EPS], cuda) is kernel
    assert decode_fusions.is_decode_kernel(kernel) and not decode_fusions.is_decode_kernel(norm_linear)
    two_rows = ROW.replace("[1,1,", "[2,1,")
    assert decode_fusions.substitute(norm_linear, lambda: [two_rows, NORM, WEIGHT, EPS], cuda) is norm_linear
    f32 = [ROW.replace("bf16", "f32"), NORM.replace("bf16", "f32"), WEIGHT.replace("bf16", "f32"), EPS]
    assert not decode_fusions.fits(norm_linear, f32)
    assert not decode_fusions.fits(norm_linear, [ROW, NORM, WEIGHT.replace(",2048]", ",1024]"), EPS])
    assert not decode_fusions.fits(norm_linear, [ROW, NORM.replace("2048", "1024"), WEIGHT, EPS])
    gated = decode_fusions.RMS_NORM_SWIGLU
    assert decode_fusions.fits(gated, [ROW, NORM, WEIGHT, WEIGHT, EPS])
    assert not decode_fusions.fits(gated, [ROW, NORM, WEIGHT, WEIGHT.replace("3072", "1024"), EPS])
    residual = decode_fusions.LINEAR_RESIDUAL
    assert decode_fusions.fits(residual, [ROW, WEIGHT, "!torch.vtensor<[1,1,3072],bf16>"])
    assert not decode_fusions.fits(residual, [ROW, WEIGHT, "!torch.vtensor<[1,2,3072],bf16>"])
    monkeypatch.setenv(decode_kernels.ENV, "attention,linear")
    assert decode_fusions.substitute(norm_linear, lambda: [ROW, NORM, WEIGHT, EPS], cuda) is norm_linear
