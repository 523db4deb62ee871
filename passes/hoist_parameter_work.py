"""``hir-hoist-parameter-work``: move work that reads only parameters out of the per-call
path (issue 22). A function's arguments marked ``hir.parameter`` (``hir.from_torch`` marks
the module's state) are read-only and change rarely; an op at the function's top level that
reads only such arguments (or buffers made by ops already hoisted) and writes only fresh
allocations that nothing writes again or returns -- a weight transpose or view, a cast, a
concatenated QKV weight -- moves, with its allocation, into one private function called
once with ``hir.once``. The interpreter runs that call once per set of parameter tensors
and reuses its results (``python/hir/interpreter/ops/once.py``), so a forward no longer
recomputes them; the buffers it returns live as long as the cache, so their deallocations go.

Before::

    func.func @main(%w: memref<16x32xf32> {hir.parameter}, %x: memref<8x16xf32>) -> ... {
      %wt = memref.alloc() : memref<32x16xf32>
      call @segment_0(%w, %wt) : (memref<16x32xf32>, memref<32x16xf32>) -> ()
      %y = memref.alloc() : memref<8x32xf32>
      "hir.matmul"(%x, %wt, %y) : (...) -> ()
      memref.dealloc %wt : memref<32x16xf32>
      return %y : memref<8x32xf32>
    }

After::

    func.func @main(%w: memref<16x32xf32> {hir.parameter}, %x: memref<8x16xf32>) -> ... {
      %0 = call @main_parameter_work(%w) {hir.once} : (memref<16x32xf32>) -> memref<32x16xf32>
      %y = memref.alloc() : memref<8x32xf32>
      "hir.matmul"(%x, %0, %y) : (...) -> ()
      return %y : memref<8x32xf32>
    }
    func.func private @main_parameter_work(%arg0: memref<16x32xf32>) -> memref<32x16xf32> {
      %wt = memref.alloc() : memref<32x16xf32>
      call @segment_0(%arg0, %wt) : (memref<16x32xf32>, memref<32x16xf32>) -> ()
      return %wt : memref<32x16xf32>
    }

Ops that qualify: calls of kernel segments (``hir.kernel``; they write the arguments they
materialize into) and compute ops (their class's ``DESTINATIONS``). Anything inside a loop,
anything reading a non-parameter, and allocations with dynamic sizes or in symmetric memory
stay where they are.
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func

from hir.dialect import KERNEL_ATTR, ONCE_ATTR, OP_CLASSES, PARAMETER_ATTR, ComputeOp, is_view
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.passes.base import ModulePass, register_pass
from hir.dialect.irutils import ALLOC, DEALLOC, func_ops, written_operands

_CALL = func.CallOp.OPERATION_NAME
_RETURN = func.ReturnOp.OPERATION_NAME
_MATERIALIZE = bufferization.MaterializeInDestinationOp.OPERATION_NAME


def parameter_arguments(fn: ir.Operation) -> list[int]:
    """Indices of ``fn``'s arguments marked ``hir.parameter``."""
    if "arg_attrs" not in fn.attributes:
        return []
    return [i for i, attrs in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])) if PARAMETER_ATTR in ir.DictAttr(attrs)]


def kernel_writes(fn: ir.Operation) -> frozenset[int]:
    """The arguments a kernel segment writes: those it materializes results into."""
    written = set()
    for block in fn.regions[0].blocks:
        for op in block.operations:
            if op.operation.name == _MATERIALIZE:
                target = op.operation.operands[1]
                if isinstance(target.owner, ir.Block):
                    written.add(list(block.arguments).index(target))
    return frozenset(written)


