"""Compute ops in destination-passing style: each writes into its ``output`` buffer operand
and returns nothing.

    "hir.set"(%in, %out) : (memref<8x64xf32>, memref<8x64xf32>) -> ()
    "hir.binary"(%a, %b, %out) {kind = "add"} : (...) -> ()
    "hir.reduction"(%in, %out) {kind = "sum", axes = array<i64: 1>} : (memref<8x64xf32>, memref<8xf32>) -> ()
    "hir.matmul"(%a, %b, %out) : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
    "hir.matmul"(%a, %b, %acc) {accumulate} : (...) -> ()        // acc += a @ b
    "hir.linear"(%x, %w, %out, %bias) : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>, memref<4xf32>) -> ()

Program-level annotation: ``stream_axis = N : i64`` on a compute op marks axis N of its
output stream-parallel (nvFuser ParallelType::Stream); hir-stream-lowering consumes it.

Kernel segments (nvFuser PostOnStream(HostUnit)) are ``func.call``s of a ``func.func``
carrying the unit attribute ``hir.kernel``; the interpreter runs its body as one unit.
"""

import os
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import (
    DYNAMIC,
    CheckedKeys,
    HirOp,
    check_shape,
    dims_match,
    fmt_shape,
    op_class,
    refuse_uneven,
    required_i64_array,
)
from hir.dialect.checks import (
    check_axis,
    check_same_element_type,
    fail,
    i64_array_attr,
    int_attr,
    memref_type,
    str_attr,
)
from hir.dialect.sharding import sharding_of

KERNEL_ATTR = "hir.kernel"
# A function argument that holds a parameter (module state read, never written, by the
# program: hir.from_torch marks them) and the call of a function computed once per set of
# such arguments (hir-hoist-parameter-work makes it; the interpreter caches its results).
PARAMETER_ATTR = "hir.parameter"
ONCE_ATTR = "hir.once"
# Where an imported module's state lives: the module attribute names a safetensors file
# (relative to the .mlir file's folder), each state argument of the entry the key it reads
# (hir-import, TorchProgram.save; hir-run and hir.run read them, hir.interpreter.weights).
WEIGHTS_FILE_ATTR = "hir.weights"
WEIGHT_KEY_ATTR = "hir.weight"
WEIGHTS_SUFFIX = ".safetensors"


def default_weights_path(output: str) -> str:
    """Where the weights of the module written to ``output`` go by default (hir-import,
    TorchProgram.save): ``model.mlir`` -> ``model.safetensors``."""
    return os.path.splitext(output)[0] + WEIGHTS_SUFFIX


_CHECKED = CheckedKeys()
STREAM_AXIS_ATTR = "stream_axis"
BINARY_KINDS = ("add", "sub", "mul", "div", "max", "min")
REDUCTION_KINDS = ("sum", "prod", "max", "min")


