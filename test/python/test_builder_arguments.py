"""The builder's arguments as a user writes them: what torch.matmul, for_ and alloc take is
taken (rank-1 matmul operands, Python ints as indices, torch dtypes), and anything else is an
hir.HirError located at the caller's line, never an IndexError or a binding's TypeError."""

import pytest
import torch

from hir.builder import Builder, Shard
from hir.core import HirError
from hir.interpreter import run
from source_marks import marked_site


def at(tag: str) -> str:
    """``file:line:`` of this file's line marked ``# at: TAG`` (as a regex)."""
    return marked_site(__file__, tag)


def test_rank_1_matmul_operands_infer_torch_shapes():
    b = Builder()
    v, w, a = b.input([32]), b.input([32, 8]), b.input([4, 32])
    vw, av, vv = b.matmul(v, w), b.matmul(a, v), b.matmul(v, v)
    assert (vw.shape, av.shape, vv.shape) == ([8], [4], [])
    for t in (vw, av, vv):
        b.output(t)
    V, W, A = torch.randn(32), torch.randn(32, 8), torch.randn(4, 32)
    got = run(b.finish(), [V, W, A], device="cpu")
    for g, want in zip(got, (V @ W, A @ V, V @ V)):
        torch.testing.assert_close(g, want)


def test_lowered_row_matmul_written_by_hand():
    """The README's lowered IR by hand: each row of x (an alias_select, rank 1) times w into
    the same row of out; the index an int in one call, a loop's index in the other."""
    b = Builder()
    x, w = b.input([4, 32]), b.input([32, 8])
    out = b.alloc([4, 8])
    b.matmul(b.alias_select(x, 0, axis=0), w, out=b.alias_select(out, 0, axis=0))
    with b.for_(1, 4) as i:
        b.matmul(b.alias_select(x, i, axis=0), w, out=b.alias_select(out, i, axis=0))
    b.output(out)
    X, W = torch.randn(4, 32), torch.randn(32, 8)
    (got,) = run(b.finish(), [X, W], device="cpu")
    torch.testing.assert_close(got, X @ W)


def test_rank_1_matmul_keeps_the_row_split():
    b = Builder()
    a = b.input([4, 32], sharding=Shard([0, 1], 0))
    assert b.matmul(a, b.input([32])).sharding == Shard([0, 1], 0)
    assert b.matmul(b.input([32]), b.input([32, 8], sharding=Shard([0, 1], 1))).sharding == Shard([0, 1], 0)


def test_int_indices_are_accepted():
    b = Builder()
    x = b.input([4, 8])
    b.output(b.set(b.alias_select(x, 1, axis=0)))
    b.output(b.set(b.alias_chunk(x, 1, axis=0, chunks=2)))
    b.get_stream(0)
    X = torch.randn(4, 8)
    row, chunk = run(b.finish(), [X], device="cpu")
    torch.testing.assert_close(row, X[1])
    torch.testing.assert_close(chunk, X[2:])


@pytest.mark.parametrize("dtype,element", [(torch.float32, "f32"), (torch.bfloat16, "bf16"), (torch.int64, "i64")])
def test_torch_dtypes_are_accepted(dtype, element):
    b = Builder()
    assert str(b.input([2], dtype).type) == f"memref<2x{element}>"
    assert str(b.alloc([3], dtype).type) == f"memref<3x{element}>"


def test_unknown_dtype_is_located():
    b = Builder()
    with pytest.raises(HirError, match=at("c64") + r"\d+: error: dtype must be one of f32, .* got torch.complex64"):
        b.input([2], torch.complex64)  # at: c64
    with pytest.raises(HirError, match=at("float-name") + r"\d+: error: dtype must be one of .* got 'float'"):
        b.alloc([2], "float")  # at: float-name


@pytest.mark.parametrize("index,got", [(1.5, "float 1.5"), ("1", "str '1'"), (True, "bool True")])
def test_bad_index_is_located(index, got):
    b = Builder()
    x = b.input([4, 8])
    error = rf"\d+: error: alias_select: index must be an int or an index value, got {got}"
    with pytest.raises(HirError, match=at("bad-index") + error):
        b.alias_select(x, index, axis=0)  # at: bad-index


def test_index_value_of_another_type_is_located():
    b = Builder()
    x, flag = b.input([4, 8]), b.scalar("i64")
    error = r"\d+: error: alias_chunk: index must be an int or an index value, got a value of type i64"
    with pytest.raises(HirError, match=at("i64-index") + error):
        b.alias_chunk(x, flag, axis=0, chunks=2)  # at: i64-index


def test_building_after_finish_is_located():
    b = Builder()
    b.output(b.input([2]))
    b.finish()  # at: finish
    error = rf"\d+: error: this Builder's module was finished at {at('finish')}\d+; "
    error += "build another program with a new Builder"
    with pytest.raises(HirError, match=at("finish-again") + error):
        b.finish()  # at: finish-again
    with pytest.raises(HirError, match=at("input-after-finish") + r"\d+: error: this Builder's module was finished"):
        b.input([2])  # at: input-after-finish


def test_matmul_of_mismatched_vector_is_located():
    b = Builder()
    with pytest.raises(HirError, match=at("vector-mismatch") + r"\d+: error: .*contraction mismatch"):
        b.matmul(b.input([4, 32]), b.input([16]))  # at: vector-mismatch


def test_bad_shape_and_size_are_located():
    b = Builder()
    error = r"\d+: error: a shape holds ints >= 0 and None \(a dynamic extent\), got \[4.0\]"
    with pytest.raises(HirError, match=at("float-shape") + error):
        b.input([4.0])  # at: float-shape
    error = r"\d+: error: alloc: a size must be an int or an index value, got float 2.5"
    with pytest.raises(HirError, match=at("float-size") + error):
        b.alloc([2.5, 3])  # at: float-size
    with pytest.raises(HirError, match=at("list-dtype") + r"\d+: error: dtype must be one of .* got \['f32'\]"):
        b.input([2], ["f32"])  # at: list-dtype
