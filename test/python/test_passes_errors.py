"""Errors of the lowering passes: each is reported at the offending op's location with a
message saying what is not lowerable and why."""

import pytest

import hir
from hir.core import HirError

M2 = "array<i64: 0, 1>"
MESH_2X2 = "#hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>"


def shard(mesh: str, axis: int) -> str:
    return f"#hir.shard<{mesh}, {axis} : i64>"


def lower_error(text: str, pipeline: str) -> str:
    module = hir.parse(text, "prog.mlir")
    with pytest.raises(HirError) as info:
        hir.lower(module, pipeline, source_name="prog.mlir")
    return str(info.value)


def single_op(
    op: str, in_type: str, out_type: str, attrs: str = "", extra_args: str = "", name: str = "hir.set"
) -> str:
    """A one-op program (the op on line 3) reading %arg0 into a fresh %out."""
    return (
        f"func.func @main(%arg0: {in_type}{extra_args}) -> {out_type} {{\n"
        f"  %out = memref.alloc() : {out_type}\n"
        f'  "{name}"(%arg0, %out) {attrs} : ({in_type}, {out_type}) -> ()\n'
        f"  return %out : {out_type}\n"
        "}\n"
    )


CONVERT = "hir-convert-to-communication"


@pytest.mark.parametrize(
    "in_type, out_type, attrs, name, message",
    [
        (
            f"memref<4x8xf32, {shard(M2, 0)}>",
            f"memref<4x8xf32, {shard(M2, 1)}>",
            "",
            "hir.set",
            "(an all-to-all), which is not lowerable",
        ),
        (
            f"memref<4x8xf32, {shard(M2, 0)}>",
            f"memref<8xf32, {shard('array<i64: 2, 3>', 0)}>",
            '{kind = "sum", axes = array<i64: 0>}',
            "hir.reduction",
            "reduce-scatter across different meshes",
        ),
        (
            f"memref<4x8xf32, {shard(M2, 0)}>",
            f"memref<4xf32, {shard(M2, -1)}>",
            '{kind = "sum", axes = array<i64: 1>}',
            "hir.reduction",
            "the reduced axis must be the split one",
        ),
        (
            f"memref<4x8xf32, {shard(M2, 0)}>",
            f"memref<f32, {shard(M2, -1)}>",
            '{kind = "sum", axes = array<i64: 0, 1>}',
            "hir.reduction",
            "it must reduce exactly one axis",
        ),
        (
            f"memref<12x8xf32, {shard(M2, 0)}>",
            f"memref<12x8xf32, {shard('array<i64: 2, 3, 4>', 0)}>",
            "",
            "hir.set",
            "different sizes: 2 vs 3",
        ),
        (
            f"memref<4x8xf32, {shard('array<i64: 0>', 0)}>",
            f"memref<4x8xf32, {shard(M2, 0)}>",
            "",
            "hir.set",
            "split over the one-device mesh [0]",
        ),
        ("memref<4x8xf32>", f"memref<4x8xf32, {shard(M2, 0)}>", "", "hir.set", "mixes a buffer without a device mesh"),
        # a packed split (HF's packed_colwise) is computed on where it lies, never moved
        (
            f"memref<4x8xf32, #hir.shard<{M2}, {{axis = 0 : i64, packed = array<i64: 2>}}>>",
            f"memref<4x8xf32, {shard(M2, -1)}>",
            "",
            "hir.set",
            "a packed split ([0, 1] with splits [0], axis 0 packed of 2 "
            "pieces); a packed buffer is computed on where it lies, never moved",
        ),
        # multi-D meshes: collectives are written along one mesh axis, not inferred
        (
            f"memref<4x8xf32, {MESH_2X2}, array<i64: 0, 1>>>",
            f"memref<4x8xf32, {MESH_2X2}, array<i64: -1, -1>>>",
            "",
            "hir.set",
            "along mesh axes [0, 1] of a multi-dimensional mesh, whose lines see no 1-D placement",
        ),
        (
            f"memref<4x8xf32, {MESH_2X2}, array<i64: -1, -1>>>",
            f"memref<4x8xf32, {MESH_2X2}, array<i64: 0, -1>>>",
            "",
            "hir.set",
            "along mesh axis 0 as a hir.scatter; on a multi-dimensional "
            "mesh only allgather, allreduce and reduce_scatter are inferred",
        ),
    ],
)
def test_convert_errors(in_type, out_type, attrs, name, message):
    err = lower_error(single_op(name, in_type, out_type, attrs, name=name), CONVERT)
    assert err.startswith("prog.mlir:3:3: error: "), err
    assert f"'{name}' op" in err and message in err, err


def test_resharding_binary_is_rejected():
    t_in, t_out = f"memref<4x8xf32, {shard(M2, 0)}>", f"memref<4x8xf32, {shard(M2, -1)}>"
    text = (
        f"func.func @main(%a: {t_in}, %b: {t_in}) -> {t_out} {{\n"
        f"  %out = memref.alloc() : {t_out}\n"
        f'  "hir.binary"(%a, %b, %out) {{kind = "add"}} : ({t_in}, {t_in}, {t_out}) -> ()\n'
        f"  return %out : {t_out}\n}}\n"
    )
    err = lower_error(text, CONVERT)
    assert "prog.mlir:3:3: error: 'hir.binary' op is resharding" in err and "insert a hir.set" in err, err


