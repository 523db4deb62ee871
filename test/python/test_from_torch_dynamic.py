"""Dynamic shapes through hir.from_torch: one import runs batch sizes 1, 3 and 8 and sequence
lengths 5 and 16, equal to eager torch (an MLP with hir's ``dynamic=`` form, a
TransformerEncoderLayer with torch.export's ``Dim`` spec, HF Llama with the spec by
parameter name); the dims are ``?`` in the program's memref types. Bad sizes and specs are
located errors. On 2 Gloo ranks: a tensor-parallel MLP and a batch-split (data-parallel)
one run every size; a batch that does not divide over the devices is refused before the
run, naming the input.

The multi-rank test launches this file under ``hir.tools.launch``; ``python
test_from_torch_dynamic.py`` is the per-rank worker.
"""

import os
import sys

import pytest
import torch

import hir
from hir.frontend.output_tree import flatten_outputs
from multirank_util import launch_workers, run_gloo_cases

SIZES = [(b, s) for b in (1, 3, 8) for s in (5, 16)]
DYNAMIC = {"input0": {0: "batch", 1: "seq"}}


def norm_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.LayerNorm(16), torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16)
    ).eval()


def check_every_size(module: torch.nn.Module, program, make_input) -> None:
    for b, s in SIZES:
        x = make_input(b, s)
        got = program.run(program.state(module), x, device="cpu")
        _, want = flatten_outputs(module(x))
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w.detach(), rtol=1e-5, atol=1e-5, msg=f"batch {b}, sequence {s}")


def test_mlp_dynamic_batch_and_sequence():
    module = norm_mlp()
    program = hir.from_torch(module, (torch.randn(4, 8, 16),), dynamic=DYNAMIC)
    text = str(program.module)
    assert "memref<?x?x16xf32>" in text and "memref<?x?x32xf32>" in text
    check_every_size(module, program, lambda b, s: torch.randn(b, s, 16))


def test_dims_dynamo_marked_stay_static():
    """A dim dynamo marked dynamic on an example (``maybe_mark_dynamic``, as a
    ``torch.compile`` of the same tensors can leave it) is static unless ``dynamic=`` asks:
    seen on CUDA, where HF's prefill then failed to import with a ``?`` token dim."""
    module = norm_mlp()
    x = torch.randn(4, 8, 16)
    torch._dynamo.maybe_mark_dynamic(x, 1)
    program = hir.from_torch(module, (x,))
    assert "?" not in str(program.module)
    torch.testing.assert_close(
        program.run(program.state(module), x, device="cpu")[0], module(x).detach(), rtol=1e-5, atol=1e-5
    )


def test_transformer_encoder_layer_export_dims():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True).eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    program = hir.from_torch(layer, (torch.randn(4, 8, 16),), dynamic_shapes=({0: batch, 1: seq},))
    check_every_size(layer, program, lambda b, s: torch.randn(b, s, 16))


def test_hf_llama_dims_by_parameter_name():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    model = transformers.LlamaModel(config).eval()
    spec = {"input_ids": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}}
    program = hir.from_torch(model, (torch.randint(0, 64, (2, 8)),), dynamic_shapes=spec)
    check_every_size(
        model, program, lambda b, s: torch.randint(0, 64, (b, s), generator=torch.Generator().manual_seed(b * s))
    )


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_sizes_checked_against_the_dims():
    program = hir.from_torch(
        Add(), (torch.randn(4, 3), torch.randn(4, 3)), dynamic={"input0": {0: "batch"}, "input1": {0: "batch"}}
    )
    (got,) = program.run({}, torch.ones(5, 3), torch.ones(5, 3), device="cpu")
    assert got.shape == (5, 3)
    with pytest.raises(
        hir.HirError,
        match=r"test_from_torch_dynamic\.py:\d+: error: input 1: dim 0 is "
        r"dynamic dim batch, of extent 5 in input 0 \(dim 0\), got 6",
    ):
        program.run({}, torch.ones(5, 3), torch.ones(6, 3), device="cpu")
    with pytest.raises(hir.HirError, match=r"input 0: expected a tensor of shape \[\?, 3\] .*got \[5, 4\]"):
        program.run({}, torch.ones(5, 4), torch.ones(5, 4), device="cpu")


