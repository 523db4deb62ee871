"""Torch ops that write a kernel segment's destination themselves, decided once at plan time:
with their ``out=`` overload (:func:`out_variant`, see
:mod:`hir.interpreter.destinations`), or, for an argument the segment reads and writes
back, with their in-place overload (:func:`segment_updates`).

A mutated state entry (a KV cache) that :mod:`hir.frontend.inplace` has its segment write
itself reads and writes ONE segment argument::

    %2 = bufferization.to_tensor %arg1 restrict writable : memref<1x2x16x8xf32> to tensor<1x2x16x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<...> to !torch.vtensor<[1,2,16,8],f32>
    %17 = torch.operator "torch.aten.index_copy"(%3, %int2, %5, %7) : ... -> !torch.vtensor<[1,2,16,8],f32>
    ...                                                  // %17 also read by SDPA
    %35 = builtin.unrealized_conversion_cast %17 : ... to tensor<1x2x16x8xf32>
    bufferization.materialize_in_destination %35 in writable %arg1

Run literally, ``index_copy`` clones the whole cache and the materialization copies it back.
Here ``index_copy`` runs as ``aten.index_copy_`` on ``%arg1``'s tensor (one write of the new
position, what HF eager does) and the materialization has no step. The old value is read by
nothing else: the ``to_tensor``'s only use (through single-use casts) is that op's ``self``,
and ``restrict`` on it says no other argument the segment reads views this buffer. The
op's result *is* the argument's new value from there on, so its other readers (the SDPA above)
see what they saw before, and a result that may view it is not bound to another buffer
(:func:`hir.interpreter.segment_writes.segment_outputs` counts it as a view of the argument).

Which ops: any torch op whose first argument is the updated value, whose result has that
value's type (no broadcast or dtype change), and which has an in-place overload of the same
arguments writing ``self`` (``index_copy`` -> ``index_copy_``, ``index_put`` ->
``index_put_``, ``copy`` -> ``copy_``, ``add.Tensor`` -> ``add_.Tensor``). Compiled
segments (``compile_kernels``) trace the in-place op as a mutation of their input, which
inductor writes in place as before.
"""

from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import bufferization, builtin

from hir.dialect.torch_ops import torch_overload

_MATERIALIZE = bufferization.MaterializeInDestinationOp.OPERATION_NAME
_TO_TENSOR = bufferization.ToTensorOp.OPERATION_NAME
_CAST = builtin.UnrealizedConversionCastOp.OPERATION_NAME


def overload_of(op: ir.Operation) -> Any | None:
    """The ``torch.ops`` overload torch op ``op`` runs (``torch.operator`` by its name), or
    None (not a torch registry op)."""
    name = op.name
    if name == "torch.operator":
        name = ir.StringAttr(op.attributes["name"]).value
    return torch_overload(name) if name.startswith("torch.") else None


def _signature(schema: Any) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in schema.arguments]


def out_variant(overload: Any) -> Any | None:
    """The ``out=`` overload of torch op ``overload``: the same arguments (names and types)
    plus one keyword-only ``out`` it writes; None when torch has none."""
    schema = overload._schema
    namespace, name = schema.name.split("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    want = _signature(schema)
    for overload_name in packet.overloads():
        candidate = getattr(packet, overload_name)
        args = candidate._schema.arguments
        if _signature(candidate._schema)[:-1] != want or len(candidate._schema.returns) != 1:
            continue
        out = args[-1]
        if out.name == "out" and out.kwarg_only and out.alias_info is not None and out.alias_info.is_write:
            return candidate
    return None


def in_place_variant(overload: Any) -> Any | None:
    """The in-place overload of functional torch op ``overload`` (``aten.index_copy`` ->
    ``aten.index_copy_``): the same arguments, ``self`` written and returned; None when the
    op is not functional or torch has none."""
    schema = overload._schema
    if (
        not schema.arguments
        or schema.arguments[0].name != "self"
        or len(schema.returns) != 1
        or schema.returns[0].alias_info is not None
    ):
        return None
    namespace, name = schema.name.split("::")
    packet = getattr(getattr(torch.ops, namespace), name + "_", None)
    if packet is None or not isinstance(packet, torch._ops.OpOverloadPacket):
        return None
    want = _signature(schema)
    for overload_name in packet.overloads():
        candidate = getattr(packet, overload_name)
        this = candidate._schema
        alias = this.arguments[0].alias_info if this.arguments else None
        if _signature(this) == want and alias is not None and alias.is_write and len(this.returns) == 1:
            return candidate
    return None


def _single_use(value: ir.Value) -> ir.OpOperand | None:
    uses = list(value.uses)
    return uses[0] if len(uses) == 1 else None


def segment_updates(fn: ir.Operation) -> dict[int, ir.Value]:
    """The arguments of kernel segment ``fn`` (one block) that a torch op updates in place
    (module docstring): argument index -> that op's result."""
    block = fn.regions[0].blocks[0]
    found: dict[int, ir.Value] = {}
    for index, arg in enumerate(block.arguments):
        uses = list(arg.uses)
        if len(uses) != 2:
            continue
        reads = [u.owner.operation for u in uses if u.owner.operation.name == _TO_TENSOR]
        writes = [u.owner.operation for u in uses if u.owner.operation.name == _MATERIALIZE and u.operand_number == 1]
        if (
            len(reads) != 1
            or len(writes) != 1
            or "restrict" not in reads[0].attributes
            or "writable" not in reads[0].attributes
        ):
            continue
        read, write = reads[0], writes[0]
        if read.block != block or write.block != block:
            continue
        use = _single_use(read.results[0])
        while use is not None and use.owner.operation.name == _CAST:
            use = _single_use(use.owner.operation.results[0])
        if use is None or use.operand_number != 0:
            continue
        op = use.owner.operation
        if op.block != block or len(op.results) != 1 or op.operands[0].type != op.results[0].type:
            continue
        overload = overload_of(op)
        if overload is None or in_place_variant(overload) is None:
            continue
        source = write.operands[0]
        while (
            not isinstance(source.owner, ir.Block)
            and source.owner.operation.name == _CAST
            and _single_use(source) is not None
        ):
            source = source.owner.operation.operands[0]
        if source == op.results[0]:
            found[index] = source
    return found
