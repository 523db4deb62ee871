"""linalg-on-tensors kernel segments run by the interpreter (issue 15), each compared with
the same computation written directly in torch."""

import pytest
import torch

from hir.core import HirError
from interp_util import gelu_generic, mem, program, run


def tensor_type(shape, dtype="f32") -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def kernel_module(body: str, in_shapes: list, out_shape: list, dtype: str = "f32") -> str:
    """A kernel segment computing ``%r`` from tensors ``%t0 ..`` (the buffers ``%a0 ..``),
    materialized into the caller's output buffer."""
    ins = [(mem(s, dtype), tensor_type(s, dtype)) for s in in_shapes]
    out_m, out_t = mem(out_shape, dtype), tensor_type(out_shape, dtype)
    args = ", ".join(f"%a{i}: {m}" for i, (m, _) in enumerate(ins))
    bridges = "\n".join(
        f"  %t{i} = bufferization.to_tensor %a{i} restrict : {m} to {t}" for i, (m, t) in enumerate(ins)
    )
    call_args = ", ".join(f"%a{i}" for i in range(len(ins)))
    call_types = ", ".join(m for m, _ in ins)
    return f"""
func.func private @kernel({args}, %out: {out_m}) attributes {{hir.kernel}} {{
{bridges}
{body}
  bufferization.materialize_in_destination %r in restrict writable %out : ({out_t}, {out_m}) -> ()
  return
}}
func.func @main({args}) -> {out_m} {{
  %out = memref.alloc() : {out_m}
  func.call @kernel({call_args}, %out) : ({call_types}, {out_m}) -> ()
  return %out : {out_m}
}}
"""


GELU = """
  %c1 = arith.constant 1.000000e+00 : f32
  %ch = arith.constant 5.000000e-01 : f32
  %cs = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<8x16xf32>
""" + gelu_generic("%r", "%t0")


def test_gelu_payload_of_the_shard_probes():
    x = torch.randn(8, 16)
    (got,) = run(kernel_module(GELU, [[8, 16]], [8, 16]), [x])
    assert torch.allclose(got, torch.nn.functional.gelu(x), atol=1e-6)


def _generic(maps: list, iterators: list, ins: list, out: str, payload: str, init: str = "%e") -> str:
    maps_text = ", ".join(f"affine_map<{m}>" for m in maps)
    its = ", ".join(f'"{i}"' for i in iterators)
    names = ", ".join(v for v, _ in ins)
    types = ", ".join(t for _, t in ins)
    return (
        f"  %r = linalg.generic {{indexing_maps = [{maps_text}], iterator_types = [{its}]}} "
        f"ins({names} : {types}) outs({init} : {out}) {{\n{payload}\n  }} -> {out}"
    )


@pytest.mark.parametrize(
    "kind,combiner,init_value,reference",
    [
        ("sum", "arith.addf %p, %o : f32", "0.0", lambda a, b: (a * b).sum(1)),
        ("max", "arith.maximumf %p, %o : f32", "0xFF800000", lambda a, b: (a * b).amax(1)),
        ("min", "arith.minimumf %o, %p : f32", "0x7F800000", lambda a, b: (a * b).amin(1)),
        ("prod", "arith.mulf %p, %o : f32", "1.0", lambda a, b: (a * b).prod(1)),
    ],
)
def test_reductions_by_combiner(kind, combiner, init_value, reference):
    """A row reduction of a * b^T-broadcast: the combiner picks the torch reduction."""
    body = f"""
  %z = arith.constant {init_value} : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %e = linalg.fill ins(%z : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
""" + _generic(
        ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d1)", "(d0, d1) -> (d0)"],
        ["parallel", "reduction"],
        [("%t0", "tensor<4x6xf32>"), ("%t1", "tensor<6xf32>")],
        "tensor<4xf32>",
        "  ^bb0(%x: f32, %y: f32, %o: f32):\n    %p = arith.mulf %x, %y : f32\n    %s = "
        + combiner
        + "\n    linalg.yield %s : f32",
    )
    a, b = torch.rand(4, 6) + 0.5, torch.rand(6) + 0.5
    (got,) = run(kernel_module(body, [[4, 6], [6]], [4]), [a, b])
    assert torch.allclose(got, reference(a, b), rtol=1e-5), kind


def test_transpose_broadcast_and_diagonal_maps():
    """out[i, j] = a[j, i] + diag(m)[i] * v[0]: a permuted map, a diagonal and a constant index."""
    body = "  %e = tensor.empty() : tensor<3x5xf32>\n" + _generic(
        ["(d0, d1) -> (d1, d0)", "(d0, d1) -> (d0, d0)", "(d0, d1) -> (0)", "(d0, d1) -> (d0, d1)"],
        ["parallel", "parallel"],
        [("%t0", "tensor<5x3xf32>"), ("%t1", "tensor<3x3xf32>"), ("%t2", "tensor<1xf32>")],
        "tensor<3x5xf32>",
        "  ^bb0(%a: f32, %m: f32, %v: f32, %o: f32):\n    %p = arith.mulf %m, %v : f32\n"
        "    %s = arith.addf %a, %p : f32\n    linalg.yield %s : f32",
    )
    a, m, v = torch.randn(5, 3), torch.randn(3, 3), torch.randn(1)
    (got,) = run(kernel_module(body, [[5, 3], [3, 3], [1]], [3, 5]), [a, m, v])
    want = a.t() + (torch.diagonal(m) * v[0]).unsqueeze(1)
    assert torch.allclose(got, want, atol=1e-6)


