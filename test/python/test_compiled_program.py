"""``program.compile(state)`` / ``hir.compile`` (issue 34): the state bound once (tensors
already on the device are the program's, so a KV cache written in place is the caller's),
the module lowered once, inputs checked with errors naming the input; on CUDA every call
passes the same buffers, so from the third call on it is one bound graph replay."""

import copy
import os
import subprocess
import sys

import pytest
import torch

import hir
from hir.frontend import hf_decode
from hir.frontend.hf_decode import StaticCacheStep, cache_keyword

transformers = pytest.importorskip("transformers")


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()


def tiny_step(device="cpu"):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        eos_token_id=None,
    )
    model = transformers.LlamaForCausalLM(config).eval().to(device)
    return StaticCacheStep(model, batch_size=1, max_cache_len=16)


def test_state_bound_once_and_lowered_once():
    model = mlp()
    x = torch.randn(8, 16)
    program = hir.from_torch(model, (x,))
    state = model.state_dict()
    fn = program.compile(state, device="cpu")
    assert program.lowered and '"hir.linear"' in str(program.module)
    assert all(fn.state[name].data_ptr() == tensor.data_ptr() for name, tensor in state.items())
    for _ in range(3):
        x = torch.randn(8, 16)
        torch.testing.assert_close(fn(x), model(x))
    with torch.no_grad():  # the bound state is the module's: an in-place change is seen
        model[2].bias.add_(1.0)
    torch.testing.assert_close(fn(x), model(x))
    assert fn.output_names == ["output"]


def test_a_decode_step_writes_the_callers_cache():
    step = tiny_step()
    decode = hir.from_torch(step, (torch.tensor([[1]]), torch.tensor([0])))
    state = decode.state(step)
    fn = decode.compile(state, device="cpu")
    fn(torch.tensor([[5]]), torch.tensor([3]))
    assert state["key_cache_0"][:, :, 3].abs().sum() > 0 and step.key_cache_0[:, :, 3].abs().sum() > 0
    assert state["key_cache_0"][:, :, 4:].abs().sum() == 0


def assert_filled(cache: dict, filled: int) -> None:
    """Every layer's keys and values in ``cache`` are written at the first ``filled``
    positions (non-zero for every row and head) and nowhere after."""
    names = [name for name in cache if name.startswith(("key_cache_", "value_cache_"))]
    assert names
    for name in names:
        assert cache[name][:, :, :filled].abs().amax(-1).gt(0).all(), f"{name} not written at positions < {filled}"
        assert cache[name][:, :, filled:].abs().sum() == 0, f"{name} written at positions >= {filled}"


def assert_same_cache(cache: dict, twin: StaticCacheStep) -> None:
    for name, tensor in cache.items():
        if name.startswith(("key_cache_", "value_cache_")):
            torch.testing.assert_close(tensor, getattr(twin, name), rtol=1e-4, atol=1e-4, msg=name)


def test_decode_calls_fill_the_callers_cache_as_the_eager_step():
    # transformers 5.17 takes the cache as past_key_values only: a step passing it
    # under another name decodes without it (right logits on the first call only, nothing written)
    step = tiny_step()
    twin = copy.deepcopy(step)  # the eager reference, on its own buffers
    decode = hir.from_torch(step, (torch.tensor([[1]]), torch.tensor([0])))
    state = decode.state(step)
    assert state["key_cache_0"] is step.key_cache_0 and state["value_cache_1"] is step.value_cache_1
    fn = decode.compile(state, device="cpu")
    for position, token in enumerate([3, 17, 42, 9, 11]):
        ids, pos = torch.tensor([[token]]), torch.tensor([position])
        got = fn(ids, pos)
        assert_filled(state, position + 1)  # checked before the eager step runs
        with torch.no_grad():
            torch.testing.assert_close(got, twin(ids, pos), rtol=1e-4, atol=1e-4)
        assert_filled(dict(twin.named_buffers()), position + 1)
        assert_same_cache(state, twin)
    assert step.cache_keyword in ("cache", "past_key_values")


def test_a_model_without_a_cache_or_an_old_transformers_is_refused(monkeypatch):
    with pytest.raises(
        hir.HirError, match=r"Linear.forward takes no 'cache' or 'past_key_values' argument \(transformers \d"
    ):
        cache_keyword(torch.nn.Linear(2, 2))
    monkeypatch.setattr(hf_decode, "MIN_TRANSFORMERS", "99.0")  # the installed version is then too old
    with pytest.raises(
        hir.HirError, match=rf"needs transformers >= 99\.0 .* transformers {transformers.__version__} is installed"
    ):
        tiny_step()