class MaskedAttention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_attention_over_a_dynamic_length_whatever_kernel_the_device_picks():
    """SDPA is kept whole in the import, its result given by its shape: the export does not
    run the device's kernel choice, whose checks can add guards on a dynamic dim (CUDA's
    memory-efficient kernel tests a mask's length for alignment, ``% 16``). Here the CPU is
    told to use that kernel, which it does not have: the export still succeeds, and the
    program runs (with the CPU's kernels) every length, equal to eager."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 40, 8)
    mask = torch.rand(2, 1, 3, 40) > 0.3
    dynamic = {"input1": {2: "length"}, "input2": {2: "length"}, "input3": {3: "length"}}
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        program = hir.from_torch(MaskedAttention(), (q, k, k, mask), dynamic=dynamic)
    for length in (17, 64, 100):
        keys, mask = torch.randn(2, 4, length, 8), torch.rand(2, 1, 3, length) > 0.3
        (got,) = program.run({}, q, keys, keys, mask, device="cpu")
        torch.testing.assert_close(got, MaskedAttention()(q, keys, keys, mask), msg=f"length {length}")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"dynamic": {"input2": {0: "b"}}}, r"dynamic names 'input2'; the inputs are input0 \.\.\. input1"),
        ({"dynamic": {"input0": {0: 1}}}, r"dynamic\['input0'\] must map dims to names"),
        ({"dynamic_shapes": {"z": {0: None}}}, r"dynamic_shapes names 'z', which is not among Add\.forward's"),
        ({"dynamic_shapes": ({0: None},)}, r"one entry per example argument \(2\)"),
        ({"dynamic": {}, "dynamic_shapes": ()}, r"not both"),
    ],
)
def test_bad_specs(options, message):
    with pytest.raises(hir.HirError, match=message):
        hir.from_torch(Add(), (torch.randn(4, 3), torch.randn(4, 3)), **options)


def test_sizes_of_a_split_dynamic_dim_in_a_segment_are_refused():
    """Batch-split attention with a dynamic batch: the segment's view sizes would be read
    from local shards; refused at import, at the op that computes them."""
    from torch.distributed.tensor import Shard

    from hir.interpreter.backends.process_groups import shutdown

    shutdown(wait_for_peers=False)  # import only: no process group needed
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True).eval()
    with pytest.raises(
        hir.HirError,
        match=r"activation\.py:\d+:\d+: error: '.*' computes a size in a "
        r"kernel segment that reads a dynamic dim split over devices",
    ):
        hir.from_torch(layer, (torch.randn(4, 8, 16),), mesh=[0, 1], placements={"input0": Shard(0)}, dynamic=DYNAMIC)


def run_case(name: str, rank: int, world: int) -> str:
    from torch.distributed.tensor import Replicate, Shard

    module = norm_mlp()
    if name == "tensor_parallel":
        placements = {"1.weight": Shard(0), "1.bias": Shard(0), "3.weight": Shard(1), "3.bias": Replicate()}
    else:
        placements = {"input0": Shard(0), "output0": Shard(0)}
    program = hir.from_torch(
        module, (torch.randn(4, 8, 16),), mesh=list(range(world)), placements=placements, dynamic=DYNAMIC
    )
    hir.lower(program.module, "hir-convert-to-communication{backend=gloo},hir-lower")
    lowered = str(program.module)
    if ("hir.allreduce" if name == "tensor_parallel" else "memref<?x?x16xf32, #hir.shard") not in lowered:
        return f"{name}: unexpected lowering\n{lowered}"
    for b, s in [(2, 5), (8, 16)] + ([(3, 5)] if name == "tensor_parallel" else []):
        x = torch.randn(b, s, 16, generator=torch.Generator().manual_seed(b * s))
        want = module(x).detach()
        (got,) = hir.run(program.module, program.arguments(program.state(module), x), device="cpu")
        if name != "tensor_parallel":
            want = want.chunk(world, 0)[rank]
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
            return f"{name}: batch {b}, sequence {s}: max |error| {(got - want).abs().max().item():.2e}"
    if name == "data_parallel":
        try:
            program.arguments(program.state(module), torch.randn(3, 5, 16))
            return f"{name}: a batch of 3 split over {world} devices was accepted"
        except hir.HirError as err:
            if f"input 0: dynamic dim 0 (batch) of extent 3 does not split evenly over the {world} devices" not in str(
                err
            ):
                return f"{name}: unexpected error {err}"
    return ""


def worker() -> int:
    return run_gloo_cases(["tensor_parallel", "data_parallel"], run_case)


def test_dynamic_dims_on_two_ranks():
    checked, report = launch_workers(2, __file__, timeout_s=300, env=dict(os.environ))
    assert checked == 2 * 2, report


if __name__ == "__main__":
    sys.exit(worker())
