"""Decode-shaped kernels (:mod:`hir.interpreter.decode_kernels`): which ops they stand in for
(decided from the op's static types), what the ``hir::`` ops compute where they fall back to
torch's kernels (CPU), a decode program planned with them standing in giving the same logits,
and (marked ``gpu``) the Triton kernels against float64 references on random data, the
attention reading only the used part of the cache."""

import os
import subprocess
import sys

import pytest
import torch

from hir.dialect.context import HirError
from hir.interpreter import decode_kernels, decode_ops

transformers = pytest.importorskip("transformers")
HERE = os.path.dirname(os.path.abspath(__file__))
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


def test_tensors_past_int32_offsets_are_left_to_torch():
    """The kernels' offsets are int32: a tensor reaching past them runs torch's kernel."""
    fits = decode_ops.int32_offsets
    meta = {"device": "meta", "dtype": torch.bfloat16}
    assert fits(torch.empty(1, 1, 2048, **meta), torch.empty(32000, 2048, **meta))
    assert fits(torch.empty(2**16, 2**15, **meta))  # 2**31 elements: the last at offset 2**31 - 1
    assert fits(torch.empty(2**16, 2**15, **meta).t())
    assert not fits(torch.empty(1, 2048, **meta), torch.empty(2**16 + 1, 2**15, **meta))
    mask = torch.empty(1, 1, 1, 2**20, dtype=torch.bool, device="meta")
    assert fits(mask.expand(64, 8, 4, 2**20))  # broadcast: one row in memory
    assert not fits(torch.empty(64, 8, 2**16, 128, **meta))  # a long cache at batch 64


def test_kernel_choice_by_environment(monkeypatch):
    monkeypatch.setenv(decode_kernels.ENV, "linear")
    assert decode_kernels.enabled("linear") and not decode_kernels.enabled("attention")
    assert decode_kernels.small_m_linear_op() is torch.ops.hir.small_m_linear.default
    monkeypatch.setenv(decode_kernels.ENV, "linear,gemv")
    assert decode_kernels.small_m_linear_op() is torch.ops.hir.small_m_linear_gemv.default
    monkeypatch.delenv(decode_kernels.ENV)
    assert decode_kernels.small_m_linear_op() is torch.ops.hir.small_m_linear_splitk_gemv.default
    monkeypatch.setenv(decode_kernels.ENV, "attention,fused-combine")
    assert decode_kernels.substitute(SDPA, lambda: DECODE, lambda: CONSTANTS, torch.device("cpu")) is SDPA
    monkeypatch.setattr(decode_kernels, "available", lambda device: True)
    cuda = torch.device("cuda")
    assert (
        decode_kernels.substitute(SDPA, lambda: DECODE, lambda: CONSTANTS, cuda)
        is torch.ops.hir.attention_fused.default
    )
    monkeypatch.setenv(decode_kernels.ENV, "attention,split-k")
    assert decode_kernels.substitute(SDPA, lambda: DECODE, lambda: CONSTANTS, cuda) is torch.ops.hir.attention.default
    assert not decode_kernels.inductor_pdl(cuda)
    monkeypatch.setenv(decode_kernels.ENV, "none")
    assert not decode_kernels.enabled("linear")
    monkeypatch.setenv(decode_kernels.ENV, "attention,gemm")
    with pytest.raises(HirError, match="unknown kernel.*gemm"):
        decode_kernels.enabled("attention")


def test_a_planned_program_compiles_with_combo_kernels(monkeypatch):
    """``inductor-combo``: a program that plans a decode kernel on CUDA compiles its regions
    with inductor's combo kernels; left out of ``HIR_DECODE_KERNELS``, or on the CPU, not."""
    from types import SimpleNamespace

    from hir.interpreter.kernels import KernelCompileStats, inductor_options

    def planned(device: str) -> KernelCompileStats:
        runtime = SimpleNamespace(
            device=torch.device(device), kernel_compile=KernelCompileStats(), dependent_launches=False
        )
        decode_kernels.planned(runtime)
        return runtime.kernel_compile

    monkeypatch.setattr(decode_kernels, "available", lambda device: device.type == "cuda")
    monkeypatch.setattr(decode_kernels, "inductor_pdl", lambda device: False)  # (asks the GPU's capability)
    assert planned("cuda").combo and not planned("cpu").combo
    monkeypatch.setenv(decode_kernels.ENV, "attention,linear,kernel-pdl")
    assert not planned("cuda").combo
    assert inductor_options(False, combo=True)["combo_kernels"] is True
    assert "combo_kernels" not in inductor_options(False, pdl=True)


