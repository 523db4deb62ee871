"""torch-mlir ``torch`` dialect ops inside kernel segments, mapped generically to torch.ops.

Every ``torch.aten.<name>[.<overload>]`` op runs as ``torch.ops.aten.<name>.<overload>``
(``default`` when the op name has no overload; ``torch.prims.*`` likewise, and
``torch.operator "torch.<ns>.<name>..."``, which the FX importer emits for registry ops that
torch-mlir has no op class for), resolved once at plan time together with
its schema: operands bind to the schema's arguments in order (keyword-only ones by name),
constant operands are converted and bound at plan time, so a step only gathers its tensor
operands and makes one call. No op has a hand-written handler; an op without a
``torch.ops`` counterpart, or whose operands do not fit its schema, fails at plan time
at its location.

The non-aten ops an export produces are folded at plan time where they are constant:
``torch.constant.*`` (int, float, bool, str, none, device, number), ``torch.prim.ListConstruct``
of constants and ``torch.vtensor.literal``; a list of run-time values and
``torch.prim.ListUnpack`` are one small step each.

Schema integers that stand for enums are converted by argument name, as torch-mlir encodes
them: ``dtype`` (c10::ScalarType numbers), ``layout``, ``memory_format``. A ``device``
argument always becomes the run's device: exported programs record the device they were
traced on, the segment runs where the program runs.
"""

from typing import Any

import numpy as np
import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect.base import required_str
from hir.dialect.torch_ops import REGISTRY_PREFIXES, torch_overload
from hir.interpreter import (
    decode_fusions,
    decode_kernels,
    flash_attention,  # noqa: F401 - torch.ops.hir.flash_attention*, which imported steps run
)
from hir.interpreter.generated import torch_call_step
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, impl_prefix, register_impls
from hir.interpreter.steps import UNSET
from hir.interpreter.updates import in_place_variant, out_variant

# c10::ScalarType numbering (torch-mlir's torch.constant.int for a dtype argument).
_SCALAR_TYPES = {
    0: torch.uint8,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    9: torch.complex64,
    10: torch.complex128,
    11: torch.bool,
    15: torch.bfloat16,
}
_LAYOUTS = {0: torch.strided}
_MEMORY_FORMATS = {
    0: torch.contiguous_format,
    1: torch.preserve_format,
    2: torch.channels_last,
    3: torch.channels_last_3d,
}
_ENUMS = {"dtype": _SCALAR_TYPES, "layout": _LAYOUTS, "memory_format": _MEMORY_FORMATS}


def _plan_argument(c: Compiler, op: ir.OpView, arg: Any, value: ir.Value) -> Any:
    """The plan-time value of a constant operand bound to schema argument ``arg``."""
    constant = c.constant(value)
    if arg.name == "device":
        return c.runtime.device
    table = _ENUMS.get(arg.name)
    if table is not None and isinstance(constant, int) and not isinstance(constant, bool):
        if constant not in table:
            raise c.error(op, f"argument '{arg.name}' has unknown enum value {constant}")
        return table[constant]
    return constant


def _attr_value(attr: ir.Attribute) -> Any:
    for kind in (ir.BoolAttr, ir.IntegerAttr, ir.FloatAttr, ir.StringAttr):  # BoolAttr before IntegerAttr
        if isinstance(attr, kind):
            return attr.value
    raise ValueError(f"unsupported constant attribute {attr}")


_LITERAL_DTYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "si64": torch.int64,
    "si32": torch.int32,
    "si8": torch.int8,
    "ui8": torch.uint8,
    "i1": torch.bool,
}


