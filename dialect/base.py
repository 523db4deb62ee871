"""Dialect object, types (``!hir.stream``, ``!hir.work``), the sharding attribute and
the verifier base class shared by every hir op.

Sharding lives in exactly one place: the memory space of a buffer's memref type,
``memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>`` = a global 16x8 buffer on
the 1-D device mesh {0,1,2,3}, split along axis 0 (nvFuser's DIDx); axis -1 means replicated
on the mesh. :mod:`hir.dialect.sharding` reads it (1-D and multi-dimensional meshes).
"""

import sys
import types
from array import array
from collections.abc import Sequence
from typing import Any

# Without a module at this name every wrap of an hir op tries an import (~24 us each).
_STUB = "torch_mlir.dialects.hir"
sys.modules.setdefault(_STUB, types.ModuleType(_STUB))

from hir.dialect._lazy_numpy import import_ir  # noqa: E402

import_ir()  # torch_mlir.ir without numpy; the import below finds it loaded
from torch_mlir import ir  # noqa: E402

# The torch dialect's registration hook alone: its Python op classes (torch_mlir.dialects.torch,
# ~75 ms to import) load on the first wrap of a torch op, as any upstream dialect's do.
from torch_mlir._mlir_libs._torchMlir import register_dialect as _register_torch_dialect  # noqa: E402
from torch_mlir.dialects import ext  # noqa: E402

from hir.dialect.checks import VerifyError, fail, i64_value  # noqa: E402

DYNAMIC = ir.ShapedType.get_dynamic_size()


class HirDialect(ext.Dialect, name="hir"):
    """The host IR dialect."""


class StreamType(HirDialect.Type, name="stream"):
    """A CUDA stream (sequential order on CPU)."""


class WorkType(HirDialect.Type, name="work"):
    """An in-flight communication; consumed by ``hir.wait``."""


class ShardAttr(HirDialect.Attribute, name="shard"):
    """``#hir.shard<array<i64: devices...>, axis : i64>`` (1-D mesh) or ``#hir.shard<dense<...> :
    tensor<AxBxi64>, array<i64: split per mesh axis>>``, used as a memref memory space; read
    and written by :mod:`hir.dialect.sharding`."""

    mesh: Any
    axis: Any


def load(context: ir.Context | None = None) -> ir.Context:
    """Load hir (and the upstream dialects hir programs use) into ``context``
    (default: the current one). Safe to call repeatedly."""
    ctx = context or ir.Context.current
    if ctx is None:
        raise ValueError("hir.dialect.load: no MLIR context (pass one, or call it inside `with ir.Context():`)")
    if not ctx.is_dialect_loaded(HirDialect.DIALECT_NAMESPACE):
        with ctx:
            HirDialect.load()
        # Kernel segments may hold torch-mlir's `torch` dialect ops (imported PyTorch code).
        _register_torch_dialect(ctx)
    return ctx


def i64_elements(flat: Sequence[int], shape: Sequence[int]) -> ir.DenseIntElementsAttr:
    """``dense<...> : tensor<shape x i64>`` from row-major ``flat`` values (through the buffer
    protocol: no numpy on the dialect's import path)."""
    tensor_type = ir.RankedTensorType.get(list(shape), ir.IntegerType.get_signless(64), loc=ir.Location.unknown())
    data = memoryview(array("q", [int(v) for v in flat])).cast("B").cast("q", list(shape))
    return ir.DenseIntElementsAttr.get(data, type=tensor_type)


def get_int(op: Any, name: str) -> int | None:
    """Integer attribute ``name`` of ``op`` (an Operation or OpView of verified IR), None
    when absent: the attribute reader of passes and the interpreter (``required_int`` where
    the op's verifier requires the attribute)."""
    attrs = op.operation.attributes
    return ir.IntegerAttr(attrs[name]).value if name in attrs else None


def get_str(op: Any, name: str) -> str | None:
    attrs = op.operation.attributes
    return ir.StringAttr(attrs[name]).value if name in attrs else None


def get_i64_array(op: Any, name: str) -> list[int] | None:
    attrs = op.operation.attributes
    return list(ir.DenseI64ArrayAttr(attrs[name])) if name in attrs else None


