"""Deciding where every tensor of an imported function lives: :class:`Placer` walks the
torch-dialect function once, groups its ops as the partitioner will build them (hir compute
ops, and kernel segments of the other ops in between), asks the strategy registry
(:mod:`hir.frontend.strategies`) for each op's placement, mesh axis by mesh axis, and
returns a :class:`PlacementPlan`: data only (every value's :class:`~hir.dialect.Sharding`,
the placement each step reads its operands as, the form of each compute op). The
:class:`~hir.frontend.partition.Partitioner` builds the IR from it; the placer builds nothing.

A missing strategy, or one that refuses the operands' placements (:class:`NoRule`), falls
back here and only here, as DTensor redistributes to ``Replicate()``: a compute op reads
replicated operands; a kernel segment with such an op reads replicated copies of all its
inputs (a segment cannot reshard in the middle). With ``fallback=False`` (a training step:
a fallback there would hold whole gradients and optimizer state on every device) it is an
error naming the op instead. A segment op that reads a replicated operand as split (a
causal mask made whole, read by attention on a split batch) reads a slice of it: the
segment's input read split, or the segment ends before that op. ``HIR_DUMP=placements`` prints which
strategy placed what (:attr:`PlacementPlan.listing`).
"""

import sys
from collections.abc import Sequence

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.core import HirError
from hir.dialect import Sharding
from hir.dialect.context import format_location
from hir.frontend.packed import PackedError, pieces_after
from hir.frontend.placement_plan import (
    ComputeStep,
    Gathered,
    PartialStep,
    PartialSum,
    PlacementPlan,
    SegmentStep,
    describe,
)
from hir.frontend.placements import DeviceGrid
from hir.frontend.segment_boundary import SegmentBoundary
from hir.frontend.segment_placement import PartialOp, operands_of, segment_partial, split_before
from hir.frontend.strategies import (
    PARTIAL,
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    Strategy,
    compute_spec,
    op_key,
    strategy_for,
)
from hir.frontend.torch_ir import (
    hoistable_with_parameters,
    is_cloned,
    is_cloned_value,
    is_tensor,
    rank_of,
    shape_of,
    user,
)
from hir.passes.pass_manager import dumping


