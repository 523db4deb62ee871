"""Building a program's plan is linear in the module's size (issue 34): value names come
from one ``ir.AsmState`` (``Value.get_name()`` without one numbers and verifies the
enclosing function on every call: 50.9 s on a 1B Llama decode module), and nothing is
verified while the plan is built. Work is bounded by COUNTING Python calls, not by timing;
and a compiled program builds its plan once, never per call."""

import sys
from collections import Counter

import pytest
import torch

import hir
from hir.interpreter import Program, generated
from hir.interpreter import plan as plan_module

T = "memref<4x8xf32>"


def chain(groups: int) -> str:
    """``@main``: ``groups`` x (alloc, hir.binary, alloc, call of a relu kernel segment,
    dealloc): five ops per group, every call inlined into the plan."""
    lines = [f"func.func @main(%x: {T}) -> {T} {{"]
    prev = "%x"
    for i in range(groups):
        lines += [
            f"  %a{i} = memref.alloc() : {T}",
            f'  "hir.binary"({prev}, %x, %a{i}) {{kind = "add"}} : ({T}, {T}, {T}) -> ()',
            f"  %b{i} = memref.alloc() : {T}",
            f"  call @seg(%a{i}, %b{i}) : ({T}, {T}) -> ()",
            f"  memref.dealloc %a{i} : {T}",
        ]
        prev = f"%b{i}"
    lines += [
        f"  return {prev} : {T}",
        "}",
        f"func.func private @seg(%arg0: {T}, %arg1: {T}) attributes {{hir.kernel}} {{",
        f"  %0 = bufferization.to_tensor %arg0 restrict : {T} to tensor<4x8xf32>",
        "  %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>",
        "  %2 = torch.aten.relu %1 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[4,8],f32>",
        "  %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,8],f32> to tensor<4x8xf32>",
        f"  bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4x8xf32>, {T}) -> ()",
        "  return",
        "}",
    ]
    return "\n".join(lines)


def build_calls(module) -> Counter:
    """Python function calls made while ``Program(module)`` builds its plan, by function
    name, with the total under ``"*"``."""
    calls: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call":
            calls[frame.f_code.co_name] += 1
            calls["*"] += 1

    sys.setprofile(profile)
    try:
        Program(module, device="cpu", graph=False, compile_kernels=False)
    finally:
        sys.setprofile(None)
    return calls


def test_plan_building_is_linear_in_module_size():
    small, large = hir.parse(chain(400)), hir.parse(chain(800))  # 2,000 and 4,000 ops in @main
    a, b = build_calls(small), build_calls(large)
    # names from one AsmState: the module is verified at most once (its 1,200 / 2,400 hir
    # ops: one hook call each), not once per operand (~1.6 million calls here)
    assert a["_verify_invariants"] <= 400 * 3 and b["_verify_invariants"] <= 800 * 3, (
        a["_verify_invariants"],
        b["_verify_invariants"],
    )
    # doubling the module at most doubles the work (a quadratic builder quadruples it) ...
    assert b["*"] <= 2.1 * a["*"], (a["*"], b["*"])
    # ... and each op costs a bounded number of calls
    assert b["*"] <= 150 * 5 * 800, b["*"]


def test_a_failing_op_is_still_named_with_its_operands():
    """The names an error reports come from the shared AsmState."""
    module = hir.parse(
        chain(3).replace("  memref.dealloc %a1", "  memref.dealloc %a1 : memref<4x8xf32>\n  memref.dealloc %a1")
    )
    with pytest.raises(hir.HirError, match=r"'memref.dealloc' buffer %alloc_1 is already deallocated"):
        Program(module, device="cpu")([torch.randn(4, 8)])


def test_compiled_program_builds_its_plan_once(monkeypatch):
    """One plan per compiled program, whatever the number of calls; ``TorchProgram.run`` is
    the one-shot path (a plan per call)."""
    builds = Counter()
    original = plan_module.Compiler.function

    def counted(self, name, at=None):
        if at is None:  # an entry function's plan (callees are compiled within it)
            builds[name] += 1
        return original(self, name, at)

    monkeypatch.setattr(plan_module.Compiler, "function", counted)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    program = hir.from_torch(model, (x,))
    fn = program.compile(program.state(model), device="cpu")
    assert builds["main"] == 1
    for _ in range(5):
        y = fn(torch.randn(8, 16))
    y = fn(x)
    torch.testing.assert_close(y, model(x))
    assert builds["main"] == 1
    program.run(model.state_dict(), x, device="cpu")
    assert builds["main"] == 2


def test_steps_compile_once_per_template():
    """Generated steps are compiled once per template (their slots and globals abstracted),
    not once per op and again per fold: a module twice as long compiles no more code, and
    runs as its ops say."""
    counts = []
    for groups in (40, 80):
        generated._template.cache_clear()
        program = Program(hir.parse(chain(groups)), device="cpu", graph=False, compile_kernels=False)
        counts.append(generated._template.cache_info().misses)
        x = torch.randn(4, 8)
        expected = x
        for _ in range(groups):
            expected = torch.relu(expected + x)
        torch.testing.assert_close(program([x])[0], expected)
    assert counts[0] == counts[1] <= 8, counts


def test_from_torch_lowering_verifies_once():
    """``TorchProgram.lower`` verifies the module once, after its last pass, not after each
    of its passes (the hir ops' verify hooks run once per op per verification)."""
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])
    program = hir.from_torch(model, (torch.randn(2, 8),))
    calls: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_verify_invariants":
            calls["verify"] += 1

    sys.setprofile(profile)
    try:
        program.lower()
    finally:
        sys.setprofile(None)
    hir_ops = str(program.module).count('"hir.')  # (generic form: each hir op prints its quoted name)
    assert 0 < calls["verify"] <= hir_ops, (calls["verify"], hir_ops)
