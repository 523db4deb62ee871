"""Bad programs and bad inputs give ``file:line:col: error:`` messages naming the op or
argument, and inputs are checked before anything runs (preallocated outputs untouched)."""

import pytest
import torch

from hir.core import HirError
from interp_util import mem, program, run

T = mem([4, 8])
SET = f"""func.func @main(%in: {T}, %out: {T}, %x: {mem([3], "i32")}) {{
  "hir.set"(%in, %out) : ({T}, {T}, ) -> ()
  return
}}""".replace(", )", ")")


def _inputs():
    return [torch.randn(4, 8), torch.zeros(4, 8), torch.zeros(3, dtype=torch.int32)]


@pytest.mark.parametrize(
    "index,bad,message",
    [
        (2, torch.zeros(4, dtype=torch.int32), r"argument #2 \(memref<3xi32>\) expects shape \[3\], got \[4\]"),
        (2, torch.zeros(3, dtype=torch.int64), r"argument #2 .* expects dtype torch.int32, got torch.int64"),
        (
            2,
            torch.zeros(3, dtype=torch.int32, device="meta"),
            r"argument #2 .* expects a tensor on cpu, got one on meta",
        ),
        (2, [0, 0, 0], r"argument #2 .* expects a torch.Tensor, got list"),
    ],
)
def test_interp_bad_input_leaves_outputs_untouched(index, bad, message):
    inputs = _inputs()
    inputs[index] = bad
    with pytest.raises(HirError, match=r"^test.mlir:1:1: error: @main " + message):
        run(SET, inputs)
    assert torch.count_nonzero(inputs[1]) == 0  # the set before it never ran


def test_interp_static_entry_checks_inputs_at_once():
    """An entry of static buffers only checks a call's inputs in one generated function:
    a tuple and tensor subclasses pass it; anything else falls back to the per-argument
    check, which names the bad input (above)."""
    p = program(SET, graph=False)
    assert p._args.all_fit is not None
    inputs = _inputs()
    inputs[0] = torch.nn.Parameter(inputs[0], requires_grad=False)
    assert all(a is b for a, b in zip(p._args.check(tuple(inputs)), inputs))
    p(tuple(inputs))
    torch.testing.assert_close(inputs[1], inputs[0])
    assert not p._args.all_fit(*_inputs()[:2], torch.zeros(3, dtype=torch.int64))
    with pytest.raises(HirError, match=r"@main takes a list of 3 input\(s\), got Tensor"):
        p(torch.zeros(3))
    scalar = program(f"func.func @main(%a: {T}, %n: index) {{\n  return\n}}", graph=False)
    assert scalar._args.all_fit is None  # a host scalar is converted: checked per argument
    scalar([torch.zeros(4, 8), 3])


def test_interp_wrong_number_of_inputs():
    with pytest.raises(HirError, match=r"test.mlir:1:1: error: @main takes 3 input\(s\), got 2"):
        run(SET, _inputs()[:2])


def test_interp_scalar_argument_type():
    with pytest.raises(HirError, match=r"argument #0 \(index\) expects a int, got float"):
        run("func.func @main(%n: index) {\n  return\n}", [2.5])


def test_interp_wait_twice():
    t = "memref<2xf32, #hir.shard<array<i64: 0>, 0 : i64>>"
    text = f"""func.func @main(%a: {t}, %b: {mem([2])}) {{
  %w = "hir.allgather"(%a, %b) {{axis = 0 : i64, backend = "gloo", team = array<i64: 0>}}
      : ({t}, {mem([2])}) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}}"""
    with pytest.raises(HirError, match=r"test.mlir:5:3: error: 'hir.wait' waits on work that was already waited on"):
        run(text, [torch.ones(2), torch.zeros(2)])


def test_interp_dealloc_of_unknown_buffer():
    text = f"func.func @main(%a: {T}) {{\n  memref.dealloc %a : {T}\n  return\n}}"
    with pytest.raises(HirError, match=r"test.mlir:2:3: error: 'memref.dealloc' deallocates an unknown buffer: %arg0"):
        program(text)


def test_interp_use_after_dealloc_and_double_dealloc():
    use = f"""func.func @main(%a: {T}) {{
  %t = memref.alloc() : {T}
  memref.dealloc %t : {T}
  "hir.set"(%a, %t) : ({T}, {T}) -> ()
  return
}}"""
    with pytest.raises(
        HirError, match=r"test.mlir:4:3: error: 'hir.set' operand #1 \(%alloc\) is used after memref.dealloc"
    ):
        run(use, [torch.zeros(4, 8)])
    twice = (
        f"func.func @main() {{\n  %t = memref.alloc() : {T}\n  "
        f"memref.dealloc %t : {T}\n  memref.dealloc %t : {T}\n  return\n}}"
    )
    with pytest.raises(HirError, match=r"test.mlir:4:3: error: 'memref.dealloc' buffer %alloc is already deallocated"):
        run(twice, [])


