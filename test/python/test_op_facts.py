"""Op facts are declared once, on the op classes, and read from there: the name -> class map,
the facts passes and the interpreter read, the fast builders (``emit``, with an optional name
location) and the interpreter's handler registry (by op class and by name prefix)."""

import inspect

import pytest
import torch
from torch_mlir import ir
from torch_mlir.dialects import arith

import hir
from hir import dialect
from hir.dialect import OP_CLASSES, AliasSelectOp, ForOp, ShiftOp, is_view, op_class
from hir.interpreter import Program
from hir.interpreter.registry import HANDLERS, impl, impl_prefix, lookup, register_impls


def test_every_op_has_a_class_and_a_handler():
    assert len(OP_CLASSES) == len(dialect.HirDialect.operations) == 33
    assert all(name.startswith("hir.") for name in OP_CLASSES)
    missing = [name for name in OP_CLASSES if lookup(name) is None and name != dialect.YieldOp.OPERATION_NAME]
    assert not missing  # hir.yield is a terminator the compiler consumes


def test_facts():
    assert dialect.MatmulOp.DESTINATIONS == (2,) and dialect.SetOp.DESTINATIONS == (1,)
    assert dialect.RecvOp.DESTINATIONS == (0,) and dialect.SendOp.DESTINATIONS == ()
    assert all(cls.DESTINATIONS == (1,) and cls.TEAM_ATTR == "team" for cls in dialect.COLLECTIVE_OPS)
    assert ShiftOp.TEAM_ATTR == dialect.BarrierOp.TEAM_ATTR == "team" and dialect.SendOp.TEAM_ATTR == ""
    assert (
        AliasSelectOp.IS_VIEW
        and dialect.AliasChunkOp.IS_VIEW
        and dialect.AliasBroadcastOp.IS_VIEW
        and dialect.AliasReshapeOp.IS_VIEW
        and dialect.AliasStackShardsOp.IS_VIEW
        and not dialect.SetOp.IS_VIEW
    )
    assert dialect.GetStreamOp.CHOOSES_STREAM and not dialect.SynchronizeOp.CHOOSES_STREAM
    assert dialect.AllgatherOp.PEER_AXIS_ATTR == "axis" and dialect.ReduceScatterOp.PEER_AXIS_ATTR == "scatter_axis"
    assert {name for name, cls in OP_CLASSES.items() if cls.PEER_AXIS_ATTR} == {
        dialect.AllgatherOp.OPERATION_NAME,
        dialect.ReduceScatterOp.OPERATION_NAME,
    }
    assert {name for name, cls in OP_CLASSES.items() if cls.STREAMABLE} == {
        cls.OPERATION_NAME
        for cls in (
            *dialect.COLLECTIVE_OPS,
            dialect.SetOp,
            dialect.BinaryOp,
            dialect.ReductionOp,
            dialect.MatmulOp,
            dialect.LinearOp,
        )
    }


def test_every_op_has_a_fast_builder_taking_a_name():
    for cls in OP_CLASSES.values():
        assert "name" in inspect.signature(cls.emit).parameters, cls.OPERATION_NAME


def test_emit_builds_verified_ops_with_name_locations(ctx):
    module = hir.parse("func.func @main(%buf: memref<4x8xf32>) {\n  return\n}", context=ctx)
    func = module.body.operations[0]
    block = func.regions[0].blocks[0]
    with ir.InsertionPoint(block.operations[0]), ir.Location.file("prog.mlir", 3, 5):
        zero = arith.ConstantOp(ir.IndexType.get(), 0).result
        four = arith.ConstantOp(ir.IndexType.get(), 4).result
        one = arith.ConstantOp(ir.IndexType.get(), 1).result
        loop, iv, end = ForOp.emit(zero, four, one)
        with ir.InsertionPoint(end):
            row = AliasSelectOp.emit(block.arguments[0], iv, 0, name="row")
    module.operation.verify()
    assert op_class(loop) is ForOp and is_view(row.owner)
    assert str(row.type) == "memref<8xf32, strided<[1], offset: ?>>"
    assert str(row.owner.location) == 'loc("row"("prog.mlir":3:5))'
    assert str(loop.location) == 'loc("prog.mlir":3:5)'


def test_registry_exact_before_prefix_and_no_twice():
    @register_impls
    class Family:
        @impl_prefix("test.family.")
        def any_member(self, c, op):
            return None

        @impl_prefix("test.family.special.")
        def special(self, c, op):
            return None

    assert lookup("test.family.x").fn.__name__ == "any_member"
    assert lookup("test.family.special.y").fn.__name__ == "special"  # the longest prefix
    assert lookup("test.other") is None
    assert lookup(arith.AddIOp.OPERATION_NAME).fn.__name__ == "binary"  # exact handlers win
    with pytest.raises(ValueError, match="registered twice"):
        impl(arith.AddIOp)(lambda c, op: None)
    assert HANDLERS[arith.AddIOp.OPERATION_NAME].fn.__name__ == "binary"


def test_prefix_family_handler_runs_at_compile_time():
    @impl_prefix("test.scale.")
    def scale(c, op):  # a module-level handler: registered at once, same contract
        src, dst = c.uses(op)
        factor = float(op.operation.name.rsplit(".", 1)[1].replace("x", ""))

        def scale_step(env: list) -> None:
            torch.mul(env[src], factor, out=env[dst])

        return scale_step

    ctx = hir.new_context()
    ctx.allow_unregistered_dialects = True
    text = (
        "func.func @main(%a: memref<4xf32>, %b: memref<4xf32>) {\n  "
        '"test.scale.x3"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()\n  return\n}'
    )
    a, b = torch.arange(4.0), torch.zeros(4)
    Program(hir.parse(text, context=ctx), device="cpu")([a, b])
    assert torch.equal(b, 3 * a)