class _Hoister:
    def __init__(self, module: ir.Module) -> None:
        self.functions = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in func_ops(module)}
        self.module = module

    def writes(self, op: ir.Operation) -> Optional[frozenset[int]]:
        """Operand indices ``op`` writes; None when unknown (or not a kernel call)."""
        if op.name == _CALL:
            callee = self.functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            if callee is None or KERNEL_ATTR not in callee.attributes:
                return None
            return kernel_writes(callee)
        cls = OP_CLASSES.get(op.name)
        if cls is None or not issubclass(cls, ComputeOp):
            return None
        return frozenset(cls.DESTINATIONS)

    def written_or_returned_after(self, value: ir.Value, writer: ir.Operation) -> bool:
        """Whether anything but ``writer`` writes ``value`` (or a view of it), or returns it."""
        for use in value.uses:
            user = use.owner.operation
            if user == writer or user.name == DEALLOC:
                continue
            if user.name == _RETURN:
                return True
            if is_view(user):
                if self.written_or_returned_after(user.result, writer):
                    return True
                continue
            written = self.writes(user) if user.name == _CALL else written_operands(user)
            if written is None or use.operand_number in written:
                return True
        return False

    def fresh(self, value: ir.Value, op: ir.Operation) -> bool:
        """A static, ordinary allocation in ``op``'s block, first used by ``op``."""
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.operation.name != ALLOC or owner.operation.operands:
            return False
        alloc = owner.operation
        if SYMMETRIC_ATTR in alloc.attributes or alloc.block != op.block:
            return False
        for use in value.uses:
            user = use.owner.operation
            if user != op and (user.block != op.block or user.is_before_in_block(op)):
                if user.block == op.block or not _nested_after(user, op):
                    return False
        return not self.written_or_returned_after(value, op)

    def run(self, fn: ir.Operation) -> None:
        params = parameter_arguments(fn)
        if not params:
            return
        block = fn.regions[0].blocks[0]
        args = list(block.arguments)
        known = {args[i] for i in params}
        used_params: list[ir.Value] = []
        hoisted: list[ir.Operation] = []  # in order, allocations before their writer
        outputs: list[ir.Value] = []
        for op in list(block.operations):
            op = op.operation
            written = self.writes(op)
            if not written:
                continue
            operands = list(op.operands)
            reads = [v for i, v in enumerate(operands) if i not in written]
            if not reads or not all(v in known for v in reads) or any(i >= len(operands) for i in written):
                continue
            targets = [operands[i] for i in sorted(written)]
            if len(set(targets)) != len(targets) or not all(self.fresh(t, op) for t in targets):
                continue
            for v in reads:
                if v in args and v not in used_params:
                    used_params.append(v)
            hoisted += [t.owner.operation for t in targets] + [op]
            outputs += targets
            known.update(targets)
        if hoisted:
            with fn.location:
                self.outline(fn, block, hoisted, outputs, sorted(used_params, key=args.index))

    def outline(self, fn: ir.Operation, block: ir.Block, hoisted: list, outputs: list, params: list) -> None:
        name = self.unique(ir.StringAttr(fn.attributes["sym_name"]).value + "_parameter_work")
        out_types = [v.type for v in outputs]
        with ir.InsertionPoint(self.module.body):
            work = func.FuncOp(name, ir.FunctionType.get([p.type for p in params], out_types), visibility="private")
        body = work.add_entry_block()
        with ir.InsertionPoint.at_block_begin(block):
            call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(name), params)
        call.operation.attributes[ONCE_ATTR] = ir.UnitAttr.get()
        results = list(call.operation.results)
        for value, result in zip(outputs, results):
            value.replace_all_uses_with(result)
        for result in results:
            for use in list(result.uses):
                if use.owner.operation.name == DEALLOC:
                    use.owner.operation.erase()
        with ir.InsertionPoint(body):
            ret = func.ReturnOp(outputs)
        for op in hoisted:
            op.move_before(ret.operation)
            for value, result in zip(outputs, results):
                op.replace_uses_of_with(result, value)
            for param, arg in zip(params, body.arguments):
                op.replace_uses_of_with(param, arg)
        self.functions[name] = work.operation

    def unique(self, name: str) -> str:
        base, n = name, 0
        while name in self.functions:
            n += 1
            name = f"{base}_{n}"
        return name


def _nested_after(user: ir.Operation, op: ir.Operation) -> bool:
    """``user`` sits (nested) in an op after ``op`` in ``op``'s block."""
    while user is not None and user.block != op.block:
        parent = user.parent
        user = parent.operation if parent is not None else None
    return user is not None and op.is_before_in_block(user)


@register_pass
@dataclass
class HoistParameterWork(ModulePass):
    name = "hir-hoist-parameter-work"
    description = "Compute work that reads only hir.parameter arguments once (a hir.once call the interpreter caches)."

    def run(self, module: ir.Module) -> None:
        hoister = _Hoister(module)
        for fn in list(func_ops(module)):
            hoister.run(fn)