def test_interp_dealloc_folded_into_a_torch_step_keeps_its_errors():
    """Deallocations after a torch call run in its step (folded), and still report at their
    own op; the call's failure is still the call's."""
    text = f"""func.func @main(%a: {T}) {{
  %t = memref.alloc() : {T}
  "hir.binary"(%a, %a, %t) {{kind = "add"}} : ({T}, {T}, {T}) -> ()
  memref.dealloc %t : {T}
  memref.dealloc %t : {T}
  return
}}"""
    p = program(text, graph=False)
    assert [s.hir_op.name for s in p.plan.steps] == ["hir.binary"]
    with pytest.raises(HirError) as info:
        p([torch.zeros(4, 8)])
    assert info.value.message == "test.mlir:5:3: error: 'memref.dealloc' buffer %alloc is already deallocated"


def test_interp_use_of_view_after_parent_dealloc():
    row = mem([8], layout="strided<[1], offset: ?>")
    text = f"""func.func @main(%a: {mem([8])}) {{
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : {T}
  %r = "hir.alias_select"(%t, %c0) {{axis = 0 : i64}} : ({T}, index) -> {row}
  memref.dealloc %t : {T}
  "hir.set"(%a, %r) : ({mem([8])}, {row}) -> ()
  return
}}"""
    with pytest.raises(HirError, match=r"test.mlir:6:3: error: 'hir.set' operand #1 .* after memref.dealloc"):
        run(text, [torch.zeros(8)])


def test_interp_rank_outside_team():
    t = "memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>"
    text = f"""func.func @main(%a: {t}, %b: {mem([4])}) {{
  %w = "hir.allgather"(%a, %b) {{axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}}
      : ({t}, {mem([4])}) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}}"""
    # the placement check (run start) reports the argument first, before the team's op
    with pytest.raises(
        HirError,
        match=r"test.mlir:1:17: error: argument #0 of 'func.func' is "
        r"placed on devices \[0, 1\] but the run has 1 rank\(s\)",
    ):
        program(text)


def test_interp_loop_step_must_be_positive():
    out = mem([1])
    text = f"""func.func @main(%o: {out}, %step: index) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  "hir.for"(%c0, %c4, %step) ({{
  ^bb0(%i: index):
    "hir.binary"(%o, %o, %o) {{kind = "add"}} : ({out}, {out}, {out}) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""
    o = torch.ones(1)
    for step in (0, -1):
        with pytest.raises(HirError, match=rf"test.mlir:4:3: error: 'hir.for' step must be positive, got {step}"):
            run(text, [o, step])
    assert o.item() == 1


def test_interp_alias_select_index_out_of_range():
    row = mem([8], layout="strided<[1], offset: ?>")
    text = f"""func.func @main(%a: {T}, %i: index) {{
  %r = "hir.alias_select"(%a, %i) {{axis = 0 : i64}} : ({T}, index) -> {row}
  return
}}"""
    for i in (4, -1):
        with pytest.raises(
            HirError, match=rf"test.mlir:2:8: error: 'hir.alias_select' index {i} is out of range for axis 0"
        ):
            run(text, [torch.zeros(4, 8), i])


def test_interp_alias_chunk_errors():
    """The chunk index is range-checked; a dynamic extent must divide into the chunks."""
    dyn = "memref<?x8xf32>"
    part = "memref<?x8xf32, strided<[8, 1], offset: ?>>"
    text = f"""func.func @main(%a: {dyn}, %i: index) {{
  %r = "hir.alias_chunk"(%a, %i) {{axis = 0 : i64, chunks = 2 : i64}} : ({dyn}, index) -> {part}
  return
}}"""
    for i in (2, -1):
        with pytest.raises(
            HirError,
            match=rf"test.mlir:2:8: error: 'hir.alias_chunk' index {i} is out "
            r"of range for 2 chunks of %arg0 \(local shape \[4, 8\]\)",
        ):
            run(text, [torch.zeros(4, 8), i])
    with pytest.raises(
        HirError, match=r"test.mlir:2:8: error: 'hir.alias_chunk' axis 0 of extent 5 does not divide into 2 chunks"
    ):
        run(text, [torch.zeros(5, 8), 0])


def test_interp_unsupported_op():
    text = "func.func @main(%a: f32) -> f32 {\n  %b = arith.addf %a, %a : f32\n  return %b : f32\n}"
    with pytest.raises(
        HirError,
        match=r"test.mlir:2:8: error: 'arith.addf' runs on tensors only \(in "
        r"kernel segments\); host programs compute integers and indices",
    ):
        program(text)


def test_interp_runtime_failure_names_op():
    td = mem([None, 8])
    text = f'func.func @main(%a: {td}, %b: {T}) {{\n  "hir.set"(%a, %b) : ({td}, {T}) -> ()\n  return\n}}'
    with pytest.raises(HirError, match=r"test.mlir:2:3: error: 'hir.set' failed: RuntimeError: .*"):
        run(text, [torch.zeros(3, 8), torch.zeros(4, 8)])


def test_interp_no_entry():
    text = "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}"
    with pytest.raises(HirError, match=r"cannot pick the entry function: 2 public non-kernel functions \(a, b\)"):
        program(text)
    with pytest.raises(HirError, match=r"no function @c"):
        program(text, entry="c")
