"""The builder's host scalars and structured control flow (mixed into
:class:`hir.builder.Builder`): ``scalar`` (an ``i1`` / index / integer / float program input),
``fill`` (upstream ``linalg.fill`` of a buffer with a scalar) and ``if_`` (``scf.if``).

    flag = b.scalar("i1")                            # called with True / False
    with b.if_(flag) as branch:
        b.set(x, out=y)
        with branch.otherwise():
            b.fill(y, 0.0)
"""

from __future__ import annotations  # Tensor is named for type checking only

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, scf

if TYPE_CHECKING:  # what the mixin uses of the Builder it is mixed into
    from hir.builder.program import ProgramBuilder as _Builder
    from hir.builder.program import Tensor
else:
    _Builder = object

SCALARS = {
    "i1": lambda: ir.IntegerType.get_signless(1),
    "index": ir.IndexType.get,
    "i64": lambda: ir.IntegerType.get_signless(64),
    "f32": ir.F32Type.get,
    "f64": ir.F64Type.get,
}


class Branch:
    """The scf.if being built: ``otherwise()`` puts ops in its else region."""

    def __init__(self, builder: ControlBuilder, op: scf.IfOp) -> None:
        self._builder, self._op = builder, op

    @contextmanager
    def otherwise(self) -> Iterator[None]:
        else_block = self._op.else_block
        assert else_block is not None  # if_ builds every scf.if with an else region
        with self._builder._inside(else_block):
            yield


class ControlBuilder(_Builder):
    """Builder methods for scalars and control flow; needs the Builder's ``_at``, ``_ip``,
    ``_block``, ``_inputs`` and ``_sync_signature``."""

    def scalar(self, dtype: str = "index") -> ir.Value:
        """A host scalar program input (``i1`` takes Python True / False)."""
        with self._at():
            t = SCALARS[dtype]()
            arg = self._block.add_argument(t, ir.Location.current)
            self._inputs.append(t)
            self._sync_signature()
            return arg

    def fill(self, x: Tensor, value: int | float | ir.Value) -> None:
        """``linalg.fill``: every element of ``x`` set to ``value`` (a number, or a host
        scalar value of ``x``'s element type)."""
        with self._at():
            if not isinstance(value, ir.Value):
                element = x.type.element_type
                number = (
                    float(value)
                    if isinstance(element, (ir.F32Type, ir.F64Type, ir.F16Type, ir.BF16Type))
                    else int(value)
                )
                value = arith.ConstantOp(element, number).result  # a FloatAttr / IntegerAttr of that type
            linalg.fill(value, outs=[x.value])

    @contextmanager
    def if_(self, condition: ir.Value) -> Iterator[Branch]:
        """``with b.if_(flag) as branch:`` builds an ``scf.if``; ops inside go in its then
        region, ops inside ``with branch.otherwise():`` in its else region."""
        with self._at():
            op = scf.IfOp(condition, [], has_else=True)
        with self._inside(op.then_block):
            yield Branch(self, op)

    @contextmanager
    def _inside(self, block: ir.Block) -> Iterator[None]:
        """Build into ``block`` (ended by an scf.yield) for the duration."""
        saved = self._ip
        if not list(block.operations):
            self._ip = ir.InsertionPoint(block)
            with self._at():
                scf.YieldOp([])
        self._ip = ir.InsertionPoint.at_block_terminator(block)
        try:
            yield
        finally:
            self._ip = saved
