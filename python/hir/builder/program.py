"""The program-level half of :class:`hir.builder.Builder`: scaffolding (function, inputs,
outputs, allocation) and the compute ops on whole buffers, with stream-parallel axes and
device-mesh shardings. Every op is located at the Python line that built it, so verifier and
run-time errors read ``my_program.py:12:9: error: ...``."""

import numbers
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union

from torch_mlir import ir
from torch_mlir.dialects import arith, func, memref

from hir.builder.shardings import broadcast_sizes, elementwise_sharding, matmul_sharding, reduced_sharding
from hir.core import HirError, format_location, format_mlir_error, new_context
from hir.dialect import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp, Sharding, sharding_of
from hir.dialect.base import DYNAMIC
from hir.dialect.compute import STREAM_AXIS_ATTR, broadcast_shape, matmul_shape

if TYPE_CHECKING:
    import torch

_BUILDER_DIR = os.path.dirname(os.path.abspath(__file__))


def caller_location(context: ir.Context) -> ir.Location:
    """``file:line:col`` of the first Python frame outside the builder (and contextlib), so
    a verifier or run-time error names the line of the user's program that built the op."""
    frame = sys._getframe(1)
    while frame is not None and (
        os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _BUILDER_DIR
        or frame.f_code.co_filename.endswith("contextlib.py")
    ):
        frame = frame.f_back
    if frame is None:  # pragma: no cover - the builder is always called from somewhere
        return ir.Location.unknown(context)
    line, col = frame.f_lineno, 1
    positions = list(getattr(frame.f_code, "co_positions", list)())  # Python 3.11+: columns too
    if 0 <= frame.f_lasti // 2 < len(positions) and positions[frame.f_lasti // 2][2] is not None:
        line, col = positions[frame.f_lasti // 2][0] or line, positions[frame.f_lasti // 2][2] + 1
    return ir.Location.file(frame.f_code.co_filename, line, col, context=context)


DTYPES = {
    "f32": ir.F32Type.get,
    "f16": ir.F16Type.get,
    "bf16": ir.BF16Type.get,
    "f64": ir.F64Type.get,
    "i32": lambda: ir.IntegerType.get_signless(32),
    "i64": lambda: ir.IntegerType.get_signless(64),
}
# torch dtypes by name (str(torch.float32) == "torch.float32"): the builder takes them
# without importing torch.
TORCH_DTYPES = {
    "torch.float32": "f32",
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float64": "f64",
    "torch.int32": "i32",
    "torch.int64": "i64",
}


def Shard(mesh: Sequence[int], axis: int | None = None) -> Sharding:
    """Placement on a 1-D device mesh, split along ``axis`` (None: replicated)."""
    return Sharding(tuple(mesh), axis)


Dim = int | None  # None: a dynamic extent
# An element type: "f32", "f16", "bf16", "f64", "i32", "i64", the torch dtype of one, or an MLIR type
DType = Union[str, "torch.dtype", ir.Type]
# A compute op's output placement: "same" (the default) infers it from the operands, as each
# method says; a Sharding places it; None leaves it unplaced.
Placement = Literal["same"] | Sharding | None


@dataclass
class Tensor:
    """A buffer being built: its SSA value and one index value or int per dimension."""

    value: ir.Value
    sizes: list  # int (static) or ir.Value (index) per dimension

    @property
    def type(self) -> ir.MemRefType:
        return ir.MemRefType(self.value.type)

    @property
    def shape(self) -> list[Dim]:
        return [None if d == DYNAMIC else d for d in self.type.shape]

    @property
    def sharding(self) -> Sharding | None:
        return sharding_of(self.type)


class ProgramBuilder:
    """Builds one ``func.func`` (default ``@main``) in a fresh module and context."""

    def __init__(self, name: str = "main", context: ir.Context | None = None) -> None:
        self.context = context or new_context()
        self._loc = caller_location(self.context)
        self.name = name
        self._inputs: list[ir.Type] = []
        self._outputs: list[Tensor] = []
        self._finished_at: str | None = None  # where finish() was called
        with self.context, self._loc:
            self.module = ir.Module.create()
            # The signature grows as inputs and outputs are added (see _sync_signature).
            self._func = func.FuncOp(name, ir.FunctionType.get([], []), ip=ir.InsertionPoint(self.module.body))
            self._block = self._func.add_entry_block()
            self._ip = ir.InsertionPoint(self._block)

    # -- scaffolding ---------------------------------------------------------------------

    @contextmanager
    def _at(self) -> Iterator[None]:
        """Build at the caller's line; a check failing there (an operand shape, an
        attribute: a ``VerifyError``) is an :class:`HirError` located at that line."""
        loc = caller_location(self.context)
        if self._finished_at is not None:
            raise HirError(
                f"{format_location(loc)}: error: this Builder's module was finished at {self._finished_at}; "
                "build another program with a new Builder"
            )
        try:
            with self.context, loc, self._ip:
                yield
        except HirError:
            raise
        except ValueError as err:
            raise HirError(f"{format_location(loc)}: error: {err}") from None

    def index(self, value: int) -> ir.Value:
        """An ``index`` constant."""
        with self._at():
            return arith.ConstantOp(ir.IndexType.get(), value).result

    def _index(self, value: int | ir.Value, what: str) -> ir.Value:
        """``value`` as an ``index`` value: an int becomes a constant."""
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return self.index(int(value))
        if isinstance(value, ir.Value) and isinstance(value.type, ir.IndexType):
            return value
        with self._at():
            got = (
                f"a value of type {value.type}" if isinstance(value, ir.Value) else f"{type(value).__name__} {value!r}"
            )
            raise ValueError(f"{what} must be an int or an index value, got {got}")

    def _mem_type(self, shape: Sequence[Dim], dtype: DType, sharding: Sharding | None) -> ir.MemRefType:
        dtype = TORCH_DTYPES.get(str(dtype), dtype) if type(dtype).__module__ == "torch" else dtype
        if not isinstance(dtype, ir.Type) and not (isinstance(dtype, str) and dtype in DTYPES):
            raise ValueError(
                f"dtype must be one of {', '.join(DTYPES)}, a torch dtype of those or an MLIR type, got {dtype!r}"
            )
        if any(
            not (d is None or (isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 0)) for d in shape
        ):
            raise ValueError(f"a shape holds ints >= 0 and None (a dynamic extent), got {list(shape)}")
        element = DTYPES[dtype]() if isinstance(dtype, str) else dtype
        dims = [DYNAMIC if d is None else int(d) for d in shape]
        return ir.MemRefType.get(dims, element, memory_space=sharding.attr() if sharding else None)

    # -- program inputs and outputs ------------------------------------------------------
    def input(self, shape: Sequence[Dim], dtype: DType = "f32", sharding: Sharding | None = None) -> Tensor:
        """A program input with global ``shape`` (None = dynamic) placed by ``sharding``;
        ``dtype``: ``"f32"``, ``"f16"``, ``"bf16"``, ``"f64"``, ``"i32"``, ``"i64"``, the
        torch dtype of one of those (``torch.float32``) or an MLIR type."""
        with self._at():
            t = self._mem_type(shape, dtype, sharding)
            arg = self._block.add_argument(t, ir.Location.current)
            self._inputs.append(t)
            self._sync_signature()
            sizes = []
            for axis, d in enumerate(shape):
                if d is None:
                    # A dynamic extent is read once, where the input is declared.
                    c = arith.ConstantOp(ir.IndexType.get(), axis).result
                    sizes.append(memref.DimOp(arg, c).result)
                else:
                    sizes.append(d)
            return Tensor(arg, sizes)

    def output(self, tensor: Tensor) -> None:
        """Return ``tensor`` from the program."""
        self._outputs.append(tensor)

    def _sync_signature(self) -> None:
        results = [o.value.type for o in self._outputs]
        self._func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(self._inputs, results))

    def finish(self) -> ir.Module:
        """Add the return, verify and return the module. A builder finishes once: building
        on it afterwards (finish() again included) is an error."""
        with self._at():
            func.ReturnOp([o.value for o in self._outputs])
            self._sync_signature()
        self._finished_at = format_location(caller_location(self.context))
        try:
            self.module.operation.verify()
        except ir.MLIRError as err:
            raise HirError(format_mlir_error(err, f"<builder {self.name}>")) from None
        return self.module

    # -- allocation ----------------------------------------------------------------------
    def alloc(self, sizes: Sequence[int | ir.Value], dtype: DType = "f32", sharding: Sharding | None = None) -> Tensor:
        """``memref.alloc``; a size given as an index value makes that dimension dynamic."""
        with self._at():
            bad = [
                d
                for d in sizes
                if not (isinstance(d, int) or (isinstance(d, ir.Value) and isinstance(d.type, ir.IndexType)))
            ]
            if bad:
                got = (
                    f"a value of type {bad[0].type}"
                    if isinstance(bad[0], ir.Value)
                    else f"{type(bad[0]).__name__} {bad[0]!r}"
                )
                raise ValueError(f"alloc: a size must be an int or an index value, got {got}")
            shape = [d if isinstance(d, int) else None for d in sizes]
            t = self._mem_type(shape, dtype, sharding)
            dynamic = [d for d in sizes if not isinstance(d, int)]
            return Tensor(memref.AllocOp(t, dynamic, []).result, list(sizes))

    def dealloc(self, tensor: Tensor) -> None:
        """``memref.dealloc``: free a buffer from :meth:`alloc`."""
        with self._at():
            memref.DeallocOp(tensor.value)

    # -- program-level compute ops -------------------------------------------------------
    def _annotate(self, op: ir.OpView, stream_axis: int | None) -> None:
        if stream_axis is not None:
            op.operation.attributes[STREAM_AXIS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), stream_axis)

    def set(
        self, x: Tensor, *, sharding: Placement = "same", stream_axis: int | None = None, out: Tensor | None = None
    ) -> Tensor:
        """A copy of ``x``; a different ``sharding`` makes it a resharding (communication)."""
        out = out or self.alloc(x.sizes, x.type.element_type, x.sharding if sharding == "same" else sharding)
        with self._at():
            self._annotate(SetOp(x.value, out.value), stream_axis)
        return out

    def binary(
        self,
        kind: str,
        lhs: Tensor,
        rhs: Tensor,
        *,
        sharding: Placement = "same",
        stream_axis: int | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Elementwise ``kind`` (add, sub, mul, div, max, min) with broadcasting. By default
        the output is split like the first split operand (axes right-aligned), else
        replicated on an operand's mesh, else unplaced."""
        with self._at():
            shape = broadcast_shape(list(lhs.type.shape), list(rhs.type.shape), "operands")
        sizes = broadcast_sizes(lhs.sizes, rhs.sizes, shape)
        if sharding == "same":
            sharding = elementwise_sharding([(x.sharding, len(x.sizes)) for x in (lhs, rhs)], len(shape))
        out = out or self.alloc(sizes, lhs.type.element_type, sharding)
        with self._at():
            self._annotate(BinaryOp(lhs.value, rhs.value, out.value, ir.StringAttr.get(kind)), stream_axis)
        return out

    def add(self, lhs: Tensor, rhs: Tensor, **kw: Any) -> Tensor:
        """``lhs + rhs``: :meth:`binary` ``"add"`` (same keywords)."""
        return self.binary("add", lhs, rhs, **kw)

    def sub(self, lhs: Tensor, rhs: Tensor, **kw: Any) -> Tensor:
        """``lhs - rhs``: :meth:`binary` ``"sub"`` (same keywords)."""
        return self.binary("sub", lhs, rhs, **kw)

    def mul(self, lhs: Tensor, rhs: Tensor, **kw: Any) -> Tensor:
        """``lhs * rhs``: :meth:`binary` ``"mul"`` (same keywords)."""
        return self.binary("mul", lhs, rhs, **kw)

    def div(self, lhs: Tensor, rhs: Tensor, **kw: Any) -> Tensor:
        """``lhs / rhs``: :meth:`binary` ``"div"`` (same keywords)."""
        return self.binary("div", lhs, rhs, **kw)

    def reduction(
        self,
        kind: str,
        x: Tensor,
        axes: Sequence[int],
        *,
        sharding: Placement = "same",
        stream_axis: int | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """``x.<kind>(axes)`` (sum, prod, max, min); the reduced axes are dropped. By
        default the output keeps ``x``'s mesh: split along the same (shifted) axis, or
        replicated when a split axis is reduced (that reduction is a communication)."""
        with self._at():
            bad = [a for a in axes if not -len(x.sizes) <= a < len(x.sizes)]
            if bad:
                raise ValueError(f"{kind}: axis {bad[0]} is out of range for rank {len(x.sizes)}")
        axes = [a % len(x.sizes) for a in axes]
        if sharding == "same":
            sharding = reduced_sharding(x.sharding, axes)
        sizes = [d for i, d in enumerate(x.sizes) if i not in axes]
        out = out or self.alloc(sizes, x.type.element_type, sharding)
        with self._at():
            op = ReductionOp(x.value, out.value, ir.StringAttr.get(kind), ir.DenseI64ArrayAttr.get(list(axes)))
            self._annotate(op, stream_axis)
        return out

    def sum(self, x: Tensor, axes: Sequence[int], **kw: Any) -> Tensor:
        """``x.sum(axes)``: :meth:`reduction` ``"sum"`` (same keywords)."""
        return self.reduction("sum", x, axes, **kw)

    def max(self, x: Tensor, axes: Sequence[int], **kw: Any) -> Tensor:
        """``x.amax(axes)``: :meth:`reduction` ``"max"`` (same keywords)."""
        return self.reduction("max", x, axes, **kw)

    def min(self, x: Tensor, axes: Sequence[int], **kw: Any) -> Tensor:
        """``x.amin(axes)``: :meth:`reduction` ``"min"`` (same keywords)."""
        return self.reduction("min", x, axes, **kw)

    def matmul(
        self,
        a: Tensor,
        b: Tensor,
        *,
        sharding: Placement = "same",
        stream_axis: int | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """``torch.matmul(a, b)``: a 1-D operand is a vector (``[M, K] @ [K]`` is ``[M]``,
        ``[K] @ [K, N]`` is ``[N]``, ``[K] @ [K]`` a scalar), higher ranks batches of
        matrices. By default the output keeps ``a``'s split of a batch or M axis, or ``b``'s
        split of N; otherwise it is replicated on the mesh of ``a`` (else ``b``), or unplaced
        when neither has one (pass ``sharding`` to choose)."""
        with self._at():
            shape = matmul_shape(list(a.type.shape), list(b.type.shape))
        if len(a.sizes) == 1:
            sizes = [] if len(b.sizes) == 1 else list(b.sizes[:-2]) + [b.sizes[-1]]
        elif len(b.sizes) == 1:
            sizes = list(a.sizes[:-1])
        else:
            sizes = broadcast_sizes(a.sizes[:-2], b.sizes[:-2], shape[:-2]) + [a.sizes[-2], b.sizes[-1]]
        if sharding == "same":
            sharding = matmul_sharding(a.sharding, len(a.sizes), b.sharding, len(b.sizes), len(sizes))
        out = out or self.alloc(sizes, a.type.element_type, sharding)
        with self._at():
            self._annotate(MatmulOp(a.value, b.value, out.value), stream_axis)
        return out

    def linear(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        *,
        sharding: Placement = "same",
        stream_axis: int | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """``torch.nn.functional.linear(x, weight, bias)``: x [..., K], weight [N, K]. The
        output's default placement follows :meth:`matmul` (weight's N is its axis 0)."""
        sizes = list(x.sizes[:-1]) + [weight.sizes[0]]
        if sharding == "same":
            w = weight.sharding
            n_axis = (1 - w.axis if len(weight.sizes) == 2 else 0) if w is not None and w.axis is not None else None
            w_as_b = None if w is None else Sharding(w.mesh, n_axis)
            sharding = matmul_sharding(x.sharding, len(x.sizes), w_as_b, 2, len(sizes))
        out = out or self.alloc(sizes, x.type.element_type, sharding)
        with self._at():
            op = LinearOp(x.value, weight.value, out.value, bias=bias.value if bias else None)
            self._annotate(op, stream_axis)
        return out