@pytest.mark.parametrize("variant", ["", "_fused"])
def test_ops_fall_back_to_torch_off_cuda(variant):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 3, 16), torch.randn(2, 4, 40, 16), torch.randn(2, 4, 40, 16)
    mask = (torch.arange(40) < 23).view(1, 1, 1, 40)
    got = getattr(torch.ops.hir, "attention" + variant)(q, k, v, mask, scale=0.3)
    assert torch.equal(got, torch.nn.functional.scaled_dot_product_attention(q, k, v, mask, scale=0.3))
    x, w = torch.randn(2, 1, 16), torch.randn(24, 16)
    linear = getattr(torch.ops.hir, "small_m_linear" + variant.replace("_fused", "_splitk"))
    assert torch.equal(linear(x, w), torch.nn.functional.linear(x, w))


def test_decode_program_with_the_kernels_standing_in(monkeypatch):
    """A bf16 decode step planned as on CUDA (the ops stand in; on the CPU they run torch's
    kernels) gives the logits of the program without them."""
    import hir
    from hir.frontend.hf_decode import StaticCacheStep

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=256,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
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
    assert chosen.count(torch.ops.hir.attention_fused.default) == config.num_hidden_layers
    assert chosen.count(torch.ops.hir.swiglu_small_m.default) == config.num_hidden_layers


def attention_case(batch, heads, rows, length, used, dim, device, dtype):
    """Random q, k, v and a mask using ``used`` positions (a hole at 0), the cache past them
    poisoned with NaN (never read), and the float64 reference."""
    torch.manual_seed(batch * 7 + length)
    q = torch.randn(batch, heads, rows, dim, device=device, dtype=dtype)
    k, v = (torch.randn(batch, heads, length, dim, device=device, dtype=dtype) for _ in range(2))
    mask = (torch.arange(length, device=device) < used).view(1, 1, 1, length).expand(batch, 1, 1, length).clone()
    if used > 2:
        mask[0, :, :, 0] = False  # a hole before the end
    k[:, :, used:] = float("nan")
    v[:, :, used:] = float("nan")
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double().nan_to_num(), v.double().nan_to_num(), mask, scale=0.125
    )
    return q, k, v, mask, ref


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


INTERPRETED = """
import torch
from hir.interpreter import triton_decode, triton_small_m
from test_decode_kernels import attention_case, relative_error

for fused_combine in (False, True):
    # the last: 16 chunks of 16 rows x 64, their parts combined in two groups
    for shape in [(1, 2, 4, 256, 130, 16), (2, 1, 1, 192, 1, 16), (1, 1, 16, 1024, 700, 64)]:
        q, k, v, mask, ref = attention_case(*shape, "cpu", torch.float16)
        out = triton_decode.split_kv_attention(q, k, v, mask, 0.125, fused_combine=fused_combine)
        assert out.is_contiguous() and not out.isnan().any() and relative_error(out, ref) < 1e-2, shape
x, w = torch.randn(3, 72, dtype=torch.float16), torch.randn(40, 72, dtype=torch.float16)
for split_k in (1, 2, 4):  # K in 5 blocks: with 4 parts the last one is empty
    out, work = torch.empty(3, 40, dtype=torch.float16), torch.empty(4 * 16 * 40)
    arrived = triton_decode.arrival_counters(torch.device("cpu"), 40)
    triton_small_m._small_m_linear[(3, split_k)](
        x, w, out, work, arrived, 3, 40, 72, *x.stride(), *w.stride(), *out.stride(),
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, SPLIT_K=split_k,
    )
    assert relative_error(out, x.double() @ w.double().T) < 1e-2, split_k
assert not triton_decode._ARRIVALS[(torch.device("cpu"), 0)][-1].any()
print("interpreted: ok")
"""


