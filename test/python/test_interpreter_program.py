"""Whole programs on one process: compiled once and rerun, entry selection, ops on other
ranks' meshes skipped."""

import torch

from interp_util import mem, program, run, same

T864 = mem([8, 64])


def test_interp_program_compiles_once_and_reruns():
    text = (
        f'func.func @main(%a: {T864}, %b: {T864}, %out: {T864}) {{\n  "hir.binary"(%a,'
        f' %b, %out) {{kind = "sub"}} : ({T864}, {T864}, {T864}) -> ()\n  return\n}}'
    )
    prog = program(text)
    for _ in range(3):
        a, b, out = torch.randn(8, 64), torch.randn(8, 64), torch.empty(8, 64)
        prog([a, b, out])
        assert same(out, a - b)


def test_interp_entry_selection():
    text = """func.func @first() {
  return
}
func.func @second() -> index {
  %c = arith.constant 42 : index
  return %c : index
}"""
    assert run(text, [], entry="second") == [42]


def test_interp_buffer_on_a_device_without_a_rank_is_refused():
    """A single process is rank 0 of a world of 1: a buffer on mesh [1] has no rank to hold
    it, so the run is refused at its start, located (not skipped with rows never computed)."""
    import pytest

    from hir import HirError

    t = "memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>"
    text = f"""func.func @main(%x: {t}, %y: {mem([4])}) {{
  "hir.set"(%x, %x) : ({t}, {t}) -> ()
  return
}}"""
    with pytest.raises(
        HirError,
        match=r"test.mlir:1:17: error: argument #0 of 'func.func' is "
        r"placed on devices \[1\] but the run has 1 rank\(s\)",
    ):
        run(text, [None, torch.ones(4)])


def test_local_arguments_shards_global_tensors():
    """hir.interpreter.local_arguments: each rank's shard as the argument type places it
    (2-D mesh included), None off the buffer's mesh, scalars as given; a wrong global shape
    or argument count is an error naming it."""
    import pytest

    import hir
    from hir import HirError
    from hir.interpreter import local_arguments

    rows = "memref<4x6xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>"
    grid = "memref<4x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>"
    only1 = "memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>"
    module = hir.parse(
        f"""func.func @main(%r: {rows}, %g: {grid}, %o: {only1}, %n: index, %p: memref<3xf32>) {{
  return
}}""",
        "local.mlir",
    )
    full = torch.arange(24.0).reshape(4, 6)
    other, plain = torch.ones(4), torch.zeros(3)
    r0 = local_arguments(module, [full, full, other, 5, plain], 0)
    assert (
        torch.equal(r0[0], full[:2])
        and torch.equal(r0[1], full[:2, :3])
        and r0[2] is None
        and r0[3] == 5
        and torch.equal(r0[4], plain)
    )
    r1 = local_arguments(module, [full, full, other, 5, plain], 1)
    assert torch.equal(r1[0], full[2:]) and torch.equal(r1[1], full[:2, 3:]) and torch.equal(r1[2], other)
    r3 = local_arguments(module, [full, full, other, 5, plain], 3)
    assert r3[0] is None and torch.equal(r3[1], full[2:, 3:]) and r3[2] is None
    with pytest.raises(HirError, match=r"argument #1 of @main: expected a global tensor of shape \[4, 6\]"):
        local_arguments(module, [full, full[:2], other, 5, plain], 0)
    with pytest.raises(HirError, match="@main takes 5 argument"):
        local_arguments(module, [full], 0)


def test_program_keeps_its_module_alive():
    """The compiler's op and value handles do not keep their ir.Module alive (these bindings'
    handles from a block's ops hold no reference to it): the Program does, so a module the
    caller dropped (``Program(hir.parse(text))``, an imported program gone with its
    TorchProgram) is not freed under them."""
    import gc
    import weakref

    import hir
    from hir.interpreter import Program

    module = hir.parse("func.func @main() attributes {hir.kernel} {\n  return\n}", "test.mlir")
    prog, dropped = Program(module, device="cpu"), weakref.ref(module)
    del module
    gc.collect()
    assert dropped() is not None
    assert "hir.kernel" in prog.compiler.functions["main"].operation.attributes
