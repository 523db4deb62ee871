"""How :class:`~hir.frontend.placer.Placer` places a kernel segment (a run of ops inlined
together): its boundary (what it reads from outside and what is read of it outside), the
placements that propagate through it along one mesh axis, and the segment's placement from
them (local shards in, or replicated copies)."""

from collections.abc import Callable, Sequence

from torch_mlir import ir

from hir.core import HirError
from hir.dialect import Sharding
from hir.dialect.base import DYNAMIC
from hir.frontend.packed import regroup
from hir.frontend.placement_plan import SegmentStep, describe_output
from hir.frontend.placements import DeviceGrid
from hir.frontend.segment_placement import Cut, PartialOp, operands_of, read_slices
from hir.frontend.strategies import ComputeSpec, NoRule, OpPlacement, Strategy, op_key
from hir.frontend.torch_ir import LIST_CONSTRUCT, is_cloned_value, is_constant, is_tensor, owner, shape_of, user


class SegmentBoundary:
    """Base of :class:`~hir.frontend.placer.Placer`: a segment's boundary, the placements
    through it and its placement (methods of the placer, in a module of their own for size)."""

    # What these methods use of the placer (its state and methods, see Placer).
    grid: DeviceGrid | None
    rank: int
    replicated: Sharding | None
    placements: dict
    origins: dict
    listing: list[str]
    steps: list
    of: Callable[[ir.Value], Sharding | None]
    split: Callable[[ir.Value, int], int | None]
    pieces: Callable[[ir.Value, int], int]
    sharding: Callable[..., Sharding | None]
    read_as: Callable[[ir.Value, Sequence], Sharding | None]
    error: Callable[[ir.Operation, str], HirError]
    _note: Callable[[ir.Operation, str], None]
    _refuse: Callable[[ir.Operation, NoRule], None]
    _carry_origin: Callable[[list, list], None]
    _packed: Callable[..., int]
    _place: Callable[[ir.Operation, ComputeSpec | None, list, int, str], tuple[OpPlacement, Strategy]]
    _partial_op: Callable[[PartialOp], None]

    def _boundary(self, run: list) -> tuple[list, list, list]:
        """(tensors the segment reads from outside, its results used outside, the size
        computations cloned into it)."""
        inside = {r for op in run for r in op.results}
        inputs: list = []
        sizes: list = []

        def read(op: ir.Operation, v: ir.Value) -> None:
            if v in inside or v in inputs:
                return
            if is_cloned_value(v):  # cloned in; a size reads its tensors' shapes
                if not is_constant(owner(v)):
                    sizes.append(owner(v))
                for w in owner(v).operands:
                    read(op, w)
                return
            if not is_tensor(v):
                raise self.error(
                    op,
                    f"takes {v.get_name()} ({v.type}) from outside its segment; only tensors cross segment boundaries",
                )
            inputs.append(v)

        for op in run:
            for v in op.operands:
                read(op, v)
        members = set(run)
        outputs = [r for op in run for r in op.results if any(user(use) not in members for use in r.uses)]
        for r in outputs:
            if not is_tensor(r):
                raise self.error(
                    owner(r),
                    f"result {r.get_name()} ({r.type}) is used outside "
                    "its segment; only tensors cross segment boundaries",
                )
        return inputs, outputs, sizes

    def _propagate(self, run: list, inputs: list, k: int) -> tuple[dict, dict]:
        """The split on mesh axis ``k`` of every tensor (and tensor list) result of ``run``,
        from its inputs' (constants are replicated), and the packed pieces of each; NoRule
        when an op cannot stay local."""
        out: dict = {v: self.split(v, k) for v in inputs}
        pieces = {v: self.pieces(v, k) for v in inputs}
        read: set = set()
        for op in run:
            results = [r for r in op.results if is_tensor(r) or str(r.type).startswith("!torch.list<vtensor")]
            if not results or op.name == LIST_CONSTRUCT:
                continue
            operands = operands_of(op, out)
            counts = [pieces.get(v, 1) for v, _ in operands]
            splits, n = [None] * len(results), [1] * len(results)
            if max(counts, default=1) > 1:
                self._carry_origin([v for v, _ in operands], results)
            if all(s is None for _, s in operands):
                pass
            elif (grouped := regroup(op, operands, counts)) is not None:
                split, parts = grouped
                splits, n = [split] * len(results), [parts] * len(results)
                self._note(
                    op,
                    f"{'packs' if parts > 1 else 'cuts'} a packed split "
                    f"({max(counts)} -> {parts} pieces) on mesh axis {k}: {split}",
                )
            else:
                try:
                    placement, strategy = self._place(op, None, operands, k, op_key(op))
                except (ValueError, TypeError, AttributeError, IndexError):
                    raise NoRule(f"{op.name}: operands that are not constants") from None
                except NoRule as why:
                    why.op = op  # the error names this op, not the segment's first
                    raise
                local = placement.inputs == tuple(s for _, s in operands) or read_slices(
                    op, operands, placement, inputs, read, out
                )
                if placement.partial(len(results)) and local and strategy.partial_form is not None:
                    raise PartialOp(op, k, strategy.partial_form)
                if placement.partial(len(results)) or not local:
                    raise NoRule(f"{op.name}: {strategy.name} reshards its operands, which a segment cannot")
                splits, apart = placement.outputs(len(results)), isinstance(placement.output, tuple)
                n = [
                    self._packed(op, operands, counts, placement, list(placement.inputs), i if apart else 0)
                    for i in range(len(results))
                ]
                self._note(
                    op,
                    f"by {strategy.name} on mesh axis {k}: "
                    f"{[-1 if s is None else s for _, s in operands]} -> {describe_output(placement.output)}",
                )
            for r, split, pieces_of_r in zip(results, splits, n):
                out[r], pieces[r] = split, pieces_of_r
            read.update(v for v, _ in operands)
        return out, pieces

    def segment(self, run: list) -> None:
        """Place a kernel segment of the ops of ``run``: local shards in when every op has a
        strategy on every mesh axis that keeps its operands as placed, else replicated copies."""
        if not run:
            return
        inputs, outputs, sizes = self._boundary(run)
        if not outputs:
            return  # nothing of it is used (e.g. shape assertions): dead code
        found: list | None = None
        if self.grid is not None:
            noted = len(self.listing)
            try:
                found = [self._propagate(run, inputs, k) for k in range(self.rank)]
            except Cut as cut:
                del self.listing[noted:]
                at = run.index(cut.op)
                self.segment(run[:at])
                self.segment(run[at:])
                return
            except PartialOp as partial:  # a step of its own, between the segments before and after it
                del self.listing[noted:]
                at = run.index(partial.op)
                self.segment(run[:at])
                self._partial_op(partial)
                self.segment(run[at + 1 :])
                return
            except NoRule as why:
                del self.listing[noted:]
                self._refuse(run[0] if why.op is None else why.op, why)
                self._note(run[0], f"a segment of {len(run)} op(s) reads replicated copies (fallback: {why})")
                packed = next((v for v in inputs if (placed := self.of(v)) is not None and placed.packed), None)
                if packed is not None:
                    raise self.error(
                        run[0],
                        f"(a segment of {len(run)} op(s)) reads the packed "
                        f"split of '{self.origins.get(packed, 'a packed entry')}' "
                        f"(a packed_colwise / packed_rowwise plan entry), but cannot compute on it locally: {why}",
                    ) from None
        for op in run:  # every tensor inside gets its placement (for local types)
            for r in op.results:
                if is_tensor(r):
                    self.placements[r] = (
                        self.replicated
                        if found is None
                        else self.sharding(tuple(f[r] for f, _ in found), {f[r]: n[r] for f, n in found if n[r] > 1})
                    )
        reads = [self.replicated if found is None else self.read_as(v, tuple(f[v] for f, _ in found)) for v in inputs]
        for v, read in zip(inputs, reads):
            if (
                sizes
                and read is not None
                and any(d == DYNAMIC and read.parts(i) > 1 for i, d in enumerate(shape_of(v)))
            ):
                raise self.error(
                    sizes[0],
                    "computes a size in a kernel segment that reads a dynamic dim split over "
                    "devices; that is not supported yet: keep the split dim static, or replicate it",
                )
        self.steps.append(SegmentStep(run, inputs, outputs, reads))
