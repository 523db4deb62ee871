"""Communications. Each collective reads ``input`` and writes ``output`` (buffers typed with
their global shape and ``#hir.shard`` placement) and returns a ``!hir.work`` token that
``hir.wait`` consumes. ``team`` lists the participating devices; on a multi-dimensional mesh
it is a device layout whose rows are the mesh's lines along one mesh axis, each rank taking
part with its own line (``dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>``: 0 with 1, 2 with 3), or
along several (``dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>`` on a 2x2 mesh: the buffers split by
all of them, or none, as the 1-D view of each line). The
other attributes follow nvFuser's Communication (type, team, root, reduction, axis, backend):

    %w = "hir.allgather"(%shard, %full) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
        : (memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<16x8xf32>) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()

Axis conventions (all in the input's coordinates):
  allgather / gather   ``axis``: the axis the input is split along; the output holds it whole.
  scatter              ``axis``: the axis the output is split along; the input holds it whole.
  allreduce / reduce   ``axis``: the split input axis reduced across the team; the output drops it.
  reduce_scatter       ``axis`` as for allreduce, plus ``scatter_axis``: the input axis the
                       output is split along (nvFuser's adjusted scattered axis).
"""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, WorkType, check_shape, work_type
from hir.dialect.checks import fail, int_attr, memref_type, str_attr
from hir.dialect.collective import BACKENDS, CollectiveOp, split_axis