def test_split_kv_attention_interpreted():
    """The Triton kernels under Triton's CPU interpreter (tiny shapes; a process of its own:
    ``TRITON_INTERPRET`` counts where Triton is imported): the attention's combine apart and
    folded into the chunk kernel (the chunks' parts combined at once and in groups), the
    product's K whole and in 2 and 4 parts (the arrival counters zero again after the calls)."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), *sys.path])}
    done = subprocess.run([sys.executable, "-c", INTERPRETED], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "interpreted: ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("fused_combine", [False, True])
@pytest.mark.parametrize(
    "batch,heads,rows,length,used",
    [(1, 8, 4, 1024, 513), (8, 8, 4, 1024, 1), (2, 4, 1, 300, 300), (1, 2, 16, 4096, 2500)],
)
def test_split_kv_attention_equals_sdpa(batch, heads, rows, length, used, fused_combine):
    from hir.interpreter.triton_decode import split_kv_attention

    q, k, v, mask, ref = attention_case(batch, heads, rows, length, used, 64, "cuda", torch.bfloat16)
    for _ in range(2):  # the fused combine's counters are zero again after a call
        out = split_kv_attention(q, k, v, mask, 0.125, fused_combine=fused_combine)
        assert out.is_contiguous() and not out.isnan().any() and relative_error(out, ref) < 1e-2


@pytest.mark.gpu
@needs_cuda
def test_one_launch_kernels_in_a_cuda_graph():
    """The split-K product and the fused attention captured in a CUDA graph: each replay's
    results are right for that replay's inputs (the arrival counters are zero again after
    every replay)."""
    from hir.interpreter.triton_decode import split_kv_attention
    from hir.interpreter.triton_small_m import small_m_linear

    torch.manual_seed(0)
    src = torch.randn(8, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16)
    q0, k, v, mask, _ = attention_case(8, 8, 4, 1024, 700, 64, "cuda", torch.bfloat16)

    def step():
        x = src * 2  # written by the kernel right before the product
        y = small_m_linear(x, w, split_k=True)
        q = q0 * y[:, :1, None, None]  # ... and before the attention
        return y, q, split_kv_attention(q, k, v, mask, 0.125, fused_combine=True)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y, q, out = step()
    for _ in range(3):
        src.normal_()
        graph.replay()
        want = (src.double() * 2) @ w.double().T
        assert relative_error(y, want) < 1e-2
        # against the attention of the bf16 q the graph computed (q's rounding moves sharp softmaxes)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double().nan_to_num(), v.double().nan_to_num(), mask, scale=0.125
        )
        assert relative_error(out, ref) < 1e-2


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize(
    "rows,n,k,split_k,gemv",
    [
        (1, 2048, 2048, False, False),
        (1, 2048, 2048, True, True),
        (1, 32000, 2048, False, True),
        (1, 100, 72, True, True),
        (8, 16384, 2048, True, True),
        (8, 2048, 8192, True, False),
        (3, 32000, 2048, False, False),
        (16, 100, 72, True, False),
    ],
)
def test_small_m_linear_equals_float64(rows, n, k, split_k, gemv):
    from hir.interpreter.triton_small_m import small_m_linear

    torch.manual_seed(rows + n)
    x = torch.randn(rows, 1, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = small_m_linear(x, w, split_k=split_k, gemv=gemv)
    ref = x.double() @ w.double().T
    assert (
        out.shape == (rows, 1, n) and out.is_contiguous() and ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
    )


def test_a_request_is_answered_where_the_child_cannot_compile(tmp_path, monkeypatch):
    """The child answers every request, also one it fails on (here the device is not there or
    the shape is empty), so a first call waits for no more than the child's work; it ends
    with its stdin."""
    from hir.interpreter import decode_tuning

    monkeypatch.setattr(decode_tuning, "_TUNER", None)
    monkeypatch.setattr(decode_tuning, "_PENDING", {})  # (earlier tests' plans may leave requests unanswered)
    monkeypatch.setattr(decode_tuning, "_SENT", set())
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    missing = torch.device("cuda", 63)
    keys = [
        decode_tuning.linear_key(torch.bfloat16, 1, 0, 64, True, True, missing),
        ("unknown", "bfloat16", missing.index),
    ]
    for key in keys + keys[:1]:
        decode_tuning.request(key)
    assert decode_tuning.waiting()
    for key in reversed(keys):
        decode_tuning.wait(key)
    assert not decode_tuning.waiting()
    tuner = decode_tuning._TUNER
    assert tuner is not None and tuner.process.stdin is not None
    tuner.process.stdin.close()
    assert tuner.process.wait(timeout=60) == 0


def test_the_child_started_ahead_takes_the_first_request(tmp_path, monkeypatch):
    """``hir.generate`` starts the child before its export (``start_tuning``, where decode
    kernels may be planned): the plan's first request goes to that child, not to another."""
    from hir.interpreter import decode_kernels, decode_tuning

    monkeypatch.setattr(decode_tuning, "_TUNER", None)
    monkeypatch.setattr(decode_tuning, "_PENDING", {})  # (earlier tests' plans may leave requests unanswered)
    monkeypatch.setattr(decode_tuning, "_SENT", set())
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    for check in ("available", "tune_ahead"):  # as on a machine with CUDA and Triton
        monkeypatch.setattr(decode_kernels, check, lambda device: device.type == "cuda")
    missing = torch.device("cuda", 62)  # no such device: the child answers its requests as failed
    decode_kernels.start_tuning(torch.device("cpu"), torch.bfloat16)
    decode_kernels.start_tuning(missing, torch.float32)
    assert decode_tuning._TUNER is None  # no decode kernel is planned for either
    decode_kernels.start_tuning(missing, torch.bfloat16)
    started = decode_tuning._TUNER
    assert started is not None and started.process.poll() is None
    key = decode_tuning.linear_key(torch.bfloat16, 2, 0, 64, True, False, missing)
    decode_tuning.request(key)
    decode_tuning.wait(key)
    assert decode_tuning._TUNER is started and not decode_tuning.waiting()
    started.end()
    assert started.process.wait(timeout=60) == 0


