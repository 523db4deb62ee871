"""An MLP's gated product as one op, ``hir::swiglu`` (:func:`hir.frontend.fx_rewrites.fuse_swiglu`,
:mod:`hir.interpreter.decode_ops`): what the op computes and how a trace sees it, which
shapes its small-M kernel stands in for, and (marked ``gpu``) the Triton kernel against a
float64 reference and against torch's bf16 ops, and tuned ahead by the tuning child."""

import pytest
import torch
import torch.nn.functional as F

from hir.interpreter import decode_kernels, decode_ops, decode_tuning

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
SWIGLU = decode_ops.SWIGLU
SMALL_M = torch.ops.hir.swiglu_small_m.default


def vtensor(shape, dtype: str = "bf16") -> str:
    return f"!torch.vtensor<[{','.join(str(d) for d in shape)}],{dtype}>"


def reference(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return F.silu(F.linear(x, w_gate)) * F.linear(x, w_up)


def test_the_op_is_its_torch_ops_also_under_a_trace():
    """``hir::swiglu`` equals its four torch ops, and a trace (a compiled region's) sees them,
    so inductor compiles what it compiled before the import made one op of them; the kernel's
    op falls back to them off CUDA."""
    from torch.fx.experimental.proxy_tensor import make_fx

    torch.manual_seed(0)
    x, w_gate, w_up = torch.randn(2, 1, 24), torch.randn(40, 24), torch.randn(40, 24)
    assert torch.equal(SWIGLU(x, w_gate, w_up), reference(x, w_gate, w_up))
    assert torch.equal(SMALL_M(x, w_gate, w_up), reference(x, w_gate, w_up))
    traced = make_fx(SWIGLU)(x, w_gate, w_up)
    targets = {n.target for n in traced.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.silu.default in targets and torch.ops.aten.mul.Tensor in targets
    assert not any("swiglu" in str(t) for t in targets)


def test_the_kernel_stands_in_for_a_few_static_rows(monkeypatch):
    decode = [vtensor((8, 1, 2048)), vtensor((8192, 2048)), vtensor((8192, 2048))]
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    no_constants = list
    assert decode_kernels.substitute(SWIGLU, lambda: decode, no_constants, cpu) is SWIGLU
    monkeypatch.setattr(decode_kernels, "available", lambda device: True)
    monkeypatch.setenv(decode_kernels.ENV, "attention,linear,swiglu")  # (not tuned ahead: no child here)
    assert decode_kernels.substitute(SWIGLU, lambda: decode, no_constants, cuda) is SMALL_M
    prefill = [vtensor((1, 512, 2048)), *decode[1:]]
    others = [
        prefill,  # more than 16 rows
        [t.replace("512", "?") for t in prefill],  # a dynamic size
        [decode[0], decode[1], vtensor((4096, 2048))],  # weights of two shapes
        [vtensor((8, 1, 2048), "f32"), vtensor((8192, 2048), "f32"), vtensor((8192, 2048), "f32")],
        [decode[0], vtensor((8192, 1024)), vtensor((8192, 1024))],  # not the input's width
    ]
    for other in others:
        assert decode_kernels.substitute(SWIGLU, lambda other=other: other, no_constants, cuda) is SWIGLU, other
    monkeypatch.setenv(decode_kernels.ENV, "attention,linear")
    assert decode_kernels.substitute(SWIGLU, lambda: decode, no_constants, cuda) is SWIGLU


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("rows,n,k", [(1, 8192, 2048), (8, 8192, 2048), (16, 100, 72), (3, 5632, 2048)])
def test_swiglu_small_m_equals_float64_and_torch(rows, n, k):
    from hir.interpreter.triton_small_m import swiglu_small_m

    torch.manual_seed(rows + n)
    x = torch.randn(rows, 1, k, device="cuda", dtype=torch.bfloat16)
    w_gate, w_up = (torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in range(2))
    out = swiglu_small_m(x, w_gate, w_up)
    ref = reference(x.double(), w_gate.double(), w_up.double())
    assert out.shape == (rows, 1, n) and out.is_contiguous()
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
    torch.testing.assert_close(out, reference(x, w_gate, w_up), atol=2e-2, rtol=2e-2)
    assert torch.equal(SMALL_M(x, w_gate, w_up), out)


@pytest.mark.gpu
@needs_cuda
def test_the_kernel_is_tuned_ahead(tmp_path, monkeypatch):
    """A planned ``hir::swiglu_small_m`` is compiled and tuned by the tuning child: its answer
    comes back, and the first call then finds the autotuner's timings in Triton's cache."""
    monkeypatch.setattr(decode_tuning, "_TUNER", None)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    key = decode_tuning.swiglu_key(torch.bfloat16, 2, 1024, 512, torch.device("cuda", 0))
    decode_tuning.request(key)
    decode_tuning.wait(key)
    assert key not in decode_tuning._PENDING
    assert len(list(tmp_path.glob("*/_swiglu_small_m.autotune.json"))) == 1  # the child's timings
