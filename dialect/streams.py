"""Stream ops (nvFuser GetCurrentStream / SetCurrentStream / Stream(index) / Synchronize).

    %user = "hir.get_current_stream"() : () -> !hir.stream
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream          // pool stream i % num_streams
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()              // current stream waits on %user

The pool size is a property of the IR: the module attribute ``hir.num_streams = N : i64``,
set by the pass that first fixes it (hir-p2p-pipeline, hir-reuse-stream-buffers), read by
later passes and by the interpreter (``num_streams=`` / ``--num-streams`` only apply when it
is absent, and must agree with it otherwise).

Stream priorities are in the IR too: the module attribute ``hir.high_priority_streams =
array<i64: ...>`` lists the pool indices the runtime creates at high priority (CUDA stream
priority; CPU runs ignore it), e.g. the stream hir-p2p-pipeline issues its copies on
(``comm_stream=1``), so a copy's launch is not queued behind compute kernels.
"""

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, StreamType, VerifyError, stream_type
from hir.dialect.checks import i64_value
from hir.dialect.locations import format_location

DEFAULT_NUM_STREAMS = 4
NUM_STREAMS_ATTR = "hir.num_streams"  # module attribute: the run's stream pool size


def module_num_streams(module: ir.Module) -> int | None:
    """The module's ``hir.num_streams`` (the stream pool size a pass fixed), None when
    absent; ValueError when it is not a positive integer."""
    attrs = module.operation.attributes
    if NUM_STREAMS_ATTR not in attrs:
        return None
    attr = attrs[NUM_STREAMS_ATTR]
    try:
        value = i64_value(attr, NUM_STREAMS_ATTR)
    except VerifyError:
        value = None
    if value is None or value < 1:
        raise ValueError(
            f"module attribute {NUM_STREAMS_ATTR} must be a positive integer (N : i64, N >= 1), got {attr}"
        )
    return value


def module_attribute_errors(module: ir.Module, source_name: str | None = None) -> list[str]:
    """A located ``file:line:col: error: ...`` line per invalid stream module attribute
    (``hir.num_streams``, ``hir.high_priority_streams``), at the module's location: MLIR's
    Python dialects cannot verify a module attribute, so parsing (``hir.parse``, hir-opt)
    calls this."""
    errors = []
    for read in (module_num_streams, module_high_priority_streams):
        try:
            read(module)
        except ValueError as err:
            errors.append(f"{format_location(module.operation.location, source_name)}: error: {err}")
    return errors


HIGH_PRIORITY_ATTR = "hir.high_priority_streams"  # module attribute: pool indices at high priority


def module_high_priority_streams(module: ir.Module) -> list[int]:
    """The pool indices the module asks to run at high priority (``hir.high_priority_streams``);
    ValueError when the attribute is not an array of non-negative indices."""
    attrs = module.operation.attributes
    if HIGH_PRIORITY_ATTR not in attrs:
        return []
    attr = attrs[HIGH_PRIORITY_ATTR]
    values = list(ir.DenseI64ArrayAttr(attr)) if isinstance(attr, ir.DenseI64ArrayAttr) else None
    if values is None or any(v < 0 for v in values):
        raise ValueError(
            f"module attribute {HIGH_PRIORITY_ATTR} must be an array<i64: ...> of pool stream indices, got {attr}"
        )
    return values


def add_high_priority_stream(module: ir.Module, index: int) -> None:
    """Mark pool stream ``index`` high priority (kept with those already marked)."""
    marked = sorted(set(module_high_priority_streams(module)) | {index})
    module.operation.attributes[HIGH_PRIORITY_ATTR] = ir.DenseI64ArrayAttr.get(marked)


def set_module_num_streams(module: ir.Module, count: int) -> None:
    module.operation.attributes[NUM_STREAMS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), count)


class GetCurrentStreamOp(HirOp, name="get_current_stream"):
    """The stream the host is issuing work on now."""

    result: ext.Result[StreamType[()]] = ext.infer_result()

    @classmethod
    def emit(cls, *, name: str | None = None) -> ir.Value:
        return cls._create(results=[stream_type()], name=name).result


class GetStreamOp(HirOp, name="get_stream"):
    """Pool stream number ``index % num_streams`` of the run."""

    index: ext.Operand[ir.IndexType]
    result: ext.Result[StreamType[()]] = ext.infer_result()
    CHOOSES_STREAM = True

    @classmethod
    def emit(cls, index: ir.Value, *, name: str | None = None) -> ir.Value:
        return cls._create([index], [stream_type()], name=name).result


class SetCurrentStreamOp(HirOp, name="set_current_stream"):
    """Issue subsequent work on ``stream``."""

    stream: ext.Operand[StreamType]
    CHOOSES_STREAM = True

    @classmethod
    def emit(cls, stream: ir.Value, *, name: str | None = None) -> ir.Operation:
        return cls._create([stream], name=name)


class SynchronizeOp(HirOp, name="synchronize"):
    """The current stream waits for the work issued on ``stream`` so far; the host does
    not block."""

    stream: ext.Operand[StreamType]

    @classmethod
    def emit(cls, stream: ir.Value, *, name: str | None = None) -> ir.Operation:
        return cls._create([stream], name=name)
