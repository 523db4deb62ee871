"""The host-level half of :class:`hir.builder.Builder`: one typed method per stream, view,
control, communication and p2p op, for writing lowered programs by hand."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.builder.control import ControlBuilder
from hir.builder.program import ProgramBuilder, Tensor
from hir.builder.views import ViewBuilder
from hir.dialect import (
    COLLECTIVE_OPS,
    AliasChunkOp,
    AliasSelectOp,
    BarrierOp,
    DeviceIndexOp,
    ForOp,
    GetCurrentStreamOp,
    GetStreamOp,
    RecvOp,
    SendOp,
    SetCurrentStreamOp,
    ShiftOp,
    SynchronizeOp,
    WaitOp,
)
from hir.dialect.p2p import COPIES_ATTR, SIGNAL_ATTR


class Builder(ViewBuilder, ControlBuilder, ProgramBuilder):
    """Builds one ``func.func`` (default ``@main``) in a fresh module and context: program-level
    compute ops (:class:`ProgramBuilder`), every host-level op, the upstream views
    (:class:`~hir.builder.views.ViewBuilder`: ``subview``, ``collapse_shape``,
    ``expand_shape``, ``reshape``, ``alias_broadcast``, ``alias_stack_shards``) and host scalars, ``fill`` and ``if_``
    (:class:`~hir.builder.control.ControlBuilder`)."""

    def get_current_stream(self) -> ir.Value:
        """The stream the host is issuing work on now (a ``!hir.stream``)."""
        with self._at():
            return GetCurrentStreamOp().result

    def get_stream(self, index: int | ir.Value) -> ir.Value:
        """Pool stream number ``index % num_streams`` of the run (``index``: an int or an
        index value), as a ``!hir.stream``."""
        index = self._index(index, "get_stream: index")
        with self._at():
            return GetStreamOp(index).result

    def set_current_stream(self, stream: ir.Value) -> None:
        """Issue the work built after this on ``stream``."""
        with self._at():
            SetCurrentStreamOp(stream)

    def synchronize(self, stream: ir.Value) -> None:
        """The current stream waits for the work issued on ``stream`` so far (the host does
        not block)."""
        with self._at():
            SynchronizeOp(stream)

    def alias_select(self, x: Tensor, index: int | ir.Value, axis: int) -> Tensor:
        """A zero-copy view of ``x`` at ``index`` (an int or an index value) along ``axis``,
        one rank lower."""
        index = self._index(index, "alias_select: index")
        with self._at():
            view = AliasSelectOp.emit(x.value, index, axis)
        return Tensor(view, [d for i, d in enumerate(x.sizes) if i != axis])

    def alias_chunk(self, x: Tensor, index: int | ir.Value, axis: int, chunks: int) -> Tensor:
        """A zero-copy view of chunk ``index`` (an int or an index value) of ``chunks`` equal
        parts of ``x`` along ``axis``."""
        index = self._index(index, "alias_chunk: index")
        with self._at():
            view = AliasChunkOp.emit(x.value, index, axis, chunks)
            extent = x.sizes[axis]
            extent = extent // chunks if isinstance(extent, int) else memref.DimOp(view, self.index(axis)).result
        return Tensor(view, [extent if i == axis else d for i, d in enumerate(x.sizes)])

    @contextmanager
    def for_(self, lower: int | ir.Value, upper: int | ir.Value, step: int | ir.Value = 1) -> Iterator[ir.Value]:
        """``with b.for_(0, n) as i:`` builds a ``hir.for``; ops inside go in its body."""
        lb, ub, st = (
            self._index(v, f"for_: {name}") for v, name in ((lower, "lower"), (upper, "upper"), (step, "step"))
        )
        with self._at():
            _, iv, end = ForOp.emit(lb, ub, st)
        saved = self._ip
        self._ip = ir.InsertionPoint(end)
        try:
            yield iv
        finally:
            self._ip = saved

    def communicate(
        self,
        kind: str,
        input: Tensor,
        output: Tensor,
        team: Sequence[int],
        *,
        backend: str = "nccl",
        **attrs: int | str,
    ) -> ir.Value:
        """A collective (``allgather``, ``allreduce``, ``reduce_scatter``, ``broadcast``,
        ``scatter``, ``gather``, ``reduce``, ``send_recv``) returning its work token;
        ``attrs`` are its integer (axis, root, scatter_axis) and string (reduction) attributes."""
        kinds = {c.OPERATION_NAME.split(".", 1)[1]: c for c in COLLECTIVE_OPS}
        with self._at():
            if kind not in kinds:
                raise ValueError(f"communicate: kind must be one of {', '.join(kinds)}, got {kind!r}")
            cls = kinds[kind]
            kwargs = {k: _attr(v) for k, v in attrs.items()}
            op = cls(
                input.value, output.value, ir.DenseI64ArrayAttr.get(list(team)), ir.StringAttr.get(backend), **kwargs
            )
            return op.work

    def send(self, buffer: Tensor, peer: int, backend: str = "nccl") -> ir.Value:
        """Send this rank's ``buffer`` to device ``peer``; returns the work token to wait on."""
        with self._at():
            return SendOp(buffer.value, _attr(peer), ir.StringAttr.get(backend)).work

    def recv(self, buffer: Tensor, peer: int, backend: str = "nccl") -> ir.Value:
        """Receive into ``buffer`` from device ``peer``; returns the work token to wait on."""
        with self._at():
            return RecvOp(buffer.value, _attr(peer), ir.StringAttr.get(backend)).work

    def wait(self, work: ir.Value) -> None:
        """Wait for the communication of ``work`` (a token from a collective, send, recv,
        shift or barrier): the current stream waits on a GPU, the host on the CPU."""
        with self._at():
            WaitOp(work)

    # -- typed collectives (see hir.dialect.comm for the axis conventions) --------------
    def allgather(
        self, input: Tensor, output: Tensor, team: Sequence[int], *, axis: int, backend: str = "nccl"
    ) -> ir.Value:
        """Every member of ``team`` gets the whole of ``input``, which is split along
        ``axis``, in ``output``; returns the work token."""
        return self.communicate("allgather", input, output, team, backend=backend, axis=axis)

    def allreduce(
        self,
        input: Tensor,
        output: Tensor,
        team: Sequence[int],
        *,
        axis: int,
        reduction: str = "sum",
        backend: str = "nccl",
    ) -> ir.Value:
        """``input``'s split ``axis`` reduced (sum, prod, max, min) across ``team`` into
        ``output`` on every member (``output`` drops that axis); returns the work token."""
        return self.communicate("allreduce", input, output, team, backend=backend, axis=axis, reduction=reduction)

    def reduce_scatter(
        self,
        input: Tensor,
        output: Tensor,
        team: Sequence[int],
        *,
        axis: int,
        scatter_axis: int,
        reduction: str = "sum",
        backend: str = "nccl",
    ) -> ir.Value:
        """As :meth:`allreduce`, with ``output`` split across ``team`` along input axis
        ``scatter_axis``; returns the work token."""
        return self.communicate(
            "reduce_scatter",
            input,
            output,
            team,
            backend=backend,
            axis=axis,
            scatter_axis=scatter_axis,
            reduction=reduction,
        )

    def broadcast(
        self, input: Tensor, output: Tensor, team: Sequence[int], *, root: int, backend: str = "nccl"
    ) -> ir.Value:
        """Device ``root``'s ``input`` copied into every member's ``output``; returns the
        work token."""
        return self.communicate("broadcast", input, output, team, backend=backend, root=root)

    def scatter(
        self, input: Tensor, output: Tensor, team: Sequence[int], *, axis: int, root: int, backend: str = "nccl"
    ) -> ir.Value:
        """Device ``root``'s whole ``input`` split along ``axis`` into the members'
        ``output`` blocks; returns the work token."""
        return self.communicate("scatter", input, output, team, backend=backend, axis=axis, root=root)

    def gather(
        self, input: Tensor, output: Tensor, team: Sequence[int], *, axis: int, root: int, backend: str = "nccl"
    ) -> ir.Value:
        """The members' blocks of ``input`` (split along ``axis``) put together in device
        ``root``'s ``output``; returns the work token."""
        return self.communicate("gather", input, output, team, backend=backend, axis=axis, root=root)

    def reduce(
        self,
        input: Tensor,
        output: Tensor,
        team: Sequence[int],
        *,
        axis: int,
        root: int,
        reduction: str = "sum",
        backend: str = "nccl",
    ) -> ir.Value:
        """As :meth:`allreduce`, with the result in device ``root``'s ``output`` only;
        returns the work token."""
        return self.communicate(
            "reduce", input, output, team, backend=backend, axis=axis, root=root, reduction=reduction
        )

    def send_recv(
        self, input: Tensor, output: Tensor, sender: int, receiver: int, *, backend: str = "nccl"
    ) -> ir.Value:
        """nvFuser SendRecv: ``sender``'s local input lands in ``receiver``'s local output."""
        return self.communicate("send_recv", input, output, [sender, receiver], backend=backend, root=sender)

    # -- p2p ops ------------------------------------------------------------------------
    def device_index(self, mesh: Sequence[int]) -> ir.Value:
        """This device's position in ``mesh`` (an index)."""
        with self._at():
            return DeviceIndexOp.emit(list(mesh))

    def shift(
        self,
        input: Tensor,
        output: Tensor,
        offset: int | ir.Value,
        team: Sequence[int],
        *,
        backend: str = "nccl",
        copies: int | None = None,
        signal: str | None = None,
    ) -> ir.Value:
        """Receive the input of team position ``(me + offset) mod n`` into ``output``, send
        ours to ``(me - offset) mod n``; returns the work token (see hir.dialect.p2p)."""
        offset = self._index(offset, "shift: offset")
        with self._at():
            attrs = {"team": ir.DenseI64ArrayAttr.get(list(team)), "backend": ir.StringAttr.get(backend)}
            if copies is not None:
                attrs[COPIES_ATTR] = _attr(copies)
            if signal is not None:
                attrs[SIGNAL_ATTR] = ir.StringAttr.get(signal)
            return ShiftOp.emit(input.value, output.value, offset, attrs)

    def barrier(self, team: Sequence[int], *, backend: str = "nccl") -> ir.Value:
        """Every member of ``team`` reaches this point (wait on the returned token)."""
        with self._at():
            return BarrierOp.emit(ir.DenseI64ArrayAttr.get(list(team)), ir.StringAttr.get(backend))


def _attr(value: int | str) -> ir.Attribute:
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