def test_unknown_backend():
    text = single_op("hir.set", "memref<4xf32>", "memref<4xf32>")
    assert "backend 'mpi' is not one of nccl, gloo, cuda" in lower_error(
        text, "hir-convert-to-communication{backend=mpi}"
    )


STREAM = "hir-stream-lowering"


@pytest.mark.parametrize(
    "op_line, types, message",
    [
        ('"hir.set"(%arg0, %out) {stream_axis = 0 : i64}', ("memref<4x8xf32>", "memref<4x8xf32>"), None),
        (
            '"hir.matmul"(%arg0, %arg1, %out) {stream_axis = 2 : i64}',
            ("memref<3x4x8xf32>", "memref<3x8x2xf32>", "memref<3x4x2xf32>"),
            "the N axis of a matmul of ranks 3 and 3",
        ),
        (
            '"hir.matmul"(%arg0, %arg1, %out) {stream_axis = 1 : i64}',
            ("memref<3x4x8xf32>", "memref<3x8x2xf32>", "memref<3x4x2xf32>"),
            "the M axis of a matmul of ranks 3 and 3",
        ),
        (
            '"hir.set"(%arg0, %out) {stream_axis = 0 : i64}',
            (f"memref<4x8xf32, {shard(M2, 0)}>", f"memref<4x8xf32, {shard(M2, 0)}>"),
            "split over the device mesh [0, 1]",
        ),
    ],
)
def test_stream_lowering_errors(op_line, types, message):
    *ins, out = types
    args = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(ins))
    text = (
        f"func.func @main({args}) -> {out} {{\n"
        f"  %out = memref.alloc() : {out}\n"
        f"  {op_line} : ({', '.join(types)}) -> ()\n"
        f"  return %out : {out}\n}}\n"
    )
    module = hir.parse(text, "prog.mlir")
    if message is None:  # the control case lowers
        hir.lower(module, STREAM)
        assert '"hir.stream_for"' in str(module)
        return
    with pytest.raises(HirError) as info:
        hir.lower(module, STREAM, source_name="prog.mlir")
    assert str(info.value).startswith("prog.mlir:3:3: error: ") and message in str(info.value), str(info.value)


def test_stream_parallel_program_input():
    text = (
        "func.func @main(%arg0: memref<4xf32> {hir.stream_axis = 0 : i64}) -> memref<4xf32> {\n"
        "  %out = memref.alloc() : memref<4xf32>\n"
        '  "hir.set"(%arg0, %out) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "  return %out : memref<4xf32>\n}\n"
    )
    err = lower_error(text, STREAM)
    assert "prog.mlir:1:1: error: program input #0 is stream-parallel" in err, err


def test_stream_output_into_program_input():
    text = (
        "func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>) {\n"
        '  "hir.set"(%arg0, %arg1) {stream_axis = 0 : i64} : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "  return\n}\n"
    )
    assert "prog.mlir:2:3: error: 'hir.set' op writes its stream-parallel output into a program input" in lower_error(
        text, STREAM
    )


def test_nested_stream_axis():
    text = (
        "func.func @main(%arg0: memref<4xf32>) -> memref<4xf32> {\n"
        "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
        "  %out = memref.alloc() : memref<4xf32>\n"
        '  "hir.for"(%c0, %c1, %c1) ({\n  ^bb0(%i: index):\n'
        '    "hir.set"(%arg0, %out) {stream_axis = 0 : i64} : (memref<4xf32>, memref<4xf32>) -> ()\n'
        '    "hir.yield"() : () -> ()\n  }) : (index, index, index) -> ()\n'
        "  return %out : memref<4xf32>\n}\n"
    )
    assert "prog.mlir:7:5: error: 'hir.set' op is stream-parallel inside a region" in lower_error(text, STREAM)


def test_unsupported_stream_op():
    text = (
        "func.func @main(%arg0: memref<4x4xf32>) -> memref<4x4xf32> {\n"
        "  %out = memref.alloc() : memref<4x4xf32>\n"
        '  %w = "hir.send"(%arg0) {backend = "nccl", peer = 1 : i64,'
        " stream_axis = 0 : i64} : (memref<4x4xf32>) -> !hir.work\n"
        "  return %out : memref<4x4xf32>\n}\n"
    )
    assert (
        "prog.mlir:3:8: error: 'hir.send' op carries stream_axis = 0, but hir-stream-lowering only handles"
        in lower_error(text, STREAM)
    )


P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline"
M4 = "array<i64: 0, 1, 2, 3>"


def _rs_types(world: int = 4) -> tuple[str, str, str, str]:
    return (
        f"memref<{world}x4x2x2xf32, {shard(M4, 1)}>",
        f"memref<1x4x2x3xf32, {shard(M4, 1)}>",
        f"memref<{world}x4x2x3xf32, {shard(M4, 1)}>",
        f"memref<{world}x2x3xf32, {shard(M4, 0)}>",
    )


