"""The compute group on one process (CPU): set / binary / reduction with and without
preallocated outputs, matmul and linear into a preallocated output, kernel segments
(nvFuser's HostIrEvaluator scenarios, seeds 000 and 004)."""

import pytest
import torch

from interp_util import mem, program, run, same

T864 = mem([8, 64])


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
}


@pytest.mark.parametrize("prealloc", [True, False])
def test_interp_set(prealloc):
    if prealloc:
        text = (
            f'func.func @main(%in: {T864}, %out: {T864}) {{\n  "hir.set"(%in, %out) : ({T864}, {T864}) -> ()\n'
            "  return\n}"
        )
        x, out = torch.randn(8, 64), torch.empty(8, 64)
        assert run(text, [x, out]) == []
        assert torch.equal(out, x)
        return
    text = f"""func.func @main(%in: {T864}) -> {T864} {{
  %out = memref.alloc() : {T864}
  "hir.set"(%in, %out) : ({T864}, {T864}) -> ()
  return %out : {T864}
}}"""
    x = torch.randn(8, 64)
    (out,) = run(text, [x])
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("kind", list(BINARY))
@pytest.mark.parametrize("prealloc", [True, False])
def test_interp_binary(kind, prealloc):
    a, b = torch.randn(8, 64), torch.randn(8, 64)
    if prealloc:
        text = f"""func.func @main(%a: {T864}, %b: {T864}, %out: {T864}) {{
  "hir.binary"(%a, %b, %out) {{kind = "{kind}"}} : ({T864}, {T864}, {T864}) -> ()
  return
}}"""
        out = torch.empty(8, 64)
        assert run(text, [a, b, out]) == []
    else:
        text = f"""func.func @main(%a: {T864}, %b: {T864}) -> {T864} {{
  %out = memref.alloc() : {T864}
  "hir.binary"(%a, %b, %out) {{kind = "{kind}"}} : ({T864}, {T864}, {T864}) -> ()
  return %out : {T864}
}}"""
        (out,) = run(text, [a, b])
    assert same(out, BINARY[kind](a, b))


def test_interp_binary_broadcast_and_int_div():
    ti, tb = mem([2, 3], "i32"), mem([3], "i32")
    text = f"""func.func @main(%a: {ti}, %b: {tb}, %out: {ti}) {{
  "hir.binary"(%a, %b, %out) {{kind = "div"}} : ({ti}, {tb}, {ti}) -> ()
  return
}}"""
    a, b, out = (
        torch.tensor([[7, -7, 9], [1, 2, 3]], dtype=torch.int32),
        torch.tensor([2, 2, -4], dtype=torch.int32),
        torch.empty(2, 3, dtype=torch.int32),
    )
    run(text, [a, b, out])
    assert out.tolist() == [[3, -3, -2], [0, 1, 0]]  # arith.divsi: toward zero


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("prealloc", [True, False])
def test_interp_reduction(kind, prealloc):
    t8 = mem([8])
    x = torch.randn(8, 64) * 0.1 + 1
    want = {"sum": x.sum(1), "prod": x.prod(1), "max": x.amax(1), "min": x.amin(1)}[kind]
    op = f'"hir.reduction"(%in, %out) {{kind = "{kind}", axes = array<i64: 1>}} : ({T864}, {t8}) -> ()'
    if prealloc:
        out = torch.empty(8)
        run(f"func.func @main(%in: {T864}, %out: {t8}) {{\n  {op}\n  return\n}}", [x, out])
    else:
        (out,) = run(
            f"func.func @main(%in: {T864}) -> {t8} {{\n  %out = "
            f"memref.alloc() : {t8}\n  {op}\n  return %out : {t8}\n}}",
            [x],
        )
    assert same(out, want)


def test_interp_reduction_several_axes():
    t3, t1 = mem([2, 3, 4]), mem([3])
    x = torch.rand(2, 3, 4) + 0.5
    for kind, want in (("sum", x.sum((0, 2))), ("prod", x.prod(2).prod(0))):
        out = torch.empty(3)
        run(
            f'func.func @main(%in: {t3}, %out: {t1}) {{\n  "hir.reduction"(%in, %out) '
            f'{{kind = "{kind}", axes = array<i64: 0, 2>}} : ({t3}, {t1}) -> ()\n  return\n}}',
            [x, out],
        )
        assert same(out, want)


def test_interp_matmul_into_preallocated_output():
    ta, tb, to = mem([8, 16]), mem([16, 4]), mem([8, 4])
    text = (
        f"func.func @main(%a: {ta}, %b: {tb}, %out: {to}) {{\n  "
        f'"hir.matmul"(%a, %b, %out) : ({ta}, {tb}, {to}) -> ()\n  return\n}}'
    )
    a, b, out = torch.randn(8, 16), torch.randn(16, 4), torch.empty(8, 4)
    run(text, [a, b, out])
    assert same(out, a @ b)


