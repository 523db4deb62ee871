"""``hir.for``: an index loop with a body region; the stream loop of lowered programs.

    "hir.for"(%lb, %ub, %step) ({
    ^bb0(%i: index):
      ...
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
"""


from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, fail


class ForOp(HirOp, name="for"):
    """``for i in range(lb, ub, step)``; ``step`` must be positive at run time."""

    lower_bound: ext.Operand[ir.IndexType]
    upper_bound: ext.Operand[ir.IndexType]
    step: ext.Operand[ir.IndexType]
    body: ext.Region

    def check(self) -> None:
        blocks = self.operation.regions[0].blocks
        if len(blocks) != 1:
            fail(f"body must have exactly one block, has {len(blocks)}")
        block = blocks[0]
        args = block.arguments
        if len(args) != 1 or not isinstance(args[0].type, ir.IndexType):
            fail("body block must have exactly one argument, the index (of type index)")
        ops = block.operations
        count = len(ops)
        if not count or ops[count - 1].operation.name != YieldOp.OPERATION_NAME:
            fail(f"body must end with '{YieldOp.OPERATION_NAME}'")

    @classmethod
    def emit(cls, lower_bound: ir.Value, upper_bound: ir.Value, step: ir.Value, *, name: Optional[str] = None) -> tuple[ir.Operation, ir.Value, ir.Operation]:
        """(loop, induction variable, yield): insert the body before the yield. ``name``
        names the induction variable (``^bb0(%i: index)``)."""
        loop = cls._create([lower_bound, upper_bound, step], regions=1, name=name)
        block = loop.regions[0].blocks.append(ir.IndexType.get(), arg_locs=[loop.location])
        with ir.InsertionPoint(block):
            terminator = YieldOp.emit()
        return loop, block.arguments[0], terminator


class YieldOp(HirOp, name="yield", traits=[ir.IsTerminatorTrait]):
    """Terminates a ``hir.for`` body."""

    def check(self) -> None:
        parent = self.operation.parent
        if parent is None or parent.name != ForOp.OPERATION_NAME:
            fail(f"expects parent op '{ForOp.OPERATION_NAME}', got '{parent.name if parent else None}'")

    @classmethod
    def emit(cls, *, name: Optional[str] = None) -> ir.Operation:
        return cls._create(name=name)