def test_bad_inputs_name_the_input():
    model = mlp()
    program = hir.from_torch(model, (torch.randn(8, 16),))
    fn = program.compile(model.state_dict(), device="cpu")
    with pytest.raises(hir.HirError, match=r"the program takes 1 input\(s\), got 2"):
        fn(torch.randn(8, 16), torch.randn(8, 16))
    with pytest.raises(
        hir.HirError,
        match=r"input 0: expected a tensor of shape \[8, 16\] and dtype torch.float32 \(as imported\), "
        r"got shape \[4, 16\]",
    ):
        fn(torch.randn(4, 16))
    with pytest.raises(hir.HirError, match="input 0: .* got dtype torch.float64"):
        fn(torch.randn(8, 16, dtype=torch.float64))
    with pytest.raises(hir.HirError, match="the state must be a dict"):
        program.compile([torch.randn(3)], device="cpu")
    with pytest.raises(hir.HirError, match="the state dict lacks 0.weight"):
        program.compile({}, device="cpu")


def test_hir_compile_forms():
    model = mlp()
    x = torch.randn(8, 16)
    program = hir.from_torch(model, (x,))
    torch.testing.assert_close(hir.compile(program, model.state_dict(), device="cpu")(x), model(x))
    torch.testing.assert_close(hir.compile(model, (x,), device="cpu")(x), model(x))
    compiled = hir.compile(program.module, device="cpu")  # an hir module: @main's arguments per call
    torch.testing.assert_close(compiled(program.arguments(model.state_dict(), x))[0], model(x))
    with pytest.raises(hir.HirError, match="needs its state"):
        hir.compile(program)
    with pytest.raises(hir.HirError, match="needs example inputs"):
        hir.compile(model)
    with pytest.raises(hir.HirError, match="takes no state"):
        hir.compile(program.module, model.state_dict())
    with pytest.raises(hir.HirError, match="unknown option"):
        hir.compile(program.module, speed=11)


def test_lower_false_runs_the_program_level_module():
    model = mlp()
    x = torch.randn(8, 16)
    program = hir.from_torch(model, (x,))
    fn = program.compile(model.state_dict(), device="cpu", lower=False)
    assert not program.lowered
    torch.testing.assert_close(fn(x), model(x))


@pytest.mark.gpu
def test_calls_replay_one_bound_graph_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    step = tiny_step("cuda")
    twin = copy.deepcopy(step)  # the eager reference, on its own buffers
    decode = hir.from_torch(step, (torch.tensor([[1]], device="cuda"), torch.tensor([0], device="cuda")))
    state = decode.state(step)
    fn = decode.compile(state, device="cuda")
    static = decode.compile(state, device="cuda", static_outputs=True)
    for position in range(6):
        ids, pos = torch.tensor([[position + 3]]), torch.tensor([position])  # host tensors, new each call
        got = fn(ids, pos)
        assert_filled(state, position + 1)  # the caller's cache, written in place by hir alone
        with torch.no_grad():
            want = twin(ids.cuda(), pos.cuda())
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        assert_filled(dict(twin.named_buffers()), position + 1)
        assert_same_cache(state, twin)
    assert fn.graph_state.last == "replay (bound)" and fn.graph_state.captures == 1
    outputs = [static(torch.tensor([[7]]), torch.tensor([6])) for _ in range(3)]
    assert outputs[1].data_ptr() == outputs[2].data_ptr()  # the graph's own buffer, no copy-out


# A fresh process: hir.compile of a module on CUDA, not called yet; then how many compile
# threads inductor has and whether its pool of compile workers was made.
WORKERS = """
import torch, hir
from torch._inductor.async_compile import AsyncCompile, get_compile_threads
from torch.utils._triton import has_triton_package
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).cuda().eval()
fn = hir.compile(model, (torch.randn(2, 16, device="cuda"),), device="cuda")
print(int(has_triton_package() and get_compile_threads() > 1), AsyncCompile.process_pool.cache_info().currsize)
"""


@pytest.mark.gpu
def test_compile_workers_start_before_the_first_call_on_cuda():
    """hir calls inductor itself (not through dynamo), so it starts inductor's compile workers
    itself (torch.compile's backend does it for dynamo), before the import: otherwise the
    pool starts at the region's first kernel and the kernels met before it answers compile
    one by one in the calling process (issue 34's first call)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    done = subprocess.run(
        [sys.executable, "-c", WORKERS],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HIR_CACHE_DIR": "off"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    parallel, pools = map(int, done.stdout.split()[-2:])
    if not parallel:
        pytest.skip("inductor compiles in the calling process here (no Triton, or one compile thread)")
    assert pools == 1
