"""Compiling a function once into a flat plan: a list of closures ("steps") over a list of
value slots ("env"). Each op is resolved to its handler, its attributes parsed and its
operands mapped to slot numbers at compile time, so running a step is one Python call doing
the torch work and nothing else.

Handlers are registered per op class (:mod:`hir.interpreter.registry`, ``@impl``); a handler
receives the :class:`Compiler` and the op and returns a step ``step(env) -> None`` (or None
when the op has no run-time work). An eager kernel segment's call is inlined: the callee's
steps join the caller's plan (:meth:`Compiler.inline`), so an imported model runs one flat
list of steps per call.
Running a plan (the slots' sentinels, :class:`~hir.interpreter.steps.FunctionPlan`,
:func:`~hir.interpreter.steps.run_steps`, which names the failing op) is
:mod:`hir.interpreter.steps`.
"""

from collections.abc import Callable
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import WorkType
from hir.dialect.compute import KERNEL_ATTR
from hir.dialect.context import HirError, format_location
from hir.dialect.sharding import MultiDimMeshError
from hir.interpreter.buffers import BufferSpec, buffer_spec, is_memref
from hir.interpreter.destinations import Bind, DestinationPlanner
from hir.interpreter.generated import Step, compile_steps, fold, folds
from hir.interpreter.registry import lookup
from hir.interpreter.releases import release_step, released_slots
from hir.interpreter.steps import UNSET, FunctionPlan, OpInfo


def _never_waited(op: ir.OpView) -> bool:
    """An op producing one ``!hir.work`` that nothing uses (a work handed to a wait, a call
    or a yield is someone else's to complete)."""
    results = op.operation.results
    if len(results) != 1 or not isinstance(results[0].type, WorkType):
        return False
    return next(iter(results[0].uses), None) is None


def _pending(step: Step, slot: int, pending: list, where: str, name: str) -> Step:
    """``step`` also recording its work, which the program completes when its entry
    function returns (see Program._execute): a dropped torch work handle cancels the
    transfer, and the peer's matching receive then fails."""

    def issue_pending(env: list) -> None:
        step(env)
        if env[slot] is not None:
            pending.append((env[slot], where, name))

    return issue_pending


def _tracked_binds(step: Step, slots: list[int], tracker: Any) -> Step:
    """``step`` (a call, a compute op) also counting the buffers it binds, as their alloc
    step would."""

    def tracked_call(env: list) -> None:
        step(env)
        for slot in slots:
            tracker.add(env[slot])

    return tracked_call


