"""The Python builder API: program-level and host-level modules verify and print the
expected ops; mistakes raise clear errors."""

import subprocess
import sys

import pytest
import torch

import hir
from hir.builder import Builder, Shard


def test_program_level_matmul_with_dynamic_rows():
    b = Builder()
    x = b.input([None, 64], "f32")
    w = b.input([64, 32], "f32")
    y = b.matmul(x, w, stream_axis=0)
    b.output(b.sum(b.add(y, y), [1]))
    text = str(b.finish())
    assert "func.func @main(%arg0: memref<?x64xf32>, %arg1: memref<64x32xf32>) -> memref<?xf32>" in text
    assert '"hir.matmul"(%arg0, %arg1, %alloc) {stream_axis = 0 : i64}' in text
    assert "memref.dim %arg0, %c0" in text
    assert '{axes = array<i64: 1>, kind = "sum"}' in text
    # The printed module parses back to the same text.
    assert str(hir.parse(text)) == text


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div", "max", "min"])
def test_binary_kinds_and_broadcast(kind):
    b = Builder()
    x, row = b.input([8, 4]), b.input([4])
    b.output(b.binary(kind, x, row))
    assert f'kind = "{kind}"' in str(b.finish())


def test_sharding_and_resharding_set():
    b = Builder()
    a = b.input([8, 4], sharding=Shard([0, 1, 2, 3], axis=0))
    b.output(b.set(a, sharding=Shard([0, 1, 2, 3])))
    text = str(b.finish())
    assert "memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>" in text
    assert "memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>" in text


def test_reduction_of_split_axis_is_replicated_by_default():
    b = Builder()
    a = b.input([4, 8, 2], sharding=Shard([0, 1, 2, 3], axis=0))
    assert b.sum(a, [0]).sharding == Shard([0, 1, 2, 3], None)
    assert b.sum(a, [1]).sharding == Shard([0, 1, 2, 3], 0)
    c = b.input([8, 4, 2], sharding=Shard([0, 1], axis=2))
    assert b.max(c, [0]).sharding == Shard([0, 1], 1)


def test_linear_with_and_without_bias():
    b = Builder()
    x, w, bias = b.input([2, 8, 16]), b.input([4, 16]), b.input([4])
    y = b.linear(x, w, bias)
    z = b.linear(x, w)
    assert y.shape == [2, 8, 4] and z.shape == [2, 8, 4]
    b.output(y)
    text = str(b.finish())
    assert "array<i32: 1, 1, 1, 1>" in text and "array<i32: 1, 1, 1, 0>" in text


def test_host_level_stream_loop_and_collective():
    b = Builder()
    src, dst = b.input([4, 8]), b.input([4, 8])
    user = b.get_current_stream()
    with b.for_(0, 4) as i:
        stream = b.get_stream(i)
        b.set_current_stream(stream)
        b.synchronize(user)
        b.set(b.alias_select(src, i, 0), out=b.alias_select(dst, i, 0))
        b.set_current_stream(user)
        b.synchronize(stream)
    shard = b.input([8, 4], sharding=Shard([0, 1], 0))
    full = b.alloc([8, 4], sharding=Shard([0, 1]))
    b.wait(b.communicate("allgather", shard, full, team=[0, 1], axis=0))
    b.dealloc(full)
    text = str(b.finish())
    for needle in [
        '"hir.for"',
        '"hir.alias_select"',
        '"hir.set"',
        '"hir.allgather"',
        '"hir.wait"',
        "memref.dealloc",
        '"hir.yield"',
    ]:
        assert needle in text
    assert text.index('"hir.set"(') < text.index('"hir.yield"')


def test_typed_builders_for_p2p_and_collectives_run():
    """Builder.device_index / shift / barrier and the typed collectives build verified ops;
    on one process the shift (offset 0) is a local copy and the collectives run on a team of one."""
    b = Builder()
    src = b.input([2, 3], sharding=Shard([0], 0))
    copy = b.alloc([2, 3])
    gathered = b.alloc([2, 3])
    me = b.device_index([0])
    b.wait(b.barrier([0], backend="gloo"))
    b.wait(b.shift(src, copy, me, [0], backend="gloo", copies=2, signal="none"))
    b.wait(b.allgather(src, gathered, [0], axis=0, backend="gloo"))
    b.output(copy)
    b.output(gathered)
    text = str(b.finish())
    for needle in [
        '"hir.device_index"() {mesh = array<i64: 0>}',
        '"hir.barrier"() {backend = "gloo", team = array<i64: 0>}',
        "copies = 2 : i64",
        'signal = "none"',
        '"hir.allgather"',
    ]:
        assert needle in text, needle
    x = torch.randn(2, 3)
    copied, full = hir.run(hir.parse(text), [x], device="cpu")
    assert torch.equal(copied, x) and torch.equal(full, x)


def test_alias_chunk_views_and_runs():
    """Chunks of a static and a dynamic axis; the built program doubles chunk 1 of 2."""
    b = Builder()
    x = b.input([None, 6])
    half = b.alias_chunk(x, b.index(1), axis=0, chunks=2)
    third = b.alias_chunk(half, b.index(0), axis=1, chunks=3)
    assert third.shape[1] == 2 and not isinstance(half.sizes[0], int)
    b.add(half, half, out=half)
    with pytest.raises(ValueError, match="axis 1 of extent 6 does not divide into 4 chunks"):
        b.alias_chunk(x, b.index(0), axis=1, chunks=4)
    module = b.finish()
    text = str(module)
    assert (
        '"hir.alias_chunk"(%arg0, %c1) {axis = 0 : i64, chunks = 2 : i64} : '
        "(memref<?x6xf32>, index) -> memref<?x6xf32, strided<[6, 1], offset: ?>>"
    ) in text
    assert "-> memref<?x2xf32, strided<[6, 1], offset: ?>>" in text
    data = torch.randn(4, 6)
    expected = data.clone()
    expected[2:] *= 2
    hir.run(module, [data])
    assert torch.equal(data, expected)


def test_builder_reports_verifier_errors():
    b = Builder()
    x, y = b.input([4, 8]), b.input([5, 8])
    b.set(x, out=y)
    with pytest.raises(hir.HirError, match=r"'hir.set' op output has shape \[5, 8\], expected \[4, 8\]"):
        b.finish()


def test_matmul_shape_error_names_operands():
    b = Builder()
    with pytest.raises(ValueError, match="contraction mismatch"):
        b.matmul(b.input([3, 4]), b.input([5, 2]))


def test_parse_error_has_location():
    with pytest.raises(hir.HirError, match=r"^prog.mlir:2:3: error: 'hir.set' op output has shape"):
        hir.parse(
            "func.func @f(%a: memref<4xf32>, %b: memref<5xf32>) {\n  "
            '"hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()\n  return\n}',
            "prog.mlir",
        )


def test_dialect_load_is_idempotent(ctx):
    from hir.dialect import load

    load(ctx)
    load(ctx)
    assert ctx.is_dialect_loaded("hir")


def test_hir_opt_does_not_import_torch():
    code = (
        "import sys, hir.tools.opt; hir.tools.opt.main(['--list-passes']); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