def _rs_program(extra: str = "", world: int = 4) -> str:
    a, w, p, o = _rs_types(world)
    return (
        f"func.func @main(%a: {a}, %w: {w}) -> {o} {{\n"
        f"  %p = memref.alloc() : {p}\n"
        f'  "hir.matmul"(%a, %w, %p) {{stream_axis = 0 : i64}} : ({a}, {w}, {p}) -> ()\n'
        f"  %out = memref.alloc() : {o}\n"
        f'  "hir.reduction"(%p, %out) {{axes = array<i64: 1>, kind '
        f'= "sum", stream_axis = 0 : i64}} : ({p}, {o}) -> ()\n'
        f"{extra}"
        f"  return %out : {o}\n}}\n"
    )


def test_p2p_allgather_needs_one_shard_per_device():
    a, t = f"memref<8x2xf32, {shard(M4, 0)}>", f"memref<8x2xf32, {shard(M4, -1)}>"
    err = lower_error(single_op("hir.set", a, t, "{stream_axis = 0 : i64}"), P2P)
    assert err.startswith(
        "prog.mlir:3:3: error: 'hir.allgather' op gathers axis 0 of extent "
        "8 over 4 devices; hir-p2p-pipeline needs one shard per device"
    ), err


def test_p2p_reduce_scatter_needs_one_slice_per_device():
    err = lower_error(_rs_program(world=8), P2P)
    assert "'hir.reduce_scatter' op" in err and "scatters axis 0 of extent 8 over 4 devices" in err, err


def test_p2p_reduce_scatter_needs_its_producer():
    _, _, p, o = _rs_types()
    text = (
        f"func.func @main(%p: {p}) -> {o} {{\n"
        f"  %out = memref.alloc() : {o}\n"
        f'  "hir.reduction"(%p, %out) {{axes = array<i64: 1>, kind '
        f'= "sum", stream_axis = 0 : i64}} : ({p}, {o}) -> ()\n'
        f"  return %out : {o}\n}}\n"
    )
    err = lower_error(text, P2P)
    assert err.startswith(
        "prog.mlir:3:3: error: 'hir.reduce_scatter' op needs its input written by a compute op with stream_axis = 0"
    ), err


def test_p2p_reduce_scatter_input_used_after():
    _, _, p, _ = _rs_types()
    extra = f'  %c = memref.alloc() : {p}\n  "hir.set"(%p, %c) : ({p}, {p}) -> ()\n'
    err = lower_error(_rs_program(extra), P2P)
    assert err.startswith(
        "prog.mlir:7:3: error: 'hir.set' op uses the reduce-scatter input of a P2P pipeline after it"
    ), err


def test_p2p_bad_streams_option():
    err = lower_error(_rs_program(), P2P + "{streams=0}")
    assert "hir-p2p-pipeline: streams must be at least 1, got 0" in err, err


def test_p2p_bad_chunks_option():
    err = lower_error(_rs_program(), P2P + "{chunks=0}")
    assert "hir-p2p-pipeline: chunks must be at least 1, got 0" in err, err


def test_p2p_bad_chunks_word_and_transfer():
    assert "hir-p2p-pipeline: chunks must be a number or 'auto', got 'many'" in lower_error(
        _rs_program(), P2P + "{chunks=many}"
    )
    assert "hir-p2p-pipeline: transfer 'throw' is not one of pull, push" in lower_error(
        _rs_program(), P2P + "{transfer=throw}"
    )
    assert "hir-p2p-pipeline: copy-gbps must be positive, got 0.0" in lower_error(_rs_program(), P2P + "{copy-gbps=0}")


def test_p2p_chunks_must_divide_the_slices():
    err = lower_error(_rs_program(), P2P + "{chunks=4}")
    assert err.startswith(
        "prog.mlir:3:3: error: 'hir.matmul' op axis 2 of operand #0 has extent 2, which does not divide into chunks = 4"
    ), err


def test_p2p_chunks_only_split_kept_axes():
    """A consumer reducing over the axis the chunks would split cannot run per chunk."""
    a, t, o = (
        f"memref<4x2x8xf32, {shard(M4, 0)}>",
        f"memref<4x2x8xf32, {shard(M4, -1)}>",
        f"memref<4x8xf32, {shard(M4, -1)}>",
    )
    text = (
        f"func.func @main(%a: {a}) -> {o} {{\n"
        f"  %t = memref.alloc() : {t}\n"
        f"  %out = memref.alloc() : {o}\n"
        f'  "hir.set"(%a, %t) {{stream_axis = 0 : i64}} : ({a}, {t}) -> ()\n'
        f'  "hir.reduction"(%t, %out) {{axes = array<i64: 1>, kind '
        f'= "sum", stream_axis = 0 : i64}} : ({t}, {o}) -> ()\n'
        f"  return %out : {o}\n}}\n"
    )
    err = lower_error(text, P2P + "{chunks=2}")
    assert err.startswith(
        "prog.mlir:5:3: error: 'hir.reduction' op reduces over axis 1 of operand #0, which chunks = 2 would split"
    ), err
