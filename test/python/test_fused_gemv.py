"""The one-row kernel with its neighbours (python/hir/interpreter/triton_one_row.py's one_row_linear), on
CUDA: each variant against the composite op it stands for at a 1B Llama's shapes, a bf16
decode step planned with them against the same step without the fusions, and the kernels
tuned ahead by the child process."""

import os
import subprocess
import sys

import pytest
import torch

from decode_util import bf16_llama_step
from hir.interpreter import decode_kernels

transformers = pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]
HERE = os.path.dirname(os.path.abspath(__file__))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


@pytest.mark.parametrize("n,k", [(3072, 2048), (2048, 8192), (8192, 2048), (1000, 520)])
def test_each_variant_equals_its_composite(n, k):
    torch.manual_seed(n + k)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    x, norm_weight = torch.randn(1, 1, k, **bf16), torch.randn(k, **bf16)
    w, w_up = (torch.randn(n, k, **bf16) / k**0.5 for _ in range(2))
    residual = torch.randn(1, 1, n, **bf16)
    hir = torch.ops.hir
    pairs = [
        (hir.rms_norm_linear_gemv(x, norm_weight, w, 1e-5), hir.rms_norm_linear(x, norm_weight, w, 1e-5)),
        (
            hir.rms_norm_swiglu_gemv(x, norm_weight, w, w_up, 1e-5),
            hir.rms_norm_swiglu(x, norm_weight, w, w_up, 1e-5),
        ),
        (hir.linear_residual_gemv(x, w, residual), hir.linear_residual(x, w, residual)),
    ]
    for got, want in pairs:
        assert got.shape == want.shape and got.is_contiguous()
        assert relative_error(got, want) < 1e-2


@pytest.mark.parametrize("n,k", [(3072, 2048), (2048, 8192), (1000, 520)])
def test_every_tile_of_the_one_row_kernel_equals_the_tuned_one(n, k):
    """Each of the autotuner's tiles (the unrolled ones among them), launched plainly and as a
    programmatic dependent loading its weight first, gives the tuned kernel's product within
    bf16's tolerance: the autotuner times the tiles but never checks what they compute."""
    import triton

    from hir.interpreter import dependent_launch, triton_one_row

    torch.manual_seed(n + k)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    x, norm_weight = torch.randn(1, k, **bf16), torch.randn(k, **bf16)
    w, w_up = (torch.randn(n, k, **bf16) / k**0.5 for _ in range(2))
    want = triton_one_row.one_row_linear(x, w, norm_weight=norm_weight, eps=1e-5, w_up=w_up).view(n)
    pdl = dependent_launch.supported(torch.device("cuda"))
    for config in triton_one_row._gemv_configs():
        for dependent in (False, True) if pdl else (False,):
            out = torch.empty(n, **bf16)
            triton_one_row._gemv[(triton.cdiv(n, config.kwargs["BLOCK_N"]),)](
                x, norm_weight, w, w_up, out, out, n, k, w.stride(0), 1e-5,
                NORM=True, GATED=True, RESIDUAL=False, PDL=dependent, WEIGHT_FIRST=dependent,
                num_warps=config.num_warps, num_stages=config.num_stages, launch_pdl=dependent, **config.kwargs,
            )  # fmt: skip
            assert relative_error(out, want) < 1e-2, (config, dependent)


def test_a_decode_step_with_the_fused_kernels(monkeypatch):
    """A bf16 batch-1 decode step on CUDA, fused at import and planned with the kernels,
    gives the logits of the step imported and planned without them (bf16 tolerance), and
    its plan runs each layer's three fused kernels and the head's."""
    import hir
    from hir.interpreter import decode_fusions

    step = bf16_llama_step(hidden=256, intermediate=512, vocab=256, max_cache_len=decode_kernels.MIN_CACHE)
    ids, pos = torch.tensor([[5]]), torch.tensor([0])
    monkeypatch.delenv(decode_kernels.ENV, raising=False)
    fused = hir.from_torch(step, (ids, pos))
    chosen = []
    substitute = decode_fusions.substitute

    def recorded(overload, types, device):
        chosen.append(substitute(overload, types, device))
        return chosen[-1]

    monkeypatch.setattr(decode_fusions, "substitute", recorded)
    with torch.no_grad():
        fast = fused.compile(fused.state(step), device="cuda")
        monkeypatch.setenv(decode_kernels.ENV, "attention,linear,swiglu,gemv")
        plain_program = hir.from_torch(step, (ids, pos))
        plain = plain_program.compile(plain_program.state(step), device="cuda")
        for position in range(4):
            ids = torch.randint(0, 256, (1, 1), generator=torch.Generator().manual_seed(position))
            got, want = fast(ids, torch.tensor([position])), plain(ids, torch.tensor([position]))
            assert relative_error(got, want) < 2e-2, position
    kernels = ("rms_norm_linear_gemv", "rms_norm_swiglu_gemv", "linear_residual_gemv")
    assert [chosen.count(getattr(torch.ops.hir, k).default) for k in kernels] == [3, 2, 4]  # (3: and the head)


def test_the_fused_kernels_tuned_ahead_load_from_the_cache(tmp_path):
    """Requested ahead, the child tunes each variant into Triton's cache; the call then loads
    the child's timings and kernels, those launched as programmatic dependents among them, and
    compiles nothing (in a fresh process, so nothing is in memory from other tests)."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    check = (
        f"import sys; sys.path.insert(0, {HERE!r}); import test_fused_gemv as t; t.tuned_ahead_check({str(tmp_path)!r})"
    )
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def tuned_ahead_check(cache: str) -> None:
    """The body of :func:`test_the_fused_kernels_tuned_ahead_load_from_the_cache`."""
    import json
    import pathlib

    from hir.interpreter import decode_tuning, dependent_launch, triton_one_row

    cuda = torch.device("cuda", torch.cuda.current_device())
    variants = ("rms_norm_linear", "rms_norm_swiglu", "linear_residual")
    keys = [decode_tuning.fused_key(torch.bfloat16, 1040, 528, v, cuda) for v in variants]
    for key in keys:
        decode_tuning.request(key)
    for key in reversed(keys):
        decode_tuning.wait(key)
    assert not decode_tuning.waiting()
    tuned = [json.loads(p.read_text()) for p in pathlib.Path(cache).glob("*/_gemv.autotune.json")]
    assert len(tuned) == 3
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}

    def files() -> set:
        return {p for p in pathlib.Path(cache).rglob("*") if p.is_file()}

    compiled = files()
    x, w, r = torch.randn(1, 528, **bf16), torch.randn(1040, 528, **bf16), torch.randn(1, 1040, **bf16)
    torch.ops.hir.linear_residual_gemv(x, w, r)
    timings = sorted(triton_one_row._GEMV.configs_timings.values())
    assert any(timings == sorted(t for _, t in entry["configs_timings"]) for entry in tuned)
    # each variant, and the capture's launches of its tuned tile (as a programmatic dependent)
    norm = {"norm_weight": torch.randn(528, **bf16), "eps": 1e-6}
    dependent = dependent_launch.supported(cuda)
    launches = [{}] + [{"pdl": True, "weight_first": first} for first in (False, True) if dependent]
    for neighbours in (norm, {**norm, "w_up": torch.randn(1040, 528, **bf16)}, {"residual": r}):
        for launch in launches:
            triton_one_row.one_row_linear(x, w, **neighbours, **launch)
    torch.cuda.synchronize()
    assert files() == compiled, f"the calling process compiled {sorted(p.name for p in files() - compiled)}"