@pytest.mark.parametrize(
    "shapes",
    [
        ([8, 16], [16, 4], [8, 4]),
        ([1, 8, 16], [3, 16, 4], [3, 8, 4]),
        ([2, 1, 8, 16], [3, 16, 4], [2, 3, 8, 4]),
        ([16], [16, 4], [4]),
    ],
)
def test_interp_matmul_accumulate(shapes):
    """``{accumulate}``: out += a @ b (addmm_, baddbmm_ with a broadcast batch, else a
    product added), into the caller's buffer."""
    ta, tb, to = (mem(s) for s in shapes)
    text = (
        f'func.func @main(%a: {ta}, %b: {tb}, %out: {to}) {{\n  "hir.matmul"(%a,'
        f" %b, %out) {{accumulate}} : ({ta}, {tb}, {to}) -> ()\n  return\n}}"
    )
    a, b, out = (torch.randn(s) for s in shapes)
    want = out + torch.matmul(a, b)
    run(text, [a, b, out])
    assert torch.allclose(out, want, atol=1e-5)


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")]
        ),
    ],
)
def test_interp_matmul_accumulate_bf16_strided(device):
    """{accumulate} in bf16 into a strided part of a batch (as the accumulating
    reduce-scatter's chunked slots): baddbmm_ adds in place, the rest untouched."""
    a, b, whole = mem([1, 4, 64], "bf16"), mem([1, 64, 32], "bf16"), mem([1, 8, 32], "bf16")
    o = "memref<1x4x32xbf16, strided<[256, 32, 1], offset: ?>>"
    text = f"""func.func @main(%a: {a}, %b: {b}, %buf: {whole}) {{
  %c1 = arith.constant 1 : index
  %part = "hir.alias_chunk"(%buf, %c1) {{axis = 1 : i64, chunks = 2 : i64}} : ({whole}, index) -> {o}
  "hir.matmul"(%a, %b, %part) {{accumulate}} : ({a}, {b}, {o}) -> ()
  return
}}"""
    x, y, buf = (torch.randn(s).to(device=device, dtype=torch.bfloat16) for s in ([1, 4, 64], [1, 64, 32], [1, 8, 32]))
    want = buf.float().clone()
    want[:, 4:] += x.float() @ y.float()
    run(text, [x, y, buf], device=device, graph=False)
    assert torch.allclose(buf.float(), want, atol=0.25, rtol=2e-2)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
def test_interp_linear_into_preallocated_output(bias, batched):
    xs = [2, 8, 16] if batched else [8, 16]
    tx, tw, to, tb = mem(xs), mem([4, 16]), mem(xs[:-1] + [4]), mem([4])
    if bias:
        text = (
            f'func.func @main(%x: {tx}, %w: {tw}, %b: {tb}, %out: {to}) {{\n  "hir.linear"(%x, %w, %out, %b) '
            f"{{operandSegmentSizes = array<i32: 1, 1, 1, 1>}} : ({tx}, {tw}, {to}, {tb}) -> ()\n  return\n}}"
        )
    else:
        text = (
            f'func.func @main(%x: {tx}, %w: {tw}, %b: {tb}, %out: {to}) {{\n  "hir.linear"(%x, %w, %out) '
            f"{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}} : ({tx}, {tw}, {to}) -> ()\n  return\n}}"
        )
    x, w, b, out = torch.randn(xs), torch.randn(4, 16), torch.randn(4), torch.empty(xs[:-1] + [4])
    run(text, [x, w, b, out])
    assert same(out, torch.nn.functional.linear(x, w, b if bias else None))


KERNEL = f"""func.func private @unit(%a: {T864}, %b: {T864}, %out: {T864}) attributes {{hir.kernel}} {{
  %t = memref.alloc() : {T864}
  "hir.binary"(%a, %b, %t) {{kind = "mul"}} : ({T864}, {T864}, {T864}) -> ()
  "hir.binary"(%t, %a, %out) {{kind = "add"}} : ({T864}, {T864}, {T864}) -> ()
  return
}}
func.func @main(%a: {T864}, %b: {T864}, %out: {T864}) {{
  func.call @unit(%a, %b, %out) : ({T864}, {T864}, {T864}) -> ()
  return
}}"""


def test_interp_kernel_segment_call():
    a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.empty(8, 64)
    run(KERNEL, [a, b, out])
    assert same(out, a * b + a)


def _torch_compile_works() -> bool:
    try:
        return bool(torch.compile(lambda x: x + 1)(torch.ones(1)).item() == 2)
    except Exception:  # noqa: BLE001 - any failure means no working compiler here
        return False


def test_interp_kernel_segment_torch_compile():
    if not _torch_compile_works():
        pytest.skip("torch.compile does not work on this machine")
    a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.empty(8, 64)
    prog = program(KERNEL, compile_kernels=True)
    prog([a, b, out])
    assert same(out, a * b + a)
    a2 = torch.randn(8, 64)
    prog([a2, b, out])  # a second run reuses the compiled unit
    assert same(out, a2 * b + a2)