# The attributes an op's verifier requires, read from verified IR (which has them).
def required_int(op: Any, name: str) -> int:
    return ir.IntegerAttr(op.operation.attributes[name]).value


def required_str(op: Any, name: str) -> str:
    return ir.StringAttr(op.operation.attributes[name]).value


def required_i64_array(op: Any, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.operation.attributes[name]))


def i64_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def dims_match(a: int, b: int) -> bool:
    """Static extents must agree; a dynamic extent matches anything (checked at run time)."""
    return a == b or a == DYNAMIC or b == DYNAMIC


def check_shape(actual: Sequence[int], expected: Sequence[int], what: str) -> None:
    if len(actual) != len(expected) or not all(dims_match(a, e) for a, e in zip(actual, expected)):
        fail(f"{what} has shape {fmt_shape(actual)}, expected {fmt_shape(expected)}")


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in shape) + "]"


class _TypeCache:
    """An hir type of the current context, built once per context (``ir.Type.parse`` costs
    microseconds; passes build thousands of ops)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._context: ir.Context | None = None
        self._type: ir.Type | None = None

    def __call__(self) -> ir.Type:
        ctx = ir.Context.current
        if ctx is not self._context or self._type is None:
            self._context, self._type = ctx, ir.Type.parse(self.text)
        return self._type


stream_type = _TypeCache("!hir.stream")
work_type = _TypeCache("!hir.work")


class CheckedKeys:
    """Keys of ops whose type-level check passed (operand types, result types and the named
    attributes: all uniqued in MLIR, so equal keys pass alike), for one MLIR context at a
    time. A lowered module holds thousands of equal slices and compute ops and verifies after
    every pass; each distinct key is checked once per context. Holds that one context alive
    until another context verifies."""

    def __init__(self) -> None:
        self.context: ir.Context | None = None
        self.keys: set = set()

    @staticmethod
    def key(op: Any, operands: int, attribute_names: tuple) -> tuple:
        """The first ``operands`` operand types, every result type and the named attributes."""
        # Built in a list, operands iterated rather than indexed: verification of a big
        # module spends most of its time here (a Value and a Type object per operand).
        operation = op.operation
        values = operation.operands
        attributes = operation.attributes
        key: list[Any] = [type(op)]
        key += [v.type for v in values] if operands == len(values) else [values[i].type for i in range(operands)]
        key += [r.type for r in operation.results]
        for name in attribute_names:
            key.append(attributes[name] if name in attributes else None)
        return tuple(key)

    def passed(self, op: Any, key: tuple) -> bool:
        context = op.operation.context
        if context != self.context:
            self.context, self.keys = context, set()
        return key in self.keys

    def record(self, key: tuple) -> None:
        """``key``'s check passed (after :meth:`passed` said it had not yet)."""
        self.keys.add(key)


