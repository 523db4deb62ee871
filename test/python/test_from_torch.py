"""hir.from_torch on one rank: the imported program (hir compute ops + kernel segments of
torch.aten ops run by the interpreter) equals the torch module, fp32, tight tolerance."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from hir import HirError
from hir.dialect import BinaryOp, LinearOp, MatmulOp, ReductionOp
from hir.frontend import from_torch


class MLP(nn.Module):
    def __init__(self, d: int = 16, f: int = 64) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Softmax(nn.Module):
    def forward(self, x, y):
        return torch.softmax(x * y, dim=-1).sum(dim=0)


class Block(nn.Module):
    """Pre-norm transformer block: LayerNorm, causal self-attention with softmax, GELU MLP,
    residuals."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = MLP(d, 4 * d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = [z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class SdpaBlock(Block):
    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = [z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v)]
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.mlp(self.ln2(x))


def _ops(program) -> list[str]:
    main = next(op for op in program.module.body.operations if op.operation.attributes["sym_name"].value == "main")
    return [op.operation.name for op in main.regions[0].blocks[0].operations]


def _check(module: nn.Module, *inputs, compile_kernels: bool = False):
    torch.manual_seed(0)
    module = module.eval()
    program = from_torch(module, inputs)
    got = program.run(module.state_dict(), *inputs, device="cpu", compile_kernels=compile_kernels)
    want = module(*inputs)
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w.detach(), rtol=1e-5, atol=1e-6)
    return program


def test_mlp_linear_gelu_linear():
    torch.manual_seed(1)
    program = _check(MLP(), torch.randn(8, 16))
    assert _ops(program) == [
        "memref.alloc",
        LinearOp.OPERATION_NAME,
        "memref.alloc",
        "func.call",
        "memref.alloc",
        LinearOp.OPERATION_NAME,
        "func.return",
    ]
    assert program.state_names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def test_lower_overlap_default_and_bad_value():
    """TorchProgram.lower(): hir-lower-overlap by default (one rank: nothing to pipeline, the
    run still equals torch); a bad overlap value is an error naming it."""
    torch.manual_seed(1)
    module, x = MLP().eval(), torch.randn(8, 16)
    program = from_torch(module, (x,))
    with pytest.raises(HirError, match="overlap must be 'auto', 'on' or 'off', got 'always'"):
        program.lower(overlap="always")
    assert program.lower() is program.module and "hir.shift" not in str(program.module)
    (got,) = program.run(module.state_dict(), x, device="cpu")
    torch.testing.assert_close(got, module(x).detach(), rtol=1e-5, atol=1e-6)


def test_layer_norm():
    torch.manual_seed(2)
    program = _check(nn.LayerNorm(32), torch.randn(4, 8, 32))
    assert "torch.aten.layer_norm" in str(program.module)


def test_softmax_binary_and_reduction():
    torch.manual_seed(3)
    program = _check(Softmax(), torch.randn(4, 8), torch.randn(4, 8))
    ops = _ops(program)
    assert ops.count(BinaryOp.OPERATION_NAME) == 1 and ops.count(ReductionOp.OPERATION_NAME) == 1
    assert "torch.aten.softmax.int" in str(program.module)


@pytest.mark.parametrize("block", [Block, SdpaBlock])
def test_transformer_block(block):
    torch.manual_seed(4)
    program = _check(block(), torch.randn(2, 8, 32))
    ops = _ops(program)
    assert ops.count(LinearOp.OPERATION_NAME) == 4 and ops.count(BinaryOp.OPERATION_NAME) == 2
    if block is Block:
        assert ops.count(MatmulOp.OPERATION_NAME) == 2


class Casts(nn.Module):
    def forward(self, x):
        return F.silu(x.to(torch.float64)).to(torch.float32).view(-1, 2).transpose(0, 1)