class Compiler:
    """Compiles the functions of one module for one rank of a :class:`Runtime`."""

    def __init__(
        self,
        module: ir.Module,
        runtime: Any,
        source_name: str | None,
        regions: Callable[["Compiler", list], list[Step]] | None = None,
    ) -> None:
        self.runtime = runtime
        # The handles kept below (functions, values as slot keys) do not keep their module
        # alive in these bindings: once the caller drops the ir.Module (an imported program
        # gone with its TorchProgram), reading them reads freed memory and may crash.
        self.module = module
        # Compiles a function body with its compute regions as single steps (regions.py);
        # None: op by op. in_region: compiling a region's ops (its kernel segments are not
        # compiled on their own). eager: compiling parameter work (a ``hir.once`` callee,
        # run once per set of parameters): nothing in it is compiled, which would cost an
        # inductor compile for one run.
        self.regions = regions
        self.in_region = False
        self.eager = False
        self.rank: int = runtime.rank
        self.source_name = source_name
        self.functions = {}
        for op in module.body.operations:
            if op.operation.name == func.FuncOp.OPERATION_NAME:
                self.functions[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op
        self.plans: dict[str, FunctionPlan] = {}
        self._slots: dict[ir.Value, int] = {}
        self._template: list = []
        self._aliases: dict[int, list[int]] = {}  # buffer slot -> slots of views of it
        self._specs: dict[ir.Type, BufferSpec] = {}
        self.destinations = DestinationPlanner(self.functions, self.spec)
        self._binds: dict[ir.Value, Bind] = {}  # allocations that become a segment's result
        self._returned: dict[ir.Value, bool] = {}  # segment argument -> make it contiguous
        self._outs: dict[ir.Operation, list[int]] = {}  # call -> destinations written with out= or in place
        # torch op result -> segment argument it writes (None: an output no torch op produces)
        self._out_writes: dict[ir.Value | None, ir.Value] = {}
        self._updates: set[ir.Value | None] = set()  # those of them that write it in place (updates.py)
        self._asm: ir.AsmState | None = None  # value names (see name)
        self._where: dict[ir.Attribute, str] = {}  # location -> its text (see where)

    # ----- functions -------------------------------------------------------------------
    def function(self, name: str, at: ir.OpView | None = None, eager: bool = False) -> FunctionPlan:
        """The plan of function ``name`` (compiled on first request). Called by ``at`` (a
        call) whose destinations are bound (:mod:`hir.interpreter.destinations`), the
        plan's results end with those destinations' values, in operand order. ``eager``:
        nothing in it runs compiled (see :attr:`eager`)."""
        bound = self.bound_operands(at) if at is not None else []
        outs = self._outs.get(at.operation, []) if at is not None else []
        eager = eager or self.eager
        key = (
            name
            + (f"<bind {','.join(str(i) for i, _ in bound)}>" if bound else "")
            + (f"<out {','.join(map(str, outs))}>" if outs else "")
            + ("<eager>" if eager else "")
        )
        if key in self.plans:
            return self.plans[key]
        function = self._function(name, at)
        saved = (
            self._slots,
            self._template,
            self._aliases,
            self._returned,
            self._out_writes,
            self._updates,
            self.eager,
        )
        self._slots, self._template, self._aliases, self.eager = {}, [], {}, eager
        try:
            block, ops = self._body(function)
            arg_slots = [self.define(arg) for arg in block.arguments]
            steps = self._callee_steps(
                block, ops, at, regions=not eager and KERNEL_ATTR not in function.operation.attributes
            )
            result_slots = [self.use(v) for v in ops[-1].operation.operands] + [arg_slots[i] for i, _ in bound]
            plan = FunctionPlan(
                name,
                format_location(function.location, self.source_name),
                steps,
                self._template,
                arg_slots,
                result_slots,
                [arg.type for arg in block.arguments],
            )
        finally:
            self._slots, self._template, self._aliases, self._returned, self._out_writes, self._updates, self.eager = (
                saved
            )
        self.plans[key] = plan
        return plan

    def inline(self, name: str, at: ir.OpView) -> list[Step]:
        """The steps of function ``name`` called by ``at``, compiled into the caller's plan:
        its arguments read the call's operand slots and the call's results its returned
        values' slots, so running them costs no env, no wiring and no nested
        :func:`run_steps` per call. Each step keeps its op's location for errors."""
        function = self._function(name, at)
        block, ops = self._body(function)
        for arg, operand in zip(block.arguments, at.operation.operands):
            self.share(arg, operand)
        saved = (self._returned, self._out_writes, self._updates)
        try:
            steps = self._callee_steps(
                block, ops, at, regions=False, keep=[*block.arguments, *ops[-1].operation.operands]
            )
        finally:
            self._returned, self._out_writes, self._updates = saved
        for result, value in zip(at.operation.results, ops[-1].operation.operands):
            self.share(result, value)
        return steps

    def _function(self, name: str, at: ir.OpView | None) -> ir.OpView:
        function = self.functions.get(name)
        if function is None:
            where = self.where(at) if at is not None else "error"
            raise HirError(f"{where}: no function @{name} in the module")
        return function

    def _body(self, function: ir.OpView) -> tuple[ir.Block, list]:
        """The single block of ``function`` and its ops, ending with ``func.return``."""
        name = ir.StringAttr(function.operation.attributes["sym_name"]).value
        blocks = list(function.regions[0].blocks)
        if len(blocks) != 1:
            raise self.error(function, f"@{name} must have exactly one block (has {len(blocks)})")
        ops = list(blocks[0].operations)
        if not ops or ops[-1].operation.name != func.ReturnOp.OPERATION_NAME:
            raise self.error(function, f"@{name} must end with {func.ReturnOp.OPERATION_NAME}")
        return blocks[0], ops

    def _callee_steps(
        self, block: ir.Block, ops: list, at: ir.OpView | None, regions: bool, keep: list | None = None
    ) -> list[Step]:
        """The steps of a function body with the destinations ``at`` binds or has
        written with ``out=`` set up (the block's arguments already have slots). ``keep``
        (an inlined body): its intermediate tensors are released after their last use,
        except these values' (:mod:`hir.interpreter.releases`)."""
        args = list(block.arguments)
        bound = self.bound_operands(at) if at is not None else []
        self._returned = {args[i]: bind.contiguous for i, bind in bound}
        self._out_writes, self._updates = {}, set()
        if at is not None:
            outs = self._outs.get(at.operation, [])
            self._out_writes = {self.destinations.producer(at.operation, i): args[i] for i in outs}
            self._updates = {
                self.destinations.producer(at.operation, i) for i in outs if self.destinations.updates(at.operation, i)
            }
        return self.block(ops[:-1], regions=regions, keep=keep)

    def block(self, ops: list, regions: bool = False, keep: list | None = None) -> list[Step]:
        """Compile ``ops`` (a block without its terminator) into steps; ``regions``: a
        function body, whose compute regions may run compiled; ``keep``: see :meth:`steps`."""
        self._binds.update(self.destinations.binds(ops, self._outs))
        if regions and self.regions is not None:
            return self.regions(self, ops)
        return self.steps(ops, keep)

    def steps(self, ops: list, keep: list | None = None) -> list[Step]:
        """The steps of ``ops``, op by op, slot moves folded into the torch call before them
        (:func:`hir.interpreter.generated.slot_moves_step`). ``keep``: ``ops`` are an inlined
        segment's, whose other intermediate tensors are released after their last use."""
        per_op = [self.op(op) for op in ops]
        frees = released_slots(ops, self.use, self._template, keep) if keep is not None else {}
        steps: list[Step] = []
        waiting: list[int] = []  # released slots waiting for a torch call's step to fold into
        for index, op_steps in enumerate(per_op):
            for step in op_steps:
                if steps and folds(steps[-1], step):
                    steps[-1] = fold(steps[-1], step)
                else:
                    steps.append(step)
            waiting += frees.get(index, [])
            if waiting and steps and folds(steps[-1], release := release_step(waiting)):
                steps[-1] = fold(steps[-1], release)
                waiting = []
        if waiting:
            steps.append(release_step(waiting))
            steps[-1].hir_op = OpInfo(ops[-1].operation.name, self.where(ops[-1]), ())
        return compile_steps(steps)

    def op(self, op: ir.OpView) -> list[Step]:
        """The steps of ``op``: none, its one step, or (a call inlined by its handler, see
        :meth:`inline`) the callee's steps, each tagged with its own op."""
        name = op.operation.name
        entry = lookup(name)
        if entry is None:
            raise self.error(op, "is not supported by the interpreter")
        if entry.local and not self.holds_all(op):
            for result in op.operation.results:  # values of skipped ops do not exist here
                self.define(result, None)
            return []
        try:
            step = entry.fn(self, op)
        except MultiDimMeshError as err:
            raise self.error(op, str(err)) from None
        if step is None or isinstance(step, list):
            return step or []
        if self.runtime.memory is not None and self._binds:
            operands = list(op.operation.operands)
            bound = [self.use(operands[i]) for i, _ in self.bound_operands(op)]
            if bound:  # (a wrapped step is compiled now: it folds no moves)
                step = _tracked_binds(compile_steps([step])[0], bound, self.runtime.memory)
        if _never_waited(op):
            step = compile_steps([step])[0]
            step = _pending(step, self.use(op.operation.results[0]), self.runtime.pending, self.where(op), name)
        operands = tuple((self._slots[v], self.name(v)) for v in op.operation.operands if v in self._slots)
        step.hir_op = OpInfo(name, self.where(op), operands)
        return [step]

    # ----- values ----------------------------------------------------------------------
    def define(self, value: ir.Value, constant: Any = UNSET) -> int:
        """A new slot for ``value``; ``constant`` pre-fills it in every run's env."""
        slot = len(self._template)
        self._template.append(constant)
        self._slots[value] = slot
        return slot

    def use(self, value: ir.Value) -> int:
        return self._slots[value]

    def share(self, value: ir.Value, same: ir.Value) -> None:
        """``value`` is ``same``'s run-time object (a cast, a memref read as a tensor): it
        reads ``same``'s slot, so passing it on costs no step."""
        self._slots[value] = self._slots[same]

    def env_template(self) -> list:
        """The slot template of the function being compiled (constants pre-filled; it grows
        until the function is compiled, and is then its plan's template)."""
        return self._template

    # ----- destination passing (hir.interpreter.destinations) ------------------------------
    def is_bound(self, alloc: ir.Value) -> bool:
        """Whether allocation ``alloc`` becomes a segment's or compute op's result (its
        alloc has no step)."""
        return alloc in self._binds

    def bound_by(self, alloc: ir.Value) -> ir.Operation | None:
        """The op (a segment call, a compute op) whose result allocation ``alloc`` becomes, if any."""
        bind = self._binds.get(alloc)
        return bind.call if bind is not None else None

    def bound_operands(self, call: ir.OpView) -> list[tuple[int, Bind]]:
        """(operand index, bind) of each destination of ``call`` (a segment call or a compute
        op) that becomes its result."""
        operands = list(call.operation.operands)
        return [
            (i, self._binds[v])
            for i, v in enumerate(operands)
            if v in self._binds and self._binds[v].call == call.operation
        ]

    def site(self, op: ir.Operation) -> tuple:
        """The destination decisions ``op``'s steps follow: bound results, ``out=`` and in-place writes."""
        bound = tuple((i, bind.contiguous) for i, bind in self.bound_operands(op))
        outs = tuple((i, self.destinations.updates(op, i)) for i in self._outs.get(op, []))
        return bound, outs

    def call_results(self, call: ir.OpView) -> list[int]:
        """The slots a call's plan results go to: its results, then its bound destinations."""
        operands = list(call.operation.operands)
        return [self.define(r) for r in call.operation.results] + [
            self.use(operands[i]) for i, _ in self.bound_operands(call)
        ]

    def out_destination(self, result: ir.Value) -> int | None:
        """The slot of the segment argument torch op ``result`` is written into with
        ``out=`` (its materialization then has no step); None when it is computed fresh."""
        argument = self._out_writes.get(result)
        return None if argument is None else self._slots[argument]

    def updates_in_place(self, result: ir.Value) -> bool:
        """Whether torch op ``result`` is its ``self`` operand updated in place (the segment
        argument it writes back, :mod:`hir.interpreter.updates`) rather than an ``out=``."""
        return result in self._updates

    def written_in_place(self, argument: ir.Value) -> bool:
        """Whether segment ``argument`` is written by its producer's ``out=`` already."""
        return argument in self._out_writes.values()

    def returned(self, argument: ir.Value) -> bool | None:
        """For a segment argument that is returned instead of written: whether the result
        must be made contiguous; None when the segment writes it."""
        return self._returned.get(argument)

    def uses(self, op: ir.OpView) -> list[int]:
        return [self._slots[v] for v in op.operation.operands]

    def constant(self, value: ir.Value) -> Any:
        """The compile-time value of ``value`` if it is a constant, else UNSET."""
        return self._template[self._slots[value]]

    def spec(self, value: ir.Value) -> BufferSpec:
        return self._type_spec(value.type)

    def _type_spec(self, t: ir.Type) -> BufferSpec:
        spec = self._specs.get(t)  # (types are uniqued: equal ones hash and compare equal, unprinted)
        if spec is None:
            spec = self._specs[t] = buffer_spec(t, self.rank)
        return spec

    def holds_all(self, op: ir.OpView) -> bool:
        # (an unranked memref is a memref.cast view of a ranked buffer, whose own check decides)
        for value in (*op.operation.operands, *op.operation.results):
            t = value.type
            if is_memref(t) and not isinstance(t, ir.UnrankedMemRefType) and not self._type_spec(t).held:
                return False
        return True

    def add_alias(self, parent: int, view: int) -> None:
        """Record that ``view`` aliases ``parent`` so deallocating the parent kills both."""
        root = next((r for r, views in self._aliases.items() if parent == r or parent in views), parent)
        self._aliases.setdefault(root, []).append(view)

    def aliases(self, slot: int) -> list[int]:
        return self._aliases.get(slot, [])

    # ----- diagnostics -----------------------------------------------------------------
    def name(self, value: ir.Value) -> str:
        """``value`` as it prints (``%3``, ``%arg0``). One ``ir.AsmState`` numbers the whole
        module once: ``Value.get_name()`` without one numbers (and verifies) the enclosing
        function on every call, quadratic in a model's size."""
        if self._asm is None:
            self._asm = ir.AsmState(self.module.operation)
        return value.get_name(self._asm)

    def where(self, op: ir.OpView) -> str:
        """``op``'s location as ``file:line:col``, formatted once per location (ops share a few)."""
        loc = op.location
        text = self._where.get(loc.attr)
        if text is None:
            text = self._where[loc.attr] = format_location(loc, self.source_name)
        return text

    def error(self, op: ir.OpView, msg: str) -> HirError:
        return HirError(f"{self.where(op)}: error: '{op.operation.name}' {msg}")