class HirOp(HirDialect.Operation):
    """Base of every hir op: subclasses implement ``check`` and call :func:`fail`; the
    message is reported at the op's location as a verifier error.

    Facts about an op are declared once, here and on its class, and read by the passes and
    the interpreter through :func:`op_class` (plain class attributes: ext reads annotated
    ones as operands and attributes):

    - ``DESTINATIONS``: operand indices the op writes (destination-passing style); () reads only.
    - ``IS_VIEW``: the result is a zero-copy view of operand 0 (writes through it land there).
    - ``TEAM_ATTR``: the op communicates with other ranks; the name of its team attribute, or
      "" when it talks to one peer of the world group (send/recv). None: no communication.
    - ``CHOOSES_STREAM``: the op picks the stream work is issued on (get/set stream).
    - ``STREAMABLE``: hir-stream-lowering can run it per slice of a ``stream_axis``.
    - ``INPUT_AXIS_ATTRS``: attributes naming axes of operand 0 (renumbered when an axis is
      sliced away).
    - ``PEER_AXIS_ATTR``: the attribute naming the axis whose slices belong one to each team
      member (allgather's ``axis``, reduce_scatter's ``scatter_axis``); streaming along it
      is nvFuser's P2P form, which hir-p2p-pipeline pipelines. "": no such axis.
    - ``UNEVEN_SPLITS``: the op takes buffers split unevenly (``#hir.shard`` with offsets);
      the verifier refuses them on every other op.

    ``emit`` (per op class) is the fast builder passes use: ``ir.Operation.create`` at the
    current insertion point and location with precomputed types; ``name=`` wraps the location
    in a name location (``loc("name"(...))``) for readable IR.
    """

    DESTINATIONS = ()
    IS_VIEW = False
    TEAM_ATTR = None
    CHOOSES_STREAM = False
    STREAMABLE = False
    INPUT_AXIS_ATTRS = ()
    PEER_AXIS_ATTR = ""
    UNEVEN_SPLITS = False
    _UNEVEN_REFUSED_PER_KEY = False  # the check calls refuse_uneven once per CheckedKeys key

    def check(self) -> None:  # pragma: no cover - overridden
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The declared integer attributes (IRDL checks only that they are integers, of any
        # width): each must be ``N : i64``, checked for every op in _verify_invariants.
        hints: dict = {}
        for klass in reversed(cls.__mro__):
            hints.update(getattr(klass, "__annotations__", {}))
        cls._I64_ATTRS = tuple(name for name, hint in hints.items() if hint is ir.IntegerAttr)
        # ext attaches a Python verifier to every class with ``verify_invariants`` (~1.5 us an
        # op when a module verifies); ops that IRDL's operand/result types fully describe (no
        # ``check``, no optional operands, no integer attributes) go without one.
        if cls.check is not HirOp.check or getattr(cls, "_ODS_OPERAND_SEGMENTS", None) or cls._I64_ATTRS:
            cls.verify_invariants = HirOp._verify_invariants

    def _verify_invariants(self) -> bool:
        try:
            # Verification can run with no context entered (op.verify()); checks build attrs.
            with self.operation.context:
                if self._ODS_OPERAND_SEGMENTS and "operandSegmentSizes" not in self.operation.attributes:
                    # Optional operands are located through this attribute (generic form).
                    fail(
                        "requires operandSegmentSizes = array<i32: ...> (one count "
                        f"per operand group, {len(self._ODS_OPERAND_SEGMENTS)} groups)"
                    )
                if not (self.UNEVEN_SPLITS or self._UNEVEN_REFUSED_PER_KEY) and _may_hold_memrefs(type(self)):
                    refuse_uneven(self.operation)
                if self._I64_ATTRS:
                    attrs = self.operation.attributes
                    for name in self._I64_ATTRS:
                        if name in attrs:
                            i64_value(attrs[name], name)
                self.check()
        except VerifyError as err:
            self.location.emit_error(f"'{self.operation.name}' op {err}")
            return False
        except Exception as err:  # a verifier bug must not take the process down
            self.location.emit_error(f"'{self.operation.name}' op verifier raised {type(err).__name__}: {err}")
            return False
        return True

    @classmethod
    def _create(
        cls,
        operands: Sequence[ir.Value] = (),
        results: Sequence[ir.Type] = (),
        attributes: dict | None = None,
        regions: int = 0,
        name: str | None = None,
    ) -> ir.Operation:
        """This op at the current insertion point (and location, named ``name`` if given).
        Not the ext constructor: it binds arguments with ``inspect`` (~17 us an op)."""
        return ir.Operation.create(
            cls.OPERATION_NAME,
            results=list(results),
            operands=list(operands),
            attributes=attributes,
            regions=regions,
            loc=name_loc(name),
        )

    @classmethod
    def destinations(cls, op: ir.Operation) -> tuple:
        """The operand indices ``op`` writes: ``DESTINATIONS``, unless the op's operand
        lists are variadic (then its class computes them from ``op``)."""
        return cls.DESTINATIONS

    @classmethod
    def operand_axis(cls, op: ir.Operation, index: int, k: int) -> int | None:
        """The axis of operand ``index`` that output axis ``k`` reads (nvFuser's
        PairwiseLogicalDomainMap), None when it has none. Written operands map to themselves."""
        return k if index in cls.DESTINATIONS else None

    @classmethod
    def broadcast_operands(cls) -> bool:
        """Whether operands may be broadcast against the output (extent-1 axes)."""
        return False


class _UnevenTypes:
    """Whether a type is a memref placed unevenly (``#hir.shard<..., {..., offsets = ...}>``),
    remembered per type for one MLIR context at a time (verification runs after every pass)."""

    def __init__(self) -> None:
        self.context: ir.Context | None = None
        self.known: dict = {}

    def __call__(self, t: ir.Type) -> bool:
        if t.context != self.context:
            self.context, self.known = t.context, {}
        uneven = self.known.get(t)
        if uneven is None:
            space = t.memory_space if isinstance(t, ir.MemRefType) else None
            entries = space.axis.maybe_downcast() if isinstance(space, ShardAttr) else None
            uneven = self.known[t] = (
                isinstance(entries, ir.DictAttr) and "offsets" in entries
            )  # (a packed split is even)
        return uneven


_uneven_type = _UnevenTypes()


_MEMREF_CLASSES: dict = {}


def _may_hold_memrefs(cls: type) -> bool:
    """Whether ops of ``cls`` may have memref operands or results: not when every operand
    and result it declares has another type (streams, indices, work), so verifying them
    reads no types."""
    known = _MEMREF_CLASSES.get(cls)
    if known is None:
        hints: dict = {}
        for klass in reversed(cls.__mro__):
            hints.update(getattr(klass, "__annotations__", {}))
        values = [
            str(h)
            for h in hints.values()
            if str(h).startswith(("torch_mlir._mlir_libs._mlir.ir.Value[", "torch_mlir._mlir_libs._mlir.ir.OpResult["))
        ]
        typed = all(
            any(name in v for name in ("IndexType", "StreamType", "WorkType", "IntegerType", "FloatType"))
            for v in values
        )
        known = _MEMREF_CLASSES[cls] = not (values and typed)
    return known


def refuse_uneven(operation: ir.Operation) -> None:
    """Fail when an operand or result of ``operation`` is placed unevenly."""
    for what, values in (("operand", operation.operands), ("result", operation.results)):
        for i, value in enumerate(values):
            if _uneven_type(value.type):
                uneven_ops = sorted(c.OPERATION_NAME for c in OP_CLASSES.values() if getattr(c, "UNEVEN_SPLITS", False))
                fail(
                    f"{what} #{i} is split unevenly ({value.type}); this op needs even splits "
                    f"(ops taking uneven ones: {', '.join(uneven_ops)})"
                )


def name_loc(name: str | None) -> ir.Location | None:
    """The location for an op built now: the current one wrapped in ``loc("name"(...))``
    (printed with ``use_name_loc_as_prefix``, its results are ``%name``, ``%name_0``, ...;
    diagnostics still report the file location inside). Without ``name``, a name on the
    current location (passes build at an op's location) is dropped, so no op is named by
    accident; None when there is none (``Operation.create`` takes the current one)."""
    loc = ir.Location.current
    if not isinstance(loc, ir.NameLoc):
        return ir.Location.name(name, childLoc=loc) if name else None
    while isinstance(loc, ir.NameLoc):
        loc = loc.child_loc
    return ir.Location.name(name, childLoc=loc) if name else loc


def loc_name(loc: ir.Location) -> str | None:
    """The name of a name location (``loc("x"(...))``), else None."""
    return loc.name_str if isinstance(loc, ir.NameLoc) else None


def op_class(op: Any) -> type | None:
    """The hir op class of ``op`` (an Operation or OpView), None for other dialects' ops."""
    return OP_CLASSES.get(op.name)


def is_view(op: Any) -> bool:
    """Whether ``op`` is a view op (its result aliases operand 0): an hir op with ``IS_VIEW``
    or an upstream view (:data:`UPSTREAM_VIEWS`)."""
    cls = OP_CLASSES.get(op.name)
    return op.name in UPSTREAM_VIEWS if cls is None else cls.IS_VIEW


OP_CLASSES: dict[str, type] = {}  # filled by hir.dialect once every op module is imported
# Names of upstream ops whose result views operand 0 (filled by hir.dialect.views).
UPSTREAM_VIEWS: set[str] = set()
