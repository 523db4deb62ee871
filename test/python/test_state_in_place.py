"""Mutated state written in place (issue 34; hir/frontend/inplace.py, hir/interpreter/updates.py):
an HF decode step's KV cache update runs as ONE ``index_copy_`` into the caller's cache per
cache and step, the copies HF eager makes, where the functionalized program cloned the cache,
materialized it into a fresh buffer and copied that back. Hand-written segments check the
cases where the update must stay a copy."""

import copy

import pytest
import torch

import hir
from dispatch_counts import DispatchCounts
from hir.frontend import partition
from hir.interpreter import Program
from hir.interpreter.updates import in_place_variant, segment_updates

transformers = pytest.importorskip("transformers")

COUNTED = ("copy_", "clone", "index_copy", "index_copy_")


def tiny_step():
    from hir.frontend.hf_decode import StaticCacheStep

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
    return StaticCacheStep(transformers.LlamaForCausalLM(config).eval(), batch_size=1, max_cache_len=16)


def decode(step, twin, fn, state: dict, steps: int = 5) -> tuple[dict, dict]:
    """Run ``steps`` decode steps through ``fn`` and the eager ``twin``, checking logits and
    every cache equal after each; the op counts of the last step (hir, HF eager)."""
    for position, token in enumerate([3, 17, 42, 9, 11, 5, 7][:steps]):
        ids, pos = torch.tensor([[token]]), torch.tensor([position])
        with DispatchCounts() as ours:
            got = fn(ids, pos)
        with torch.no_grad(), DispatchCounts() as eager:
            want = twin(ids, pos)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        for name, tensor in state.items():
            if "cache" in name:
                torch.testing.assert_close(tensor, getattr(twin, name), rtol=1e-4, atol=1e-4, msg=name)
    return ours.of(COUNTED), eager.of(COUNTED)


def test_the_kv_cache_is_updated_in_place_as_hf_eager_does(monkeypatch):
    step = tiny_step()
    ids, pos = torch.tensor([[1]]), torch.tensor([0])
    program = hir.from_torch(step, (ids, pos))
    # no hir.set back into the state: every cache (and length) is written by its segment
    assert '"hir.set"' not in str(program.module)
    state = program.state(step)
    pointers = {name: t.data_ptr() for name, t in state.items()}
    fn = program.compile(state, device="cpu", graph=False, compile_kernels=False)
    ours, eager = decode(step, copy.deepcopy(step), fn, state)
    assert ours == eager  # one index_copy_ per cache, as HF: no clone, no copy back
    assert ours["index_copy_"] == 4 and ours["index_copy"] == 0
    assert {name: t.data_ptr() for name, t in state.items()} == pointers  # the caller's tensors
    assert state["key_cache_0"] is step.key_cache_0

    # before: index_copy clones each cache, the clone becomes the segment's fresh buffer (bound,
    # as the attention reads it too), then it is copied back
    monkeypatch.setattr(partition, "write_in_place", lambda sets, functions: 0)
    before = tiny_step()
    program = hir.from_torch(before, (ids, pos))
    assert str(program.module).count('"hir.set"') == 6  # 4 caches, 2 lengths
    state = program.state(before)
    fn = program.compile(state, device="cpu", graph=False, compile_kernels=False)
    old, _ = decode(before, copy.deepcopy(before), fn, state, steps=2)
    assert old["index_copy"] == 4 and old["copy_"] == eager["copy_"] + 4


@pytest.mark.slow  # inductor compiles the step's regions (C++, on a cold cache)
def test_compiled_kernels_update_the_callers_cache():
    step = tiny_step()
    program = hir.from_torch(step, (torch.tensor([[1]]), torch.tensor([0])))
    state = program.state(step)
    fn = program.compile(state, device="cpu", graph=False, compile_kernels=True)
    decode(step, copy.deepcopy(step), fn, state, steps=3)
    assert state["value_cache_1"] is step.value_cache_1


