"""Adam's update as one op of a training step's program (``hir.adam_update``), instead of the
single-tensor arithmetic traced into it (:mod:`hir.frontend.optimizers`).

How it enters the program: the step is exported without its update (:class:`hir.frontend.step_module.StepModule`
returns the loss and the gradients after clipping), and :func:`append_update` then writes, at
the end of ``@main``, one ``hir.adam_update`` per param group (and element type) on the
state arguments (the parameters, ``exp_avg``, ``exp_avg_sq``, ``step``, the group's ``lr``)
and the returned gradients, which ``@main`` no longer returns; the group's betas, ``eps`` and
weight decay are the op's attributes (:func:`constants`: part of the step's signature, so a
changed one imports another program; ``lr``, what LR schedulers change, stays an input). The
op runs ``torch.optim.adam.adam`` with the group's implementation (``fused``, ``foreach`` or
single-tensor, chosen as ``torch.optim.Adam`` chooses it), one multi-tensor kernel per group
with ``fused=True`` where the traced arithmetic was about ten kernels per parameter; it
reads nothing on the host, so a CUDA graph captures it, and in the default compile it stays
out of the compiled region (inductor compiles the forward and backward only).

Where: on one device (a step on a mesh updates local shards inside the traced program, which
the data-parallel schedule reorders: it keeps the traced update).
"""

from typing import TYPE_CHECKING

import torch
from torch.optim.optimizer import _default_to_fused_or_foreach
from torch_mlir import ir
from torch_mlir.dialects import func, memref

from hir.dialect import PARAMETER_ATTR, AdamUpdateOp
from hir.dialect.optim import ADAM_CONSTANTS
from hir.frontend.optimizers import Rule, hyper_values, rule_for

if TYPE_CHECKING:
    from hir.frontend.torch_import import TorchProgram

_ADAM = (torch.optim.Adam, torch.optim.AdamW)


def applies(optimizer: torch.optim.Optimizer, mesh: object) -> bool:
    """Whether a step of ``optimizer`` ends with ``hir.adam_update`` (module docstring)."""
    return type(optimizer) in _ADAM and mesh is None


def constants(optimizer: torch.optim.Optimizer) -> tuple:
    """Per param group, the hyper-parameters the ops hold as attributes (beta1, beta2, eps,
    weight_decay): a program is built for these values."""
    rule = rule_for(optimizer)
    return tuple(tuple(_constants(rule, group).values()) for group in optimizer.param_groups)


def _constants(rule: Rule, group: dict) -> dict:
    values = hyper_values(rule, group)
    return {key: values[key] for key in ADAM_CONSTANTS}


def kernel(group: dict, param: torch.Tensor) -> str:
    """Which implementation ``torch.optim.adam.adam`` runs for ``group`` (as eager's step
    decides it from the group's ``fused`` / ``foreach`` flags and the parameters' device)."""
    if group.get("fused"):
        return "fused"
    foreach = group.get("foreach")
    if foreach is None:
        _, foreach = _default_to_fused_or_foreach([param], False, use_fused=False)
    return "foreach" if foreach else "single"


def append_update(program: "TorchProgram", names: list, optimizer: torch.optim.Optimizer) -> None:
    """Make ``program`` (a :class:`~hir.frontend.torch_import.TorchProgram` whose ``@main``
    returns the loss and then the gradient of each parameter named in ``names``, in the
    optimizer's order) update the parameters with ``hir.adam_update`` and return the loss."""
    main = next(
        op for op in program.module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME
    ).operation
    arguments = main.regions[0].blocks[0].arguments
    ret = list(main.regions[0].blocks[0].operations)[-1].operation
    loss, *grads = ret.operands
    entry = {name: i for i, name in enumerate(program.state_names)}

    def state(name: str) -> ir.Value:
        return arguments[entry[program.aliases.get(name, name)]]

    rule = rule_for(optimizer)
    written: set = set()
    with program.module.context, ir.InsertionPoint(ret), ret.location:
        start = 0
        for g, group in enumerate(optimizer.param_groups):
            by_dtype: dict = {}  # one op per element type (the op's lists have one)
            for i, param in enumerate(group["params"], start):
                by_dtype.setdefault(param.dtype, []).append(i)
            start += len(group["params"])
            for same in by_dtype.values():
                tensors = {
                    "params": [state(f"model.{names[i]}") for i in same],
                    "grads": [grads[i] for i in same],
                    "exp_avgs": [state(f"optimizer.state.{i}.exp_avg") for i in same],
                    "exp_avg_sqs": [state(f"optimizer.state.{i}.exp_avg_sq") for i in same],
                }
                steps = [state(f"optimizer.state.{i}.step") for i in same]
                written.update(
                    v.arg_number
                    for values in (*tensors.values(), steps)
                    for v in values
                    if isinstance(v, ir.BlockArgument)
                )
                lists = {name: [_unranked(v) for v in values] for name, values in tensors.items()} | {"steps": steps}
                lr = state(f"optimizer.param_groups.{g}.lr")
                kind = "adamw" if group.get("decoupled_weight_decay", False) else "adam"
                AdamUpdateOp.emit(lists, lr, _constants(rule, group), kind, kernel(group, group["params"][0]))
        ir.Operation.create(func.ReturnOp.OPERATION_NAME, operands=[loss])
        ret.erase()
        inputs = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [loss.type]))
        _unmark_parameters(main, written)
    program.output_names = program.output_names[:1]
    program.output_tree = ["tensor", 0]


def _unranked(value: ir.Value) -> ir.Value:
    """``value`` viewed as an unranked memref (``hir.adam_update``'s lists: one type)."""
    element = ir.MemRefType(value.type).element_type
    return memref.CastOp(ir.UnrankedMemRefType.get(element, None), value).result


def _unmark_parameters(main: ir.Operation, written: set) -> None:
    """The arguments the update writes are no longer read-only parameters."""
    attrs = [ir.DictAttr(a) for a in ir.ArrayAttr(main.attributes["arg_attrs"])]
    new = []
    for index, entries in enumerate(attrs):
        values = {entries[i].name: entries[i].attr for i in range(len(entries))}
        if index in written:
            values.pop(PARAMETER_ATTR, None)
        new.append(ir.DictAttr.get(values))
    main.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