class AllgatherOp(CollectiveOp, name="allgather"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    PEER_AXIS_ATTR = "axis"
    UNEVEN_SPLITS = True  # the input's parts may differ in extent (sharded_dims_offsets)

    def check_collective(self) -> None:
        axis = self.checked_axis()
        self.require_input_split(axis)
        self.require_team_is_input_mesh()
        check_shape(self.out_type.shape, self.in_type.shape, "output")
        self.require_not_split("output", self.out_sharding, axis)


class AllreduceOp(CollectiveOp, name="allreduce"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    reduction: ir.StringAttr = ext.attribute(kw_only=True)
    REDUCES_AXIS = True
    RESULT_IN_INPUT = True

    def check_collective(self) -> None:
        self.checked_reduction()
        axis = self.checked_axis()
        self.require_input_split(axis)
        self.require_team_is_input_mesh()
        check_shape(self.out_type.shape, self.reduced_shape(axis), "output")
        self.require_not_split("output", self.out_sharding)


class ReduceScatterOp(CollectiveOp, name="reduce_scatter"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    scatter_axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    reduction: ir.StringAttr = ext.attribute(kw_only=True)
    REDUCES_AXIS = True
    PEER_AXIS_ATTR = "scatter_axis"

    def check_collective(self) -> None:
        self.checked_reduction()
        axis = self.checked_axis()
        scatter_axis = self.checked_axis("scatter_axis")
        if scatter_axis == axis:
            fail(f"scatter_axis must differ from the reduced axis {axis}")
        self.require_input_split(axis)
        self.require_team_is_input_mesh()
        check_shape(self.out_type.shape, self.reduced_shape(axis), "output")
        out_axis = scatter_axis - (1 if axis < scatter_axis else 0)
        if split_axis(self.out_sharding) != out_axis:
            fail(f"output must be split along axis {out_axis} (input axis {scatter_axis} once axis {axis} is reduced)")


class RootSendsOp(CollectiveOp):
    """Broadcast and scatter: the root holds the input; every output holder is in the team
    (nvFuser: team = receiver mesh + root, so other senders stay out)."""

    def check_meshes(self) -> None:
        self.require_mesh_in_team("output", self.out_sharding)
        self.require_on_mesh("input", self.in_sharding, self.root_device, "root")


class RootReceivesOp(CollectiveOp):
    """Gather and reduce: every input holder is in the team and the root receives; nvFuser
    emits one per receiver, so the other receivers stay out."""

    def check_meshes(self) -> None:
        self.require_mesh_in_team("input", self.in_sharding)
        self.require_on_mesh("output", self.out_sharding, self.root_device, "root")


class BroadcastOp(RootSendsOp, name="broadcast"):
    """With a team layout (a multi-D mesh) each line broadcasts from its own root:
    ``root = array<i64: ...>``, one device per row."""

    root: Any = ext.attribute(kw_only=True)
    ROOT_PER_TEAM = True

    def check_collective(self) -> None:
        self.checked_root()
        check_shape(self.out_type.shape, self.in_type.shape, "output")
        self.require_not_split("input", self.in_sharding)
        self.require_not_split("output", self.out_sharding)


class ScatterOp(RootSendsOp, name="scatter"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    root: ir.IntegerAttr = ext.attribute(kw_only=True)

    def check_collective(self) -> None:
        self.checked_root()
        axis = self.checked_axis()
        check_shape(self.out_type.shape, self.in_type.shape, "output")
        self.require_not_split("input", self.in_sharding)
        if split_axis(self.out_sharding) != axis:
            fail(f"output must be split along axis {axis}, got {self.out_type}")


class GatherOp(RootReceivesOp, name="gather"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    root: ir.IntegerAttr = ext.attribute(kw_only=True)

    def check_collective(self) -> None:
        self.checked_root()
        axis = self.checked_axis()
        self.require_input_split(axis)
        check_shape(self.out_type.shape, self.in_type.shape, "output")
        self.require_not_split("output", self.out_sharding)


class ReduceOp(RootReceivesOp, name="reduce"):
    axis: ir.IntegerAttr = ext.attribute(kw_only=True)
    root: ir.IntegerAttr = ext.attribute(kw_only=True)
    reduction: ir.StringAttr = ext.attribute(kw_only=True)
    REDUCES_AXIS = True

    def check_collective(self) -> None:
        self.checked_reduction()
        self.checked_root()
        axis = self.checked_axis()
        self.require_input_split(axis)
        check_shape(self.out_type.shape, self.reduced_shape(axis), "output")
        self.require_not_split("output", self.out_sharding)


class SendRecvOp(CollectiveOp, name="send_recv"):
    """nvFuser SendRecv: ``team = [sender, receiver]``, ``root`` = the sender; the sender's
    local ``input`` lands in the receiver's local ``output``."""

    root: ir.IntegerAttr = ext.attribute(kw_only=True)

    def check_collective(self) -> None:
        if len(self.team_list) != 2:
            fail(f"team must be [sender, receiver], got {self.team_list}")
        if self.checked_root() != self.team_list[0]:
            fail(f"root must be the sender (first team member {self.team_list[0]})")
        check_shape(self.out_type.shape, self.in_type.shape, "output")

    def check_meshes(self) -> None:
        sender, receiver = self.team_list
        self.require_on_mesh("input", self.in_sharding, sender, "sender")
        self.require_on_mesh("output", self.out_sharding, receiver, "receiver")


class P2POp(HirOp):
    """Point-to-point transfer of ``buffer`` with device ``peer``."""

    buffer: ext.Operand[ir.MemRefType]
    peer: ir.IntegerAttr
    backend: ir.StringAttr
    work: ext.Result[WorkType[()]] = ext.infer_result()
    TEAM_ATTR = ""  # one peer of the world group

    @classmethod
    def emit(cls, buffer: ir.Value, peer: int, backend: str, *, name: str | None = None) -> ir.Value:
        attrs = {
            "peer": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), peer),
            "backend": ir.StringAttr.get(backend),
        }
        return cls._create([buffer], [work_type()], attrs, name=name).result

    def check(self) -> None:
        memref_type(self.buffer, "buffer")
        if int_attr(self, "peer") < 0:
            fail("peer must be a non-negative device id")
        str_attr(self, "backend", BACKENDS)


class SendOp(P2POp, name="send"):
    """Send this rank's ``buffer`` to ``peer``."""


class RecvOp(P2POp, name="recv"):
    """Receive into ``buffer`` from ``peer``."""

    DESTINATIONS = (0,)


class WaitOp(HirOp, name="wait"):
    """Wait for a communication: the current stream (GPU) or the host (CPU) waits on it."""

    work: ext.Operand[WorkType]

    @classmethod
    def emit(cls, work: ir.Value, *, name: str | None = None) -> ir.Operation:
        return cls._create([work], name=name)


COLLECTIVE_OPS = (
    AllgatherOp,
    AllreduceOp,
    ReduceScatterOp,
    BroadcastOp,
    ScatterOp,
    GatherOp,
    ReduceOp,
    SendRecvOp,
)
