"""hir's decode kernels launched as programmatic dependents in a captured CUDA graph
(python/hir/interpreter/dependent_launch.py, mechanism ``kernel-pdl``): which launches may read
their weight before their wait (any machine), and on a Hopper GPU the kernels chained that way
and a captured decode step against the same launched plainly, bit for bit."""

import pytest
import torch

from decode_util import bf16_llama_step
from hir.interpreter import decode_kernels, dependent_launch

CUDA = torch.device("cuda")
hopper = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9, reason="needs a Hopper or newer GPU"
)


def test_only_weights_no_written_argument_shares_are_read_first(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    weight, cache, other = torch.zeros(4, 4), torch.zeros(8), torch.zeros(3)
    alias = cache[:4]  # an argument that shares a written argument's storage is not read-only
    assert dependent_launch.launch(CUDA, weight) == (False, False)  # outside a capture
    with dependent_launch.capturing([weight, cache, alias], written=[cache]) as launched:
        assert dependent_launch.launch(CUDA, weight) == (True, True)
        assert dependent_launch.launch(CUDA, weight[1:]) == (True, True)  # a view of a read-only argument
        assert dependent_launch.launch(CUDA, weight, alias) == (True, False)
        assert dependent_launch.launch(CUDA, other) == (True, False)  # not an argument: maybe the program's
        assert dependent_launch.launch(CUDA) == (True, False)  # the attention: reads nothing first
        assert dependent_launch.launch(torch.device("cpu"), weight) == (False, False)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
        assert dependent_launch.launch(CUDA, weight) == (False, False)  # before Hopper
    assert (launched.launches, launched.weight_first) == (5, 2)
    assert dependent_launch.launch(CUDA, weight) == (False, False)


def test_once_results_the_capture_takes_from_the_cache_are_read_first(monkeypatch):
    """A ``hir.once`` result a capture reads from the cache (refilled only before a replay) is
    read-only there; one sharing a written argument's storage is not, nor one computed under
    the capture (recorded into the graph, so a kernel of the graph writes it)."""
    from types import SimpleNamespace

    from hir.interpreter.ops.once import once_step

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    capturing = [False]
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    param, cache = torch.ones(4), torch.zeros(8)
    step = once_step(
        lambda values: [values[0] * 2, cache[:2]], [0], [1, 2], SimpleNamespace(device=CUDA, capture_refreshes=[])
    )
    env = [param, None, None]
    step(env)  # the eager first call fills the cache
    capturing[0] = True
    with dependent_launch.capturing([param, cache], written=[cache]):
        step(env)
        assert dependent_launch.launch(CUDA, env[1]) == (True, True)
        assert dependent_launch.launch(CUDA, env[2]) == (True, False)
    other = [torch.ones(4), None, None]  # another parameter: computed under the capture
    with dependent_launch.capturing([other[0], cache], written=[cache]):
        step(other)
        assert dependent_launch.launch(CUDA, other[1]) == (True, False)


def test_kernel_pdl_is_a_mechanism(monkeypatch):
    monkeypatch.setenv(decode_kernels.ENV, "linear,kernel-pdl")
    assert decode_kernels.enabled("kernel-pdl") and not decode_kernels.enabled("inductor-pdl")


def chain(pdl: bool, first: bool, x, layers, mask):
    from hir.interpreter.triton_decode import split_kv_attention
    from hir.interpreter.triton_one_row import one_row_linear

    h = x
    for qkv, o, gate, up, down, norm, keys, values in layers:
        q = one_row_linear(h, qkv, norm_weight=norm, eps=1e-5, pdl=pdl, weight_first=first)[:, :256]
        a = split_kv_attention(q.view(1, 2, 2, 64), keys, values, mask, 0.125, True, pdl)
        h = one_row_linear(a.view(1, 256), o, residual=h, pdl=pdl, weight_first=first)
        act = one_row_linear(h, gate, norm_weight=norm, eps=1e-5, w_up=up, pdl=pdl, weight_first=first)
        h = one_row_linear(act, down, residual=h, pdl=pdl, weight_first=first)
    return h


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("first", [False, True])
def test_dependent_kernels_in_a_graph_compute_what_plain_launches_do(first):
    """Each kernel reads the one before's output: a launch reading its input before its wait
    would read a stale or half-written row and differ."""
    torch.manual_seed(0)
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}

    def weight(*shape):
        return torch.randn(*shape, **bf16) / shape[-1] ** 0.5

    layers = [
        [weight(384, 256), weight(256, 256), weight(512, 256), weight(512, 256), weight(256, 512), 1 + weight(256)]
        + [torch.randn(1, 2, 256, 64, **bf16) for _ in range(2)]
        for _ in range(6)
    ]
    mask = (torch.arange(256, device="cuda") < 130).view(1, 1, 1, 256).expand(1, 1, 2, 256).contiguous()
    x = torch.randn(1, 256, **bf16)
    want = chain(False, False, x, layers, mask)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain(True, first, x, layers, mask)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = chain(True, first, x, layers, mask)
    for _ in range(3):
        got.zero_()
        graph.replay()
        assert torch.equal(got, want)


