"""The two walks :class:`~hir.frontend.placer.Placer` makes over a kernel segment (a run of
ops inlined together): its boundary (what it reads from outside and what is read of it
outside) and the placements that propagate through it along one mesh axis."""

from torch_mlir import ir

from hir.frontend.packed import regroup
from hir.frontend.placement_plan import describe_output
from hir.frontend.segment_placement import PartialOp, operands_of, read_slices
from hir.frontend.strategies import NoRule, op_key
from hir.frontend.torch_ir import LIST_CONSTRUCT, is_cloned_value, is_constant, is_tensor, owner, user


class SegmentBoundary:
    """Mixin of :class:`~hir.frontend.placer.Placer`: a segment's boundary and the
    placements through it (methods of the placer, in a module of their own for size)."""

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
                raise self.error(op, f"takes {v.get_name()} ({v.type}) from outside its segment; only tensors cross segment boundaries")
            inputs.append(v)

        for op in run:
            for v in op.operands:
                read(op, v)
        members = set(run)
        outputs = [r for op in run for r in op.results if any(user(use) not in members for use in r.uses)]
        for r in outputs:
            if not is_tensor(r):
                raise self.error(owner(r), f"result {r.get_name()} ({r.type}) is used outside its segment; only tensors cross segment boundaries")
        return inputs, outputs, sizes

    def _propagate(self, run: list, inputs: list, k: int) -> tuple[dict, dict]:
        """The split on mesh axis ``k`` of every tensor (and tensor list) result of ``run``,
        from its inputs' (constants are replicated), and the packed pieces of each; NoRule
        when an op cannot stay local."""
        out = {v: self.split(v, k) for v in inputs}
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
            elif regroup(op, operands, counts) is not None:
                (split, parts), = [regroup(op, operands, counts)]
                splits, n = [split] * len(results), [parts] * len(results)
                self._note(op, f"{'packs' if parts > 1 else 'cuts'} a packed split ({max(counts)} -> {parts} pieces) on mesh axis {k}: {split}")
            else:
                try:
                    placement, strategy = self._place(op, None, operands, k, op_key(op))
                except (ValueError, TypeError, AttributeError, IndexError):
                    raise NoRule(f"{op.name}: operands that are not constants") from None
                except NoRule as why:
                    why.op = op  # the error names this op, not the segment's first
                    raise
                local = placement.inputs == tuple(s for _, s in operands) or read_slices(op, operands, placement, inputs, read, out)
                if placement.partial(len(results)) and local and strategy.partial_form is not None:
                    raise PartialOp(op, k, strategy.partial_form)
                if placement.partial(len(results)) or not local:
                    raise NoRule(f"{op.name}: {strategy.name} reshards its operands, which a segment cannot")
                splits, apart = placement.outputs(len(results)), isinstance(placement.output, tuple)
                n = [self._packed(op, operands, counts, placement, list(placement.inputs), i if apart else 0) for i in range(len(results))]
                self._note(op, f"by {strategy.name} on mesh axis {k}: {[-1 if s is None else s for _, s in operands]} -> {describe_output(placement.output)}")
            for r, split, pieces_of_r in zip(results, splits, n):
                out[r], pieces[r] = split, pieces_of_r
            read.update(v for v, _ in operands)
        return out, pieces