def broadcast_shape(a: list[int], b: list[int], what: str) -> list[int]:
    """NumPy broadcasting of two static-or-dynamic shapes."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == 1:
            out.append(y)
        elif y == 1 or dims_match(x, y):
            out.append(x if x != DYNAMIC else y)
        else:
            fail(f"{what}: shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast")
    return out[::-1]


def matmul_shape(a: list[int], b: list[int]) -> list[int]:
    """torch.matmul's result shape: a 1-D operand is a vector (its axis is contracted and
    dropped), higher ranks are batches of matrices with broadcast batch dimensions."""
    if not a or not b:
        fail(f"operands must have rank >= 1, got {fmt_shape(a)} and {fmt_shape(b)}")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if not dims_match(k_a, k_b):
        fail(f"contraction mismatch: a is {fmt_shape(a)}, b is {fmt_shape(b)} (K {k_a} vs {k_b})")
    if len(a) == 1:
        return [] if len(b) == 1 else b[:-2] + [b[-1]]
    if len(b) == 1:
        return a[:-1]
    batch = broadcast_shape(a[:-2], b[:-2], "batch dimensions")
    return batch + [a[-2], b[-1]]


def reduced_shape(shape: list[int], axes: list[int]) -> list[int]:
    return [d for i, d in enumerate(shape) if i not in axes]


def _rank(value: ir.Value) -> int:
    return ir.MemRefType(value.type).rank


def _right_aligned(out_rank: int, rank: int, k: int) -> int | None:
    """NumPy broadcasting aligns trailing axes."""
    axis = k - (out_rank - rank)
    return axis if axis >= 0 else None


class ComputeOp(HirOp):
    """Shared check: element types agree, the optional stream axis is in range.
    ``operand_axis`` is the op's axis map (which operand axis each output axis reads).
    ``ACCUMULATE_ATTR``: the unit attribute that makes the op add its result to what its
    output holds (``output += ...``, the GEMM epilogue's beta = 1), or None when it has none.
    ``ELEMENTWISE``: each output element reads only the operands' elements at its own index
    (after broadcasting), so recomputing the output costs one pass over the operands."""

    STREAMABLE = True
    ACCUMULATE_ATTR = None  # (no annotation: ext would read it as an attribute field)
    ELEMENTWISE = False

    CHECKED_ATTRS = (STREAM_AXIS_ATTR,)  # every attribute the check reads
    _UNEVEN_REFUSED_PER_KEY = True

    def check(self) -> None:
        # Modules verify after every pass: ops are checked once per distinct (types,
        # attributes) key (with optional operands, their segment sizes say which operand is
        # which), and ops with fixed operands read each operand's type once, by position.
        fixed = not getattr(self, "_ODS_OPERAND_SEGMENTS", None)
        attribute_names = self.CHECKED_ATTRS if fixed else (*self.CHECKED_ATTRS, "operandSegmentSizes")
        key = _CHECKED.key(self, len(self.operation.operands), attribute_names)
        if _CHECKED.passed(self, key):
            return
        if fixed:
            refuse_uneven(self.operation)
            values = self.operation.operands
            self.types = {name: memref_type(values[i].type, name) for name, i in self._positions().items()}
        else:
            refuse_uneven(self.operation)
            self.types = {name: memref_type(getattr(self, name), name) for name in (*self.operand_names, "output")}
        self.out_type = self.types["output"]
        sharding_of(self.out_type, "output")
        for name in self.operand_names:
            operand_type = self.types[name]
            sharding_of(operand_type, name)
            check_same_element_type(operand_type, self.out_type, name, "output")
        axis = int_attr(self, STREAM_AXIS_ATTR, required=False)
        if axis is not None:
            check_axis(axis, self.out_type.rank, STREAM_AXIS_ATTR)
        self.check_compute()
        _CHECKED.record(key)

    operand_names = ()  # operands that must share the output element type

    @classmethod
    def _positions(cls) -> dict[str, int]:
        """Position of each checked operand (``operand_names`` and the output), from the
        declared operand order."""
        found = cls.__dict__.get("_operand_positions")
        if found is None:
            order = [f.name for f in cls._fields if type(f).__name__ == "OperandDef"]
            found = {name: order.index(name) for name in (*cls.operand_names, "output")}
            cls._operand_positions = found
        return found

    def check_compute(self) -> None:  # pragma: no cover - overridden
        pass

    def shape(self, name: str) -> list[int]:
        """The shape of operand ``name`` (read during ``check``)."""
        found = getattr(self, "types", {}).get(name)
        return list((found if found is not None else memref_type(getattr(self, name), name)).shape)


class SetOp(ComputeOp, name="set"):
    """``output.copy_(input)``; a set whose input and output shardings differ is a
    resharding that hir-convert-to-communication lowers."""

    input: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    operand_names = ("input",)
    DESTINATIONS = (1,)

    def check_compute(self) -> None:
        check_shape(self.shape("output"), self.shape("input"), "output")

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        return k

    @classmethod
    def emit(cls, input: ir.Value, output: ir.Value, *, name: str | None = None) -> ir.Operation:
        return cls._create([input, output], name=name)


class BinaryOp(ComputeOp, name="binary"):
    """``output = lhs <kind> rhs`` with NumPy broadcasting to the output shape."""

    lhs: ext.Operand[ir.MemRefType]
    rhs: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    kind: ir.StringAttr
    operand_names = ("lhs", "rhs")
    DESTINATIONS = (2,)
    ELEMENTWISE = True
    CHECKED_ATTRS = ("kind", STREAM_AXIS_ATTR)

    def check_compute(self) -> None:
        str_attr(self, "kind", BINARY_KINDS)
        check_shape(self.shape("output"), broadcast_shape(self.shape("lhs"), self.shape("rhs"), "operands"), "output")

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        if index == 2:
            return k
        return _right_aligned(_rank(op.operands[2]), _rank(op.operands[index]), k)

    @classmethod
    def broadcast_operands(cls) -> bool:
        return True

    @classmethod
    def emit(
        cls, lhs: ir.Value, rhs: ir.Value, output: ir.Value, kind: str, *, name: str | None = None
    ) -> ir.Operation:
        return cls._create([lhs, rhs, output], attributes={"kind": ir.StringAttr.get(kind)}, name=name)


class ReductionOp(ComputeOp, name="reduction"):
    """``output = input.<kind>(axes)`` (the reduced axes are dropped)."""

    input: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    kind: ir.StringAttr
    axes: Any
    operand_names = ("input",)
    DESTINATIONS = (1,)
    INPUT_AXIS_ATTRS = ("axes",)
    CHECKED_ATTRS = ("kind", "axes", STREAM_AXIS_ATTR)

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        if index == 1:
            return k
        reduced = set(required_i64_array(op, "axes"))
        return [i for i in range(_rank(op.operands[0])) if i not in reduced][k]

    @classmethod
    def emit(
        cls, input: ir.Value, output: ir.Value, kind: str, axes: list[int], *, name: str | None = None
    ) -> ir.Operation:
        attrs = {"kind": ir.StringAttr.get(kind), "axes": ir.DenseI64ArrayAttr.get(list(axes))}
        return cls._create([input, output], attributes=attrs, name=name)

    def check_compute(self) -> None:
        str_attr(self, "kind", REDUCTION_KINDS)
        axes = i64_array_attr(self, "axes")
        rank = len(self.shape("input"))
        if not axes:
            fail("axes must not be empty")
        if len(set(axes)) != len(axes):
            fail(f"axes {axes} has duplicates")
        for axis in axes:
            check_axis(axis, rank, "reduction axis")
        check_shape(self.shape("output"), reduced_shape(self.shape("input"), axes), "output")


class MatmulOp(ComputeOp, name="matmul"):
    """``torch.matmul(a, b, out=output)``: vectors, matrices and broadcast batches. With the
    unit attribute ``accumulate``, ``output += a @ b`` (``addmm_`` / ``baddbmm_``: the add is
    the GEMM's epilogue, no separate kernel; hir-p2p-pipeline{accumulate=1} builds these)."""

    a: ext.Operand[ir.MemRefType]
    b: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    operand_names = ("a", "b")
    DESTINATIONS = (2,)
    ACCUMULATE_ATTR = "accumulate"
    CHECKED_ATTRS = (ACCUMULATE_ATTR, STREAM_AXIS_ATTR)

    def check_compute(self) -> None:
        check_shape(self.shape("output"), matmul_shape(self.shape("a"), self.shape("b")), "output")
        attr = (
            self.operation.attributes[self.ACCUMULATE_ATTR]
            if self.ACCUMULATE_ATTR in self.operation.attributes
            else None
        )
        if attr is not None and not isinstance(attr, ir.UnitAttr):
            fail(f"{self.ACCUMULATE_ATTR} must be a unit attribute, got {attr}")

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        if index == 2:
            return k
        batch = _rank(op.operands[2]) - 2
        rank = _rank(op.operands[index])
        if k < batch:
            return _right_aligned(batch, rank - 2, k)
        if k == batch:  # M comes from A
            return rank - 2 if index == 0 else None
        return rank - 1 if index == 1 else None  # N comes from B

    @classmethod
    def broadcast_operands(cls) -> bool:
        return True

    @classmethod
    def emit(
        cls, a: ir.Value, b: ir.Value, output: ir.Value, *, accumulate: bool = False, name: str | None = None
    ) -> ir.Operation:
        return cls._create(
            [a, b, output], attributes={cls.ACCUMULATE_ATTR: ir.UnitAttr.get()} if accumulate else None, name=name
        )


def accumulates(op: ir.Operation) -> bool:
    """Whether ``op`` adds into its output (its class's ``ACCUMULATE_ATTR`` is set on it)."""
    attr = getattr(op_class(op), "ACCUMULATE_ATTR", None)
    return attr is not None and attr in op.attributes


class LinearOp(ComputeOp, name="linear"):
    """``torch.nn.functional.linear(input, weight, bias)`` into ``output``:
    input [..., K], weight [N, K], bias [N] (optional, last operand), output [..., N]; a 1-D
    weight [K] (one output feature, a stream slice of N) gives output [...] and a 0-D bias."""

    input: ext.Operand[ir.MemRefType]
    weight: ext.Operand[ir.MemRefType]
    output: ext.Operand[ir.MemRefType]
    bias: ext.Operand[ir.MemRefType] | None = None
    operand_names = ("input", "weight")
    DESTINATIONS = (2,)

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        if index == 2:
            return k
        last = _rank(op.operands[2]) - 1
        if index == 0:
            return k if k < last else None
        return 0 if k == last else None  # weight [N, K] and bias [N]

    @classmethod
    def emit(
        cls,
        input: ir.Value,
        weight: ir.Value,
        output: ir.Value,
        bias: ir.Value | None = None,
        *,
        name: str | None = None,
    ) -> ir.Operation:
        operands = [input, weight, output] + ([bias] if bias is not None else [])
        segments = ir.DenseI32ArrayAttr.get([1, 1, 1, 1 if bias is not None else 0])
        return cls._create(operands, attributes={"operandSegmentSizes": segments}, name=name)

    def check_compute(self) -> None:
        x, w = self.shape("input"), self.shape("weight")
        if len(x) < 1 or len(w) not in (1, 2):
            fail(f"input must have rank >= 1 and weight rank 1 or 2, got {fmt_shape(x)} and {fmt_shape(w)}")
        if not dims_match(x[-1], w[-1]):
            fail(f"input features {x[-1]} do not match weight {fmt_shape(w)} (expected [N, {x[-1]}])")
        features = w[:1] if len(w) == 2 else []
        check_shape(self.shape("output"), x[:-1] + features, "output")
        if self.bias is not None:
            check_same_element_type(memref_type(self.bias, "bias"), self.out_type, "bias", "output")
            check_shape(self.shape("bias"), features, "bias")