def steps(compiled, inputs: list, bound: bool) -> list:
    """``compiled`` called on ``inputs`` in turn; ``bound``: the same buffers refilled each
    call (so its graph is captured on them)."""
    if not bound:
        return [compiled(*args) for args in inputs]
    buffers = [t.clone() for t in inputs[0]]
    results = []
    for args in inputs:
        for buffer, value in zip(buffers, args):
            buffer.copy_(value)
        results.append(compiled(*buffers))
    return results


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("bound", [False, True])
def test_a_captured_decode_step_launches_dependents(monkeypatch, bound):
    """A bf16 batch-1 decode step: its captured graph launches the attention and the products
    as dependents, every product weight first (q/k/v's fused weight is a ``hir.once`` result
    the graph reads from the cache), and gives the logits of the same step planned without
    ``kernel-pdl`` bit for bit, in the eager first call and the replays; on new input tensors
    each call (a graph on static copies) and on the same buffers refilled (a bound graph)."""
    import hir

    step = bf16_llama_step(hidden=256, intermediate=512, vocab=256, max_cache_len=decode_kernels.MIN_CACHE)
    monkeypatch.delenv(decode_kernels.ENV, raising=False)
    inputs = [
        (torch.randint(0, 256, (1, 1), generator=torch.Generator().manual_seed(p)), torch.tensor([p])) for p in range(5)
    ]
    with torch.no_grad():
        program = hir.from_torch(step, inputs[0])
        dependent = program.compile(program.state(step), device="cuda")
        got = steps(dependent, inputs, bound)
        # the same program planned without kernel-pdl, run again from the first position
        without = ",".join(k for k in decode_kernels.KERNELS + decode_kernels.MECHANISMS if k != "kernel-pdl")
        monkeypatch.setenv(decode_kernels.ENV, without)
        plain = program.compile(program.state(step), device="cuda")
        want = steps(plain, inputs, bound)
    for position, (a, b) in enumerate(zip(got, want)):
        assert torch.equal(a, b), position
    assert dependent.graph_state.captures == 1 and dependent.graph_state.replays >= 3
    launched = dependent.interpreter.graph.launched
    # per layer the attention and four products (q/k/v, o, gate/up, down); the head
    assert (launched.launches, launched.weight_first) == (2 * 5 + 1, 2 * 4 + 1)
    assert plain.interpreter.graph.launched is None


def test_a_capture_notes_the_arguments_it_never_writes(monkeypatch):
    """GraphRunner's capture step: read-only storages by argument index (scalars among the
    arguments), the context left on an error, nothing noted where the plan did not ask."""
    from hir.interpreter.graph import GraphRunner, GraphState

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    weight, cache = torch.zeros(4, 4), torch.zeros(8)
    seen = []

    def execute(values: list) -> list:
        seen.append((dependent_launch.launch(CUDA, values[0]), dependent_launch.launch(CUDA, values[2])))
        if values[1] == "fail":
            raise RuntimeError("capture failed")
        return []

    def runner(planned: bool) -> GraphRunner:
        return GraphRunner(execute, CUDA, None, GraphState(True), frozenset({2}), dependent_launches=lambda: planned)

    dependent = runner(True)
    dependent._execute_captured([weight, 3, cache])
    assert seen.pop() == ((True, True), (True, False))  # the written argument is read after the wait
    assert dependent.launched is not None and (dependent.launched.launches, dependent.launched.weight_first) == (2, 1)
    with pytest.raises(RuntimeError):
        dependent._execute_captured([weight, "fail", cache])
    assert dependent.launched is None and dependent_launch.launch(CUDA, weight) == (False, False)
    plain = runner(False)
    plain._execute_captured([weight, 3, cache])
    assert seen.pop() == ((False, False), (False, False)) and plain.launched is None