SEGMENT = """
func.func private @update(%arg0: memref<4x3xf32>, %arg1: memref<1xi64>, %arg2: memref<1x3xf32>,
    %arg3: memref<4x3xf32>) attributes {hir.kernel} {
  %int0 = torch.constant.int 0
  %float2 = torch.constant.float 2.000000e+00
  %0 = bufferization.to_tensor %arg0 restrict writable : memref<4x3xf32> to tensor<4x3xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<4x3xf32> to !torch.vtensor<[4,3],f32>
  %2 = bufferization.to_tensor %arg1 restrict : memref<1xi64> to tensor<1xi64>
  %3 = builtin.unrealized_conversion_cast %2 : tensor<1xi64> to !torch.vtensor<[1],si64>
  %4 = bufferization.to_tensor %arg2 restrict : memref<1x3xf32> to tensor<1x3xf32>
  %5 = builtin.unrealized_conversion_cast %4 : tensor<1x3xf32> to !torch.vtensor<[1,3],f32>
  %6 = torch.operator "torch.aten.index_copy"(%1, %int0, %3, %5)
      : (!torch.vtensor<[4,3],f32>, !torch.int, !torch.vtensor<[1],si64>,
      !torch.vtensor<[1,3],f32>) -> !torch.vtensor<[4,3],f32>
  %7 = torch.aten.mul.Scalar READ, %float2 : !torch.vtensor<[4,3],f32>, !torch.float -> !torch.vtensor<[4,3],f32>
  %8 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[4,3],f32> to tensor<4x3xf32>
  bufferization.materialize_in_destination %8 in restrict writable %arg3 : (tensor<4x3xf32>, memref<4x3xf32>) -> ()
  %9 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[4,3],f32> to tensor<4x3xf32>
  bufferization.materialize_in_destination %9 in writable %arg0 : (tensor<4x3xf32>, memref<4x3xf32>) -> ()
  return
}
"""
MAIN = """func.func @main(%c: memref<4x3xf32>, %i: memref<1xi64>, %s: memref<1x3xf32>) -> memref<4x3xf32> {
  %o = memref.alloc() : memref<4x3xf32>
  call @update(%c, %i, %s, %o) : (memref<4x3xf32>, memref<1xi64>, memref<1x3xf32>, memref<4x3xf32>) -> ()
  return %o : memref<4x3xf32>
}
"""


@pytest.mark.parametrize("read", ["%6", "%1"], ids=["new-value", "old-value"])
def test_an_update_runs_in_place_only_when_nothing_reads_the_old_value(read):
    """``%c[i] = s`` written back into %c; %o = 2 * (the new / the old %c). Reading the old
    value after the update (``%1``) keeps index_copy a copy: in place, %o would see %s."""
    text = MAIN + SEGMENT.replace("READ", read)
    module = hir.parse(text, "test.mlir")
    segment = next(op for op in module.body.operations if "hir.kernel" in op.operation.attributes)
    assert list(segment_updates(segment.operation)) == ([0] if read == "%6" else [])
    program = Program(module, graph=False, device="cpu")
    c, s = torch.randn(4, 3), torch.randn(1, 3)
    old = c.clone()
    with DispatchCounts() as counts:
        (o,) = program([c, torch.tensor([2]), s])
    new = old.clone()
    new[2] = s[0]
    torch.testing.assert_close(c, new)
    torch.testing.assert_close(o, 2 * (new if read == "%6" else old))
    in_place = read == "%6"
    assert counts.of(COUNTED)["index_copy_"] == in_place and counts.of(COUNTED)["index_copy"] == (not in_place)


def test_in_place_variants():
    aten = torch.ops.aten
    assert in_place_variant(aten.index_copy.default) is aten.index_copy_.default
    assert in_place_variant(aten.index_put.default) is aten.index_put_.default
    assert in_place_variant(aten.copy.default) is aten.copy_.default
    assert in_place_variant(aten.add.Tensor) is aten.add_.Tensor
    assert in_place_variant(aten.slice_scatter.default) is None  # no slice_scatter_
    assert in_place_variant(aten.transpose.int) is None  # a view, not a functional op


def test_an_optimizer_moment_read_after_its_update_is_written_in_place():
    """AdamW's ``exp_avg`` is read by the parameter's update after the segment that computes
    it: that reader reads the state entry itself, so no moment is materialized into a fresh
    buffer and copied back (no ``hir.set`` left); 3 steps equal eager torch."""
    from training_util import steps_equal_eager, twins

    model, opt, ref, ref_opt, loss_fn, batches = twins("mlp", "adamw")
    data = batches(3)
    step = hir.train_step(model, opt, loss_fn, data[0], graph=False, compile_kernels=False)
    assert steps_equal_eager(step, loss_fn, data, model, opt, ref, ref_opt, "mlp", moment="exp_avg") == ""
    program = next(iter(step.programs.values()))
    assert program.lowered and '"hir.set"' not in str(program.module)
