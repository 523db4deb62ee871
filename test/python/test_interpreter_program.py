"""Whole programs on one process: compiled once and rerun, entry selection, ops on other
ranks' meshes skipped."""

import torch

from interp_util import mem, program, run, same

T864 = mem([8, 64])


def test_interp_program_compiles_once_and_reruns():
    text = f'func.func @main(%a: {T864}, %b: {T864}, %out: {T864}) {{\n  "hir.binary"(%a, %b, %out) {{kind = "sub"}} : ({T864}, {T864}, {T864}) -> ()\n  return\n}}'
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


def test_interp_ops_on_other_ranks_meshes_are_skipped():
    """Rank 0 of a single process: a buffer on mesh [1] is not held, ops on it are skipped
    and its input may be None."""
    t = "memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>"
    text = f"""func.func @main(%x: {t}, %y: {mem([4])}) {{
  "hir.set"(%x, %x) : ({t}, {t}) -> ()
  "hir.binary"(%y, %y, %y) {{kind = "add"}} : ({mem([4])}, {mem([4])}, {mem([4])}) -> ()
  return
}}"""
    y = torch.ones(4)
    run(text, [None, y])
    assert y.tolist() == [2, 2, 2, 2]
