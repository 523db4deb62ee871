"""``hir-hoist-parameter-work``: move work that reads only parameters out of the per-call
path. A function's arguments marked ``hir.parameter`` (``hir.from_torch`` marks
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

Why a function pass: which ops qualify is a forward fact of the whole body (the buffers made
only from parameters, a set grown top to bottom as ops qualify) and of every later use of
each output (nothing else writes or returns it), and the picked ops of one function all move
into one new function with one call. An analysis picks
each function's ops to move and names its work function (one symbol table for the module);
then, per function, :func:`hoist` builds the work function and its ``hir.once`` call, moves
the picked ops and their output allocations into it, in order, and erases the
deallocations of the call's results.
"""

from dataclasses import dataclass, field

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func

from hir.dialect import KERNEL_ATTR, ONCE_ATTR, OP_CLASSES, PARAMETER_ATTR, ComputeOp
from hir.dialect.irutils import ALLOC, DEALLOC, func_ops, runs_after, uses_through_views, written_operands
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.passes.base import FunctionPass, register_pass

_CALL = func.CallOp.OPERATION_NAME
_RETURN = func.ReturnOp.OPERATION_NAME
_MATERIALIZE = bufferization.MaterializeInDestinationOp.OPERATION_NAME


def parameter_arguments(fn: ir.Operation) -> list[int]:
    """Indices of ``fn``'s arguments marked ``hir.parameter``."""
    if "arg_attrs" not in fn.attributes:
        return []
    return [
        i for i, attrs in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])) if PARAMETER_ATTR in ir.DictAttr(attrs)
    ]


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


@dataclass
class _Outline:
    """One function's parameter work (the analysis' answer): the ops to move, in order,
    each with its fresh output allocations, into the private function ``name`` called once."""

    fn: ir.Operation
    name: str
    params: list[ir.Value]  # the parameters the work reads, in argument order
    outputs: list[ir.Value]  # the buffers it makes, returned by the work function
    # (op, its output allocations), in block order; the ops not moved yet from ``moved`` on.
    # A list, not a dict: ``ir.Operation``'s hash covers its operands, which the move rewires.
    moves: list[tuple[ir.Operation, list[ir.Operation]]] = field(default_factory=list)
    moved: int = 0
    results: list[ir.Value] | None = None  # the hir.once call's results, once it is built
    ret: ir.Operation | None = None  # the work function's return: moved ops go before it
    args: list[ir.Value] = field(default_factory=list)  # the work function's arguments


class _Analysis:
    """Which top-level ops of each function read only parameters (or buffers made by such
    ops) and write only fresh allocations: the :class:`_Outline` of each function."""

    def __init__(self, module: ir.Module) -> None:
        self.functions = {_symbol(f): f for f in func_ops(module)}
        self.outlines = [o for o in map(self.outline, list(self.functions.values())) if o is not None]

    def writes(self, op: ir.Operation) -> frozenset[int] | None:
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
        for use in uses_through_views(value):
            user = use.owner.operation
            if user == writer or user.name == DEALLOC:
                continue
            if user.name == _RETURN:
                return True
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
                if user.block == op.block or not runs_after(user, op):
                    return False
        return not self.written_or_returned_after(value, op)

    def outline(self, fn: ir.Operation) -> _Outline | None:
        params = parameter_arguments(fn)
        if not params:
            return None
        block = fn.regions[0].blocks[0]
        args = list(block.arguments)
        known = {args[i] for i in params}
        used_params: list[ir.Value] = []
        moves: list[tuple[ir.Operation, list[ir.Operation]]] = []
        outputs: list[ir.Value] = []
        for op in block.operations:
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
            moves.append((op, [t.owner.operation for t in targets]))
            outputs += targets
            known.update(targets)
        if not moves:
            return None
        name = self.unique(_symbol(fn) + "_parameter_work")
        self.functions[name] = fn  # taken: a later function's work gets another name
        return _Outline(fn, name, sorted(used_params, key=args.index), outputs, moves)

    def unique(self, name: str) -> str:
        base, n = name, 0
        while name in self.functions:
            n += 1
            name = f"{base}_{n}"
        return name


def hoist(module: ir.Module, outline: _Outline) -> None:
    """Move ``outline``'s ops, each with its output allocations, into its work function
    (built, with the ``hir.once`` call at the top of the function, first), and erase the
    deallocations of the call's results (the interpreter's cache owns those buffers)."""
    call = _build(module, outline)
    assert outline.results is not None, "_build made the call"
    for op, allocations in outline.moves:
        for moved in (*allocations, op):
            moved.move_before(outline.ret)
            for value, result in zip(outline.outputs, outline.results):
                moved.replace_uses_of_with(result, value)
            for param, arg in zip(outline.params, outline.args):
                moved.replace_uses_of_with(param, arg)
    for result in call.results:
        for dealloc in [use.owner.operation for use in result.uses if use.owner.operation.name == DEALLOC]:
            dealloc.erase()


def _build(module: ir.Module, outline: _Outline) -> ir.Operation:
    """The work function (returning the outputs, after the module's last op) and its
    ``hir.once`` call at the top of the function; the outputs' uses there read the call's
    results from now on."""
    out_types = [v.type for v in outline.outputs]
    with outline.fn.location:
        with ir.InsertionPoint(module.body):
            work = func.FuncOp(
                outline.name, ir.FunctionType.get([p.type for p in outline.params], out_types), visibility="private"
            )
        body = work.add_entry_block()
        with ir.InsertionPoint.at_block_begin(outline.fn.regions[0].blocks[0]):
            call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(outline.name), outline.params)
        call.operation.attributes[ONCE_ATTR] = ir.UnitAttr.get()
        outline.results = list(call.operation.results)
        for value, result in zip(outline.outputs, outline.results):
            value.replace_all_uses_with(result)
        with ir.InsertionPoint(body):
            outline.ret = func.ReturnOp(outline.outputs).operation
    outline.args = list(body.arguments)
    return call.operation


def _symbol(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


@register_pass
@dataclass
class HoistParameterWork(FunctionPass):
    name = "hir-hoist-parameter-work"
    description = "Compute work that reads only hir.parameter arguments once (a hir.once call the interpreter caches)."

    def run(self, module: ir.Module) -> None:
        # The analysis names every function's work function first (one symbol table).
        self._outlines = _Analysis(module).outlines
        self._module = module
        if self._outlines:
            super().run(module)

    def run_on_function(self, fn: ir.Operation) -> None:
        for outline in self._outlines:
            if outline.fn == fn:
                hoist(self._module, outline)