class Placer(SegmentBoundary):
    """Places the values of one imported function (see the module docstring): ``arguments``
    holds the placement of each function argument, ``outputs`` those requested for results
    (by index); ``grid`` None places nothing (one device, full tensors)."""

    def __init__(
        self,
        torch_func: func.FuncOp,
        grid: DeviceGrid | None,
        arguments: Sequence[Sharding | None],
        outputs: dict,
        source_name: str = "<torch>",
        names: Sequence[str] = (),
        fallback: bool = True,
    ) -> None:
        self.func, self.grid, self.source_name, self.fallback = torch_func, grid, source_name, fallback
        self.rank = grid.rank if grid is not None else 0
        self.replicated = self.sharding((None,) * self.rank)
        args = list(torch_func.regions[0].blocks[0].arguments)
        self.placements: dict = dict(zip(args, arguments))
        # the state entry each packed value comes from (names: the arguments', for errors)
        self.origins = {a: n for a, n, p in zip(args, names, arguments) if p is not None and p.packed}
        self.state = args[: len(names)]
        self.outputs = outputs
        self.steps: list = []
        self.listing: list[str] = []

    def sharding(self, splits: Sequence, packed: dict | None = None) -> Sharding | None:
        return None if self.grid is None else self.grid.sharding(splits, packed)

    def pieces(self, value: ir.Value, k: int) -> int:
        """How many packed pieces ``value``'s split on mesh axis ``k`` is made of (1: none)."""
        split = self.split(value, k)
        return 1 if split is None else self._on_mesh(value).pieces(split)

    def read_as(self, value: ir.Value, splits: Sequence) -> Sharding | None:
        """The placement ``value`` is read as when split as ``splits``: its own (packed
        pieces kept) when the splits are its own."""
        own = self.of(value)
        return own if own is not None and tuple(own.splits) == tuple(splits) else self.sharding(splits)

    def _packed(
        self, op: ir.Operation, operands: list, pieces: list, placement: OpPlacement, read: list, result: int = 0
    ) -> int:
        """:func:`~hir.frontend.packed.pieces_after`, its refusal an error naming the packed entry."""
        try:
            return pieces_after(op, operands, pieces, placement, read, result)
        except PackedError as why:
            origin = next(
                (self.origins[v] for (v, _), n in zip(operands, pieces) if n > 1 and v in self.origins),
                "a packed entry",
            )
            raise self.error(
                op,
                f"reads the packed split of '{origin}' (a packed_colwise / packed_rowwise "
                f"plan entry: each device holds its part of every piece) and {why}; "
                "hir computes on a packed value through ops that keep the packed dim whole or cut it into its pieces",
            ) from None

    def _carry_origin(self, values: list, results: list) -> None:
        origin = next((self.origins[v] for v in values if v in self.origins), None)
        if origin is not None:
            self.origins.update(dict.fromkeys(results, origin))

    def of(self, value: ir.Value) -> Sharding | None:
        return self.placements.get(value, self.replicated)

    def split(self, value: ir.Value, k: int) -> int | None:
        return self._on_mesh(value).splits[k]

    def _on_mesh(self, value: ir.Value) -> Sharding:
        """:meth:`of` ``value`` where a question is per mesh axis: only asked with a mesh
        (``rank`` 0 without), where every value is placed."""
        placed = self.of(value)
        assert placed is not None, "a per-mesh-axis question without a mesh"
        return placed

    def extent(self, k: int) -> int:
        """The devices along mesh axis ``k`` (only asked with a mesh)."""
        assert self.grid is not None, "a per-mesh-axis question without a mesh"
        return self.grid.shape[k]

    def error(self, op: ir.Operation, msg: str) -> HirError:
        return HirError(f"{format_location(op.location, self.source_name)}: error: '{op.name}' {msg}")

    def _refuse(self, op: ir.Operation, why: NoRule) -> None:
        if not self.fallback and self.grid is not None:
            raise self.error(
                op,
                f"has no placement for its operands' splits ({why}); add a "
                "strategy (hir.frontend.strategies) or change the placements",
            )

    def _note(self, op: ir.Operation, what: str) -> None:
        self.listing.append(f"{format_location(op.location, self.source_name)}: {op.name}: {what}")

    def plan(self, mutated: Sequence[int] = ()) -> PlacementPlan:
        """Place every op of the function (mutated: the arguments its first results write)."""
        ops = [op.operation for op in self.func.regions[0].blocks[0].operations]
        # Ops that read only the state the function does not write (weights; what they
        # compute from them, e.g. a fused projection's concatenated weight) form segments
        # of their own, before the segment of the ops around them: hir-hoist-parameter-work
        # then runs them once per set of weights instead of every call.
        parameters = set(self.state) - {self.state[i] for i in mutated if i < len(self.state)}
        run: list = []
        hoistable: list = []
        for op in ops[:-1]:
            if is_cloned(op):
                continue
            spec = compute_spec(op)
            if spec is None:
                read = [v for v in op.operands if not is_cloned_value(v)]
                if read and all(v in parameters for v in read) and hoistable_with_parameters(op, parameters):
                    hoistable.append(op)
                    parameters.update(op.results)
                else:
                    run.append(op)
                continue
            self.segment(hoistable)
            self.segment(run)
            run, hoistable = [], []
            self.compute(op, spec)
        self.segment(hoistable)
        self.segment(run)
        returned = list(ops[-1].operands)[len(mutated) :]
        results = [self.outputs.get(i, self.of(v)) for i, v in enumerate(returned)]
        plan = PlacementPlan(self.grid, self.placements, self.steps, results, self.listing)
        if self.grid is not None:
            self.listing += [
                f"resharding {v.get_name()}: {describe(have)} -> {describe(read)}"
                for v, have, read in plan.reshardings()
            ]

        if dumping("placements"):
            print("\n".join(f"placements: {line}" for line in self.listing), file=sys.stderr)
        return plan

    # ----- compute ops ------------------------------------------------------------------
    def _place(
        self, op: ir.Operation, spec: ComputeSpec | None, operands: list, k: int, name: str
    ) -> tuple[OpPlacement, Strategy]:
        """Op ``name``'s placement on mesh axis ``k`` and the strategy that gave it; raises
        NoRule when there is none (the caller falls back)."""
        call = OpCall(op, operands, self.extent(k), spec, k, self.rank)
        strategy = strategy_for(name)
        if strategy is None:
            raise NoRule(f"no placement strategy for {name}")
        return strategy.place(call), strategy

    def compute(self, op: ir.Operation, spec: ComputeSpec) -> None:
        values = spec.inputs + spec.trailing
        name = spec.op_class.OPERATION_NAME
        per_axis, by = [], []
        for k in range(self.rank):
            call_operands = [(v, self.split(v, k)) for v in values]
            try:
                placement, strategy = self._place(op, spec, call_operands, k, name)
                strategy = strategy.name
            except NoRule as why:  # DTensor's fallback: redistribute to Replicate()
                partial = segment_partial(
                    op, {v: self.split(v, k) for v in op.operands if is_tensor(v)}, k, self.extent(k)
                )
                if partial is not None:  # a sum the compute op cannot split (over a split dim and others)
                    self._partial_op(partial)
                    return
                self._refuse(op, why)
                placement, strategy = (
                    OpCall(op, call_operands, self.extent(k), spec).replicated(),
                    f"replicated (fallback: {why})",
                )
            per_axis.append(placement)
            by.append(strategy)
        partial = [k for k, p in enumerate(per_axis) if p.output is PARTIAL]
        if len(partial) > 1:
            raise self.error(
                op, f"contracts a dimension split over mesh axes {partial}; split a contraction over one mesh axis"
            )
        pieces = [
            self._packed(
                op, [(v, self.split(v, k)) for v in values], [self.pieces(v, k) for v in values], p, list(p.inputs)
            )
            for k, p in enumerate(per_axis)
        ]
        self._carry_origin(values, [op.results[0]])
        if partial:
            self._partial(op, spec, partial[0], per_axis)
        else:
            reads = [self.read_as(v, tuple(p.inputs[i] for p in per_axis)) for i, v in enumerate(values)]
            self.placements[op.results[0]] = self.sharding(
                tuple(p.output for p in per_axis), {p.output: n for p, n in zip(per_axis, pieces) if n > 1}
            )
            lead = self._gathered_rows(spec, reads[0])
            form = None if lead is None else Gathered(lead)
            self.steps.append(ComputeStep(op, spec, reads, form))
        if self.grid is not None:
            step = self.steps[-1]
            self._note(
                op,
                f"as {name} by {', '.join(by)}: {' x '.join(describe(r) for r in step.reads)} -> "
                f"{describe(self.of(op.results[0]))}{'' if step.form is None else f' ({type(step.form).__name__})'}",
            )

    def _streams(self) -> bool:
        """The P2P forms need one team: a 1-D mesh of several devices."""
        return self.rank == 1 and self.extent(0) > 1

    def _gathered_rows(self, spec: ComputeSpec, wanted: Sharding | None) -> int | None:
        """The row axis of operand 0 of a contraction whose row-split operand 0 (split on an
        axis it does not contract: tokens ``[T, D]`` on 0, ``[B, S, D]`` on 1) must be
        gathered (the all-gather side of sequence parallelism), else None."""
        x = spec.inputs[0]
        split = self.split(x, 0) if self._streams() else None
        if spec.streams_rows and split is not None and split < rank_of(x) - 1 and wanted == self.replicated:
            return split
        return None

    def _partial(self, op: ir.Operation, spec: ComputeSpec, k: int, per_axis: list) -> None:
        """A contraction over dims split on mesh axis ``k``: the products read the operands'
        own splits on ``k`` (the other axes as their strategies say); the sum lands where
        the consumer wants it (:meth:`_partial_target`)."""
        x, w = spec.inputs
        out = op.results[0]
        others = tuple(None if j == k else p.output for j, p in enumerate(per_axis))

        def operand(i: int, value: ir.Value) -> Sharding | None:
            return self.read_as(value, tuple(per_axis[j].inputs[i] for j in range(self.rank)))

        shape = shape_of(out)
        target = self._partial_target(out, k)
        if spec.trailing and target is not None and target == len(shape) - 1:
            target = None  # the bias is added after the sum, to whole rows
        self.placements[out] = self.sharding(tuple(target if j == k else s for j, s in enumerate(others)))
        stream = target is not None and target < len(shape) - 1 and self._streams() and rank_of(x) == len(shape)
        row_axis = target if stream and target is not None else 0
        reads = [operand(0, x), operand(1, w)] + [self.replicated] * len(spec.trailing)
        self.steps.append(ComputeStep(op, spec, reads, PartialSum(k, others, stream, row_axis)))

    def _partial_target(self, out: ir.Value, k: int, depth: int = 0) -> int | None:
        """Where the consumer wants the sum on mesh axis ``k``: split as a requested
        ``Shard(dim)`` output, or as a compute consumer's strategy reads it given its other
        operands (the residual add of sequence parallelism: ``[T, D]`` on axis 0), also
        through views of it (a weight's gradient transposed, then read as its rows): a
        reduce-scatter; else replicated."""
        for use in out.uses:
            consumer = user(use)
            if consumer.name == func.ReturnOp.OPERATION_NAME:
                index = list(consumer.operands).index(out)
                wanted = self.outputs.get(index)
                if wanted is not None and wanted.splits[k] is not None:
                    return wanted.splits[k]
                continue
            spec = compute_spec(consumer)
            if spec is None and depth < 4 and len(consumer.results) == 1 and is_tensor(consumer.results[0]):
                split = split_before(
                    consumer, out, self._partial_target(consumer.results[0], k, depth + 1), self.extent(k)
                )
                if split is not None:
                    return split
            if spec is None or out not in spec.inputs:
                continue
            values = spec.inputs + spec.trailing
            try:
                placement, _ = self._place(
                    consumer,
                    spec,
                    [(v, None if v == out else self.split(v, k)) for v in values],
                    k,
                    spec.op_class.OPERATION_NAME,
                )
            except NoRule:
                continue
            wanted_split = placement.inputs[values.index(out)]
            if wanted_split is not None and placement.output is not PARTIAL:
                return wanted_split
        return None

    def _partial_op(self, partial: PartialOp) -> None:
        """A segment op placed as a partial sum on mesh axis ``partial.axis`` (local on the
        others): a :class:`PartialStep`, each sum landing where the consumers want it
        (:meth:`_partial_target`), a result that is no sum placed as the strategy says; a
        replicated segment of its own when another mesh axis has no local placement for it."""
        op, k = partial.op, partial.axis
        inputs, outputs, _ = self._boundary([op])
        count, per_axis, pieces = len(op.results), [], [1] * len(op.results)
        try:
            for j in range(self.rank):
                operands = operands_of(op, {v: self.split(v, j) for v in inputs})
                if all(s is None for _, s in operands):
                    per_axis.append((None,) * count)
                    continue
                placement, strategy = self._place(op, None, operands, j, op_key(op))
                if j != k and (placement.partial(count) or placement.inputs != tuple(s for _, s in operands)):
                    raise NoRule(f"{op.name}: {strategy.name} on mesh axis {j} reshards its operands")
                per_axis.append(placement.outputs(count))
                if j == k:
                    pieces = [
                        self._packed(
                            op, operands, [self.pieces(v, k) for v, _ in operands], placement, list(placement.inputs), i
                        )
                        for i in range(count)
                    ]
        except NoRule as why:
            self._refuse(op, why)
            self._note(op, f"a segment of 1 op reads replicated copies (fallback: {why})")
            for r in op.results:
                self.placements[r] = self.replicated
            self.steps.append(SegmentStep([op], inputs, outputs, [self.replicated] * len(inputs)))
            return
        summed = tuple(per_axis[k][i] is PARTIAL for i in range(count))
        others = tuple(tuple(None if j == k else p[i] for j, p in enumerate(per_axis)) for i in range(count))
        for i, result in enumerate(op.results):
            own = per_axis[k][i]
            if summed[i]:
                own = self._partial_target(result, k)
            self.placements[result] = self.sharding(
                tuple(own if j == k else s for j, s in enumerate(others[i])),
                {own: pieces[i]} if pieces[i] > 1 else None,
            )
        self.steps.append(PartialStep(op, inputs, [self.of(v) for v in inputs], k, others, partial.form, summed))
        self._note(
            op,
            f"a partial sum over mesh axis {k} ({partial.form.__name__}): "
            f"{' x '.join(describe(self.of(v)) for v in inputs)} "
            f"-> {', '.join(describe(self.of(r)) for r in op.results)}",
        )
