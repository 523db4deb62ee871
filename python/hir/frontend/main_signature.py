"""Facts about an imported ``@main``'s signature that :func:`hir.frontend.from_torch` checks
or records: which arguments are read-only parameters (``hir.parameter``), why an export
whose argument is not a tensor cannot be imported, and why a partition failed, in the
user's terms."""

from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import PARAMETER_ATTR


def mark_parameters(module: ir.Module, count: int, mutated: Sequence[int]) -> None:
    """Mark ``@main``'s first ``count`` arguments (the module's state) ``hir.parameter``,
    except the state entries the module writes (``mutated``): read-only, changing between
    calls only when the caller changes them (``hir-hoist-parameter-work`` reads the mark)."""
    main = next(op for op in module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME)
    attrs = main.operation.attributes
    inputs = ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value).inputs
    old = (
        [ir.DictAttr(a) for a in ir.ArrayAttr(attrs["arg_attrs"])]
        if "arg_attrs" in attrs
        else [ir.DictAttr.get({})] * len(inputs)
    )
    new = []
    for index, entries in enumerate(old):
        values = {entries[i].name: entries[i].attr for i in range(len(entries))}
        if index < count and index not in mutated:
            values[PARAMETER_ATTR] = ir.UnitAttr.get()
        new.append(ir.DictAttr.get(values))
    attrs["arg_attrs"] = ir.ArrayAttr.get(new)


def scalar_argument(torch_func: func.FuncOp) -> str | None:
    """Why the exported function cannot be imported when an argument is not a tensor (a
    Python int input the export kept as one), else None."""
    args = [str(a.type) for a in torch_func.regions[0].blocks[0].arguments]
    scalar = next((i for i, t in enumerate(args) if not t.startswith("!torch.vtensor")), None)
    if scalar is None:
        return None
    return (
        f"argument #{scalar} of the exported function is {args[scalar]}: hir imports tensor "
        "inputs only (pass the value as a tensor, or make it a constant of the module)"
    )


def unsupported_reason(torch_func: func.FuncOp, err: ValueError, dynamic: bool) -> str:
    """Why partitioning failed, in the user's terms: data-dependent shapes (``torch.nonzero``,
    boolean masks) have no buffer type (non-tensor inputs are refused before, by
    :func:`scalar_argument`)."""
    if not dynamic and any("?" in str(r.type) for op in torch_func.regions[0].blocks[0].operations for r in op.results):
        return (
            "the module computes a tensor whose shape depends on data "
            f"(e.g. torch.nonzero): hir needs static shapes ({err})"
        )
    return str(err)