def test_casts_and_views():
    torch.manual_seed(6)
    program = _check(Casts(), torch.randn(4, 4))
    # The export traces below autograd once (hir.frontend.export.functional_export), and the
    # import drops export's trace-time checks of each .to() (fx_rewrites.drop_metadata_checks,
    # for the two-trace fallback): no host call per run for them.
    assert "_assert_tensor_metadata" not in str(program.module)


def test_import_traces_the_module_once():
    """Counted, not timed (issue 34's first call): the import's export traces the module
    once (one make_fx trace, below autograd), not the training graph and then that graph
    again (``torch.export.export(...).run_decompositions({})``: two)."""
    from unittest import mock

    import torch.fx.experimental.proxy_tensor as proxy_tensor

    tracer = proxy_tensor._MakefxTracer
    with mock.patch.object(tracer, "_trace_inner", autospec=True, side_effect=tracer._trace_inner) as traces:
        _check(Casts(), torch.randn(4, 4))
    assert traces.call_count == 1


class Cats(nn.Module):
    """``n`` concatenations: each a ``torch.prim.ListConstruct`` of computed tensors."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x):
        for _ in range(self.n):
            x = torch.cat([x, x * 2.0], dim=-1)[..., :4]
        return x


def test_import_names_no_value_per_list(monkeypatch):
    """Counted (issue 34's first call): the import asks MLIR for value names (each
    ``Value.get_name()`` numbers the whole function) a bounded number of times, not once
    per list of computed tensors: asking whether a list is constant built an error message
    naming its first computed element."""
    from torch_mlir import ir

    get_name = ir.Value.get_name
    calls = [0]

    def counted(value, *args, **kwargs):
        calls[0] += 1
        return get_name(value, *args, **kwargs)

    counts = []
    for n in (4, 16):
        calls[0] = 0
        monkeypatch.setattr(ir.Value, "get_name", counted)
        from_torch(Cats(n), (torch.randn(2, 4),))
        monkeypatch.undo()
        counts.append(calls[0])
    assert counts[1] == counts[0], counts
    _check(Cats(4), torch.randn(2, 4))


def test_compile_kernels_runs_segments_through_torch_compile():
    torch.manual_seed(5)
    _check(MLP(8, 16), torch.randn(4, 8), compile_kernels=True)


def test_arguments_follow_the_state_dict():
    module = MLP()
    program = from_torch(module, (torch.randn(8, 16),))
    with pytest.raises(HirError, match="lacks fc2.bias"):
        program.arguments({k: v for k, v in module.state_dict().items() if k != "fc2.bias"}, torch.randn(8, 16))
    with pytest.raises(HirError, match="takes 1 input"):
        program.arguments(module.state_dict())


def test_untraceable_module_is_a_clear_error():
    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow: torch.export cannot trace it
                return x
            return -x

    with pytest.raises(HirError, match=r"torch.export cannot trace DataDependent"):
        from_torch(DataDependent(), (torch.randn(4),))


def test_custom_op_runs_through_torch_operator():
    """An op torch-mlir has no class for is imported as torch.operator and still runs."""
    lib = torch.library.Library("hirtest", "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: 2 * x, "CompositeExplicitAutograd")
    lib.impl("twice", lambda x: torch.empty_like(x), "Meta")

    class Twice(nn.Module):
        def forward(self, x):
            return torch.ops.hirtest.twice(x) + x

    program = _check(Twice(), torch.randn(4, 4))
    assert 'torch.operator "torch.hirtest.twice"' in str(program.module)


@pytest.fixture
def no_process_group():
    """A single process without a default process group (an earlier in-process run of a
    communicating program leaves a one-rank group, which the mesh-size check would read)."""
    from hir.interpreter.backends.process_groups import shutdown

    shutdown(wait_for_peers=False)


def test_placement_errors_name_the_argument(no_process_group):
    from torch.distributed.tensor import Replicate, Shard

    linear, x = nn.Linear(6, 4), torch.randn(3, 6)
    with pytest.raises(
        HirError, match=r"placement Shard\(1\) of 'weight': dimension 1 of extent 6 does not divide over 4 devices"
    ):
        from_torch(linear, (x,), mesh=[0, 1, 2, 3], placements={"weight": Shard(1)})
    with pytest.raises(HirError, match=r"placement Shard\(2\) of 'input0' is out of range for its shape \[3, 6\]"):
        from_torch(linear, (x,), mesh=[0, 1], placements={"input0": Shard(2)})
    with pytest.raises(HirError, match=r"placement of 'weight' has 2 mesh dimension\(s\); the mesh \[0, 1\] has 1"):
        from_torch(linear, (x,), mesh=[0, 1], placements={"weight": (Shard(0), Replicate())})
    with pytest.raises(
        HirError,
        match=r"placement of 'weight' has 1 mesh dimension\(s\); the mesh \[0, 1, 2, 3\] of shape \[2, 2\] has 2",
    ):
        from_torch(linear, (x,), mesh=[[0, 1], [2, 3]], placements={"weight": Shard(0)})
    with pytest.raises(
        HirError, match=r"placement Shard\(0\) of 'input0': dimension 0 of extent 3 does not divide over 2 devices"
    ):
        from_torch(linear, (x,), mesh=[[0, 1], [2, 3]], placements={"input0": (Shard(0), Replicate())})
    with pytest.raises(HirError, match=r"placement of 'weight' splits dimension 1 over several mesh dimensions"):
        from_torch(linear, (x,), mesh=[[0, 1], [2, 3]], placements={"weight": (Shard(1), Shard(1))})
    with pytest.raises(HirError, match="placements were given without a mesh"):
        from_torch(linear, (x,), placements={"weight": Shard(0)})


def test_mesh_size_must_be_the_world_size(no_process_group):
    linear, x = nn.Linear(6, 4), torch.randn(3, 6)
    program = from_torch(linear, (x,), mesh=[0, 1, 2])
    with pytest.raises(HirError, match=r"the device mesh has 3 devices but the run has 1 rank\(s\)"):
        program.arguments(linear.state_dict(), x)


def _cast_mismatches(module) -> list[str]:
    """Every cast between a segment's buffer and its torch value must name the buffer's
    local shard: (buffer type, torch type) pairs where it does not."""
    from torch_mlir.dialects import func

    from hir.dialect.sharding import sharding_of
    from hir.frontend.torch_ir import tensor_info

    bad = []
    for fn in module.body.operations:
        if not isinstance(fn, func.FuncOp) or "hir.kernel" not in fn.attributes:
            continue
        for op in fn.regions[0].blocks[0].operations:
            if op.operation.name != "builtin.unrealized_conversion_cast":
                continue
            source, result = op.operands[0], op.results[0]
            if tensor_info(result.type) is not None:  # in: to_tensor(buffer) -> local vtensor
                buffer, value = source.owner.operands[0], result
            else:  # out: local vtensor -> tensor materialized into the buffer
                buffer, value = next(iter(result.uses)).owner.operands[1], source
            sharding = sharding_of(buffer.type)
            shape = list(buffer.type.shape)
            want = sharding.local_shape(shape) if sharding is not None else shape
            if tensor_info(value.type)[0] != want:
                bad.append(f"{buffer.type} as {value.type}")
    return bad


def test_fallback_segments_read_replicated_copies_whole(no_process_group):
    """A segment without a local rule (cumsum along the split dim) reads replicated copies:
    its casts name their whole shape (not the column shard the value has elsewhere)."""
    from torch.distributed.tensor import Shard

    class ColumnsThenCumsum(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 8)

        def forward(self, x):
            return torch.cumsum(F.relu(self.fc(x)), -1)

    program = from_torch(
        ColumnsThenCumsum(), (torch.randn(4, 6),), mesh=[0, 1], placements={"fc.weight": Shard(0), "fc.bias": Shard(0)}
    )
    text = str(program.module)
    assert "torch.aten.cumsum" in text and '"hir.set"' in text, text
    assert "tensor<4x8xf32> to !torch.vtensor<[4,8],f32>" in text, text
    assert _cast_mismatches(program.module) == [], text