@register_impls
class TorchImpls:
    """torch dialect ops: registry ops by name prefix (and ``torch.operator``), constants,
    lists and literals folded at plan time."""

    @impl_prefix(REGISTRY_PREFIXES[0])
    @impl_prefix(REGISTRY_PREFIXES[1])
    @impl(torch_dialect.OperatorOp)
    def torch_op(self, c: Compiler, op: ir.OpView) -> Step | None:
        """The step of a registry op: ``torch.aten.*`` / ``torch.prims.*`` by op name,
        ``torch.operator`` by its ``name`` attribute."""
        name = op.operation.name
        if name == torch_dialect.OperatorOp.OPERATION_NAME:
            name = required_str(op, "name")
        overload = torch_overload(name)
        if overload is None:
            raise c.error(op, f"runs '{name}', which has no torch.ops counterpart in torch {torch.__version__}")
        operands = list(op.operation.operands)
        if (
            not op.operation.results or c.out_destination(op.operation.results[0]) is None
        ):  # (the stand-ins have no out= form)
            types = lambda: [str(v.type) for v in operands]  # noqa: E731
            overload = decode_fusions.substitute(overload, types, c.runtime.device)
            overload = decode_kernels.substitute(
                overload, types, lambda: [c.constant(v) for v in operands], c.runtime.device
            )
            if decode_kernels.is_decode_kernel(overload) or decode_fusions.is_decode_kernel(overload):
                decode_kernels.planned(c.runtime)
        schema = overload._schema
        if len(operands) != len(schema.arguments):
            raise c.error(op, f"has {len(operands)} operands but {overload} takes {len(schema.arguments)} ({schema})")
        positional: list = []
        keywords: dict = {}
        fill: list[tuple[int, int]] = []  # (positional index, slot) of run-time operands
        fill_kw: list[tuple[str, int]] = []
        for arg, value in zip(schema.arguments, operands):
            run_time = c.constant(value) is UNSET and arg.name != "device"
            if arg.kwarg_only:
                if run_time:
                    fill_kw.append((arg.name, c.use(value)))
                keywords[arg.name] = None if run_time else _plan_argument(c, op, arg, value)
            else:
                if run_time:
                    fill.append((len(positional), c.use(value)))
                positional.append(None if run_time else _plan_argument(c, op, arg, value))
        dest = c.out_destination(op.operation.results[0]) if len(op.operation.results) == 1 else None
        if dest is not None and c.updates_in_place(op.operation.results[0]):
            overload = in_place_variant(overload)  # its self is the argument it writes back (updates.py)
            assert overload is not None, "updates_in_place picks ops with an in-place overload"
        elif dest is not None:  # the segment's destination, written with out= (destinations.py)
            overload = out_variant(overload)
            assert overload is not None, "out_destination picks ops with an out= overload"
            keywords["out"] = None
            fill_kw.append(("out", dest))
        results = [c.define(r) for r in op.operation.results]
        return torch_call_step(overload, positional, keywords, fill, fill_kw, results)

    @impl(
        torch_dialect.ConstantIntOp,
        torch_dialect.ConstantFloatOp,
        torch_dialect.ConstantBoolOp,
        torch_dialect.ConstantStrOp,
        torch_dialect.ConstantNumberOp,
        torch_dialect.ConstantDeviceOp,
    )
    def constant(self, c: Compiler, op: ir.OpView) -> Step | None:
        c.define(op.operation.results[0], _attr_value(op.operation.attributes["value"]))
        return None

    @impl(torch_dialect.ConstantNoneOp)
    def constant_none(self, c: Compiler, op: ir.OpView) -> Step | None:
        c.define(op.operation.results[0], None)
        return None

    @impl(torch_dialect.PrimListConstructOp)
    def list_construct(self, c: Compiler, op: ir.OpView) -> Step | None:
        operands = list(op.operation.operands)
        values = [c.constant(v) for v in operands]
        if all(v is not UNSET for v in values):
            c.define(op.operation.results[0], values)
            return None
        slots = [c.use(v) for v in operands]
        out = c.define(op.operation.results[0])

        def build_list(env: list) -> None:
            env[out] = [env[s] for s in slots]

        return build_list

    @impl(torch_dialect.PrimListUnpackOp)
    def list_unpack(self, c: Compiler, op: ir.OpView) -> Step | None:
        src = c.use(op.operation.operands[0])
        outs = [c.define(r) for r in op.operation.results]

        def unpack(env: list) -> None:
            values = env[src]
            if len(values) != len(outs):
                raise ValueError(f"list has {len(values)} elements, {len(outs)} results expected")
            for slot, value in zip(outs, values):
                env[slot] = value

        return unpack

    @impl(torch_dialect.ValueTensorLiteralOp)
    def literal(self, c: Compiler, op: ir.OpView) -> Step | None:
        attr = op.operation.attributes["value"]
        if not isinstance(attr, ir.DenseElementsAttr):
            raise c.error(op, f"holds a {str(attr).split('<')[0]} literal; only dense<...> literals can be run")
        dense = ir.DenseElementsAttr(attr)
        shaped = ir.ShapedType(dense.type)
        element = str(shaped.element_type)
        dtype = _LITERAL_DTYPES.get(element) or _LITERAL_DTYPES.get(element.replace("i", "si", 1))
        if dtype is None:
            raise c.error(op, f"literal element type {element} has no torch dtype")
        shape = list(shaped.shape)
        if dense.is_splat:
            value = torch.full(shape, _attr_value(dense.get_splat_value()), dtype=dtype)
        else:
            value = torch.from_numpy(np.array(dense)).to(dtype).reshape(shape)
        c.define(op.operation.results[0], value.to(c.runtime.device))
        return None
