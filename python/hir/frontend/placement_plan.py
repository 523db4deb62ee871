"""The placer's decisions as data (:class:`PlacementPlan`): the steps the partitioner builds,
in program order (hir compute ops in their plain or contraction form, kernel segments,
segment ops summed over a mesh axis), each with the placement it reads its operands as."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir

from hir.dialect import Sharding
from hir.frontend.placements import DeviceGrid
from hir.frontend.strategies import ComputeSpec


@dataclass(frozen=True)
class Gathered:
    """nvFuser's AG + op form (1-D mesh): operand 0, split on its row axis ``lead``, is
    gathered by a stream-parallel ``hir.set`` that the op consumes slice by slice."""

    lead: int


@dataclass(frozen=True)
class PartialSum:
    """A contraction over dims split on ``mesh_axis``: local products into a leading mesh
    axis, summed over it (an allreduce or reduce-scatter). ``others``: the product's split
    on the other mesh axes; ``stream``: nvFuser's matmul + reduce-scatter form, scattered
    onto the rows (axis ``row_axis`` of the result)."""

    mesh_axis: int
    others: tuple
    stream: bool
    row_axis: int


@dataclass
class ComputeStep:
    """An hir compute op: ``reads`` is the placement each of ``spec.inputs + spec.trailing``
    is read as (a resharding where it differs from the value's); ``form`` None for the op
    itself on those buffers."""

    op: ir.Operation
    spec: ComputeSpec
    reads: list
    form: None | Gathered | PartialSum = None


@dataclass
class PartialStep:
    """A segment op whose strategy answers a partial sum over mesh axis ``mesh_axis`` (a
    vocabulary-split embedding; of several results, some: an MoE weight's gradient and its
    input's): ``form`` (its strategy's ``partial_form``) computes each device's part from
    ``inputs`` read as ``reads``; ``others``: each result's splits on the other mesh axes;
    ``summed``: whether each result is a partial sum (else it is local, placed as the plan
    says). A sum lands as the result's placement says (see :mod:`hir.frontend.device_parts`)."""

    op: ir.Operation
    inputs: list
    reads: list
    mesh_axis: int
    others: tuple
    form: Callable
    summed: tuple = (True,)


@dataclass
class SegmentStep:
    """A kernel segment of ``ops`` reading ``inputs`` placed as ``reads`` and writing
    ``outputs`` (local shards when every op had a strategy, else replicated copies)."""

    ops: list
    inputs: list
    outputs: list
    reads: list


@dataclass
class PlacementPlan:
    """What the placer decided for one function (``grid`` None: unsharded, every placement
    None): each tensor value's placement, the steps in program order, the placement each
    returned value is returned as, and the listing of which strategy placed what."""

    grid: DeviceGrid | None
    placements: dict
    steps: list
    results: list
    listing: list = field(default_factory=list)

    def of(self, value: ir.Value) -> Sharding | None:
        """``value``'s placement (a value no op placed, e.g. a constant: replicated)."""
        if value in self.placements:
            return self.placements[value]
        return None if self.grid is None else self.grid.sharding((None,) * self.grid.rank)

    def on_mesh(self, value: ir.Value) -> Sharding:
        """:meth:`of` ``value`` in a plan with a mesh, where every value is placed."""
        placed = self.of(value)
        assert placed is not None, "a placement asked of a plan without a mesh"
        return placed

    def reshardings(self) -> list[tuple[ir.Value, Sharding | None, Sharding | None]]:
        """(value, its placement, the placement a step reads it as) where the two differ."""
        out = []
        for step in self.steps:
            values = step.spec.inputs + step.spec.trailing if isinstance(step, ComputeStep) else step.inputs
            out += [(v, self.of(v), read) for v, read in zip(values, step.reads) if read != self.of(v)]
        return out


def describe_output(output: Any) -> str:
    """A strategy's output split (a tuple: one per result) as the listing shows it (-1: replicated)."""
    return (
        ", ".join(map(describe_output, output)) if isinstance(output, tuple) else str(-1 if output is None else output)
    )


def describe(sharding: Sharding | None) -> str:
    """A placement's splits as the listing shows them (-1: whole on that mesh axis)."""
    return "-" if sharding is None else str([-1 if s is None else s for s in sharding.splits])