@pytest.mark.gpu
@needs_cuda
def test_kernels_tuned_ahead_load_from_the_cache(tmp_path):
    """A product and an attention requested ahead: the child compiles them into Triton's cache
    (and times the product's tiles there); the calls then load them: the autotuner's timings
    are the child's, and no other specialization is compiled. In a fresh process: kernels
    this one compiled or tuned before (other tests) would be found in its memory instead."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    check = (
        f"import sys; sys.path.insert(0, {HERE!r}); import test_decode_kernels as t; "
        f"t.tuned_ahead_check({str(tmp_path)!r})"
    )
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def tuned_ahead_check(cache: str) -> None:
    """The body of :func:`test_kernels_tuned_ahead_load_from_the_cache`, run with
    ``TRITON_CACHE_DIR`` set to ``cache``."""
    import json
    import pathlib

    from hir.interpreter import decode_tuning, dependent_launch, triton_one_row, triton_small_m
    from hir.interpreter.triton_decode import split_kv_attention

    tmp_path = pathlib.Path(cache)
    cuda = torch.device("cuda", torch.cuda.current_device())
    linear = decode_tuning.linear_key(torch.bfloat16, 3, 1040, 528, True, False, cuda)
    one_row = decode_tuning.linear_key(torch.bfloat16, 1, 1040, 528, True, True, cuda)
    shapes = ((1, 4, 2, 64), (1, 4, 384, 64), (1, 1, 2, 384))
    attention = decode_tuning.attention_key(torch.bfloat16, *shapes, True, cuda)
    for key in (linear, one_row, attention):
        decode_tuning.request(key)
    for key in (attention, one_row, linear):
        decode_tuning.wait(key)
    assert not decode_tuning.waiting()
    tuned = [json.loads(path.read_text()) for path in tmp_path.glob("*/_small_m_linear.autotune.json")]
    assert len(tuned) == 1
    tuned_gemv = [json.loads(path.read_text()) for path in tmp_path.glob("*/_gemv.autotune.json")]
    assert len(tuned_gemv) == 1
    kernels = ("_small_m_linear", "_gemv", "_attention_chunk")
    compiled = {name: len(list(tmp_path.glob(f"*/{name}.json"))) for name in kernels}
    # every tile of the one-row product, the attention once, and where the capture will launch them as
    # programmatic dependents, those launches too (the product plain and weight-first)
    dependent = dependent_launch.supported(cuda)
    assert compiled["_small_m_linear"] >= 2 and compiled["_attention_chunk"] == 1 + dependent
    assert compiled["_gemv"] == len(triton_one_row._GEMV.configs) + 2 * dependent

    torch.manual_seed(0)
    x = torch.randn(3, 1, 528, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1040, 528, device="cuda", dtype=torch.bfloat16)
    out = torch.ops.hir.small_m_linear_splitk(x, w)
    assert relative_error(out, x.double() @ w.double().T) < 1e-2
    timings = triton_small_m._LINEAR[True].configs_timings
    assert sorted(timings.values()) == sorted(timing for _, timing in tuned[0]["configs_timings"])
    out = torch.ops.hir.small_m_linear_splitk_gemv(x[:1], w)
    assert relative_error(out, x[:1].double() @ w.double().T) < 1e-2
    for weight_first in (False, True) if dependent else ():  # as the capture launches it
        out = triton_one_row.one_row_linear(x[:1], w, pdl=True, weight_first=weight_first)
        assert relative_error(out, x[:1].double() @ w.double().T) < 1e-2
    timings = triton_one_row._GEMV.configs_timings
    assert sorted(timings.values()) == sorted(timing for _, timing in tuned_gemv[0]["configs_timings"])
    q, k, v, mask, ref = attention_case(1, 4, 2, 384, 200, 64, "cuda", torch.bfloat16)
    mask = mask[:, :, :1].expand(shapes[2]).contiguous()
    for pdl in (False, True) if dependent else (False,):
        out = split_kv_attention(q, k, v, mask, 0.125, fused_combine=True, pdl=pdl)
        assert relative_error(out, ref) < 1e-2
    assert compiled == {name: len(list(tmp_path.glob(f"*/{name}.json"))) for name in compiled}