def test_compare_select_cast_and_index():
    """relu through cmpf/select, plus the column index cast to f32 (linalg.index)."""
    body = "  %e = tensor.empty() : tensor<4x6xf32>\n" + _generic(
        ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, d1)"],
        ["parallel", "parallel"],
        [("%t0", "tensor<4x6xf32>")],
        "tensor<4x6xf32>",
        """  ^bb0(%x: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %x, %z : f32
    %relu = arith.select %gt, %x, %z : f32
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %s = arith.addf %relu, %jf : f32
    linalg.yield %s : f32""",
    )
    x = torch.randn(4, 6)
    (got,) = run(kernel_module(body, [[4, 6]], [4, 6]), [x])
    assert torch.allclose(got, torch.relu(x) + torch.arange(6.0), atol=1e-6)


def test_named_ops_matmul_batch_matmul_transpose_reshape():
    body = """
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %m = linalg.matmul ins(%t0, %t1 : tensor<4x3xf32>, tensor<3x5xf32>) outs(%f : tensor<4x5xf32>) -> tensor<4x5xf32>
  %x = tensor.expand_shape %m [[0, 1], [2]] output_shape [1, 4, 5] : tensor<4x5xf32> into tensor<1x4x5xf32>
  %eb = tensor.empty() : tensor<1x4x4xf32>
  %fb = linalg.fill ins(%z : f32) outs(%eb : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %et = tensor.empty() : tensor<1x5x4xf32>
  %xt = linalg.transpose ins(%x : tensor<1x4x5xf32>) outs(%et : tensor<1x5x4xf32>) permutation = [0, 2, 1]
  %b = linalg.batch_matmul ins(%x, %xt : tensor<1x4x5xf32>, tensor<1x5x4xf32>)
      outs(%fb : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %c = tensor.collapse_shape %b [[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %r = linalg.add ins(%c, %c : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>"""
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    (got,) = run(kernel_module(body, [[4, 3], [3, 5]], [4, 4]), [a, b])
    m = a @ b
    assert torch.allclose(got, 2 * (m @ m.t()), atol=1e-4)


def test_matmul_accumulates_into_its_init_and_dense_constant():
    body = """
  %k = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %r = linalg.matmul ins(%t0, %t1 : tensor<2x3xf32>, tensor<3x2xf32>) outs(%k : tensor<2x2xf32>) -> tensor<2x2xf32>"""
    a, b = torch.randn(2, 3), torch.randn(3, 2)
    (got,) = run(kernel_module(body, [[2, 3], [3, 2]], [2, 2]), [a, b])
    assert torch.allclose(got, a @ b + torch.tensor([[1.0, 2.0], [3.0, 4.0]]), atol=1e-5)


def test_unsupported_payload_is_a_plan_time_error_at_its_location():
    body = "  %e = tensor.empty() : tensor<4xf32>\n" + _generic(
        ["(d0) -> (d0)", "(d0) -> (d0)"], ["parallel"], [("%t0", "tensor<4xf32>")], "tensor<4xf32>",
        "  ^bb0(%x: f32, %o: f32):\n    %c = math.cbrt %x : f32\n    linalg.yield %c : f32",
    )  # fmt: skip
    with pytest.raises(HirError, match=r"test.mlir:\d+:\d+: error: 'math.cbrt' has no torch equivalent"):
        program(kernel_module(body, [[4]], [4]))


def test_non_projected_map_is_a_plan_time_error():
    """A 1-D convolution's ``d0 + d1`` map."""
    body = "  %e = tensor.empty() : tensor<4xf32>\n" + _generic(
        ["(d0, d1) -> (d0 + d1)", "(d0, d1) -> (d1)", "(d0, d1) -> (d0)"], ["parallel", "reduction"],
        [("%t0", "tensor<5xf32>"), ("%t1", "tensor<2xf32>")], "tensor<4xf32>",
        "  ^bb0(%x: f32, %w: f32, %o: f32):\n    %p = arith.mulf %x, %w : f32\n    %s = arith.addf %p, %o : f32\n"
        "    linalg.yield %s : f32",
    )  # fmt: skip
    with pytest.raises(HirError, match=r"'linalg.generic' indexing map .* only loop dims and constants run"):
        program(kernel_module(body, [[5], [2]], [4]))


def test_extract_slice_static_and_strided():
    body = "  %r = tensor.extract_slice %t0[1, 2] [2, 3] [1, 2] : tensor<4x8xf32> to tensor<2x3xf32>"
    x = torch.randn(4, 8)
    (got,) = run(kernel_module(body, [[4, 8]], [2, 3]), [x])
    assert torch.equal(got, x[1:3, 2:8:2])
