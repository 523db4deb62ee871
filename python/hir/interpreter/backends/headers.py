"""Cross-rank checks of what each rank hands a transfer: before a collective or a
point-to-point transfer, the ranks exchange a small header (the op, the dtype and the shape
of the tensor each one passes) and refuse a mismatch with a located error naming both ranks.

Gloo does not check: a receive into a larger buffer is silently padded (rank 1 receiving 4
floats into 8 holds ``[0, 1, 2, 3, 0, 0, 0, 0]``), and a collective of different sizes
aborts the process from a Gloo thread (``terminate called ... gloo::EnforceNotMet``). So on
Gloo the check is always on. NCCL does not check either (a mismatch hangs or reads past the
buffer), but a header costs a blocking round trip per transfer on the GPU's critical path,
so there it is on only with ``HIR_CHECK_COLLECTIVES=1`` (as ``TORCH_DISTRIBUTED_DEBUG=DETAIL``
checks torch's own collectives). ``HIR_CHECK_COLLECTIVES=0`` turns it off on Gloo too.

A collective's header is an ``all_gather`` over the team; a point-to-point header is sent
ahead of the data, and the receiver waits for it before posting its receive (a receive
posted into a buffer smaller than what arrives aborts Gloo), so in a checking run a receive
blocks until its sender has issued the send: a ring of ranks must issue its sends before its
receives (a send does not block).

Headers are exchanged only in the runs that check: the first run of a program and the
first of each new input signature; a later run hands every transfer what a checked run did
and exchanges none (``interpreter/transfer_checks.py``, which says when that holds and why
every rank decides alike). Programs where data decides which transfers run check every run."""

import os
import zlib
from typing import Any

import torch
import torch.distributed as dist

from hir.dialect.context import HirError
from hir.interpreter.buffers import DTYPE_NAMES

CHECK_ENV = "HIR_CHECK_COLLECTIVES"
_DIMS = 9  # dims carried whole (a header: op, dtype, number of dims, dims); more fold into the last slot
_DTYPES = list(DTYPE_NAMES)
_OPS: dict[int, str] = {}  # op code -> op name, of every op a checker was made for


def enabled(group) -> bool:
    """Whether transfers on ``group`` exchange headers: $HIR_CHECK_COLLECTIVES (1 / 0) if
    set, else on for Gloo only."""
    raw = os.environ.get(CHECK_ENV)
    if raw is not None and raw.strip() not in ("", "0", "1"):
        raise HirError(
            f"error: ${CHECK_ENV}={raw!r}: expected 1 (check every transfer's shape and dtype across ranks) or 0"
        )
    if raw is not None and raw.strip():
        return raw.strip() == "1"
    return str(dist.get_backend(group)) == "gloo"


def _code(name: str) -> int:
    code = zlib.crc32(name.encode())
    _OPS[code] = name
    return code


class Headers:
    """The header exchange of one op on this rank; None from :func:`for_op` when off."""

    def __init__(self, where: str, name: str, members: list[int], device: torch.device, run: Any = None) -> None:
        self.where, self.name, self.members, self.device = where, name, members, device
        self.code = _code(name)
        # the program's run-level switch (``interpreter/transfer_checks.py``): its ``active``
        # is false on runs whose transfers an earlier run verified; None: always check
        self.run = run

    @property
    def active(self) -> bool:
        return self.run is None or self.run.active

    def header(self, t: torch.Tensor, op_code: int = 0) -> torch.Tensor:
        """``t``'s header; ``op_code`` 0 for a point-to-point one (a send pairs with a
        receive, a shift with a shift: the op need not be the same)."""
        dims = list(t.shape)
        if len(dims) > _DIMS:
            tail = 1
            for d in dims[_DIMS - 1 :]:
                tail *= d
            dims = dims[: _DIMS - 1] + [tail]
        code = _DTYPES.index(t.dtype) if t.dtype in _DTYPES else len(_DTYPES)
        row = [op_code, code, t.dim()] + dims + [0] * (_DIMS - len(dims))
        return torch.tensor(row, dtype=torch.int64, device=self.device)

    def describe(self, row: list[int]) -> str:
        ndim = row[2]
        dims = row[3 : 3 + min(ndim, _DIMS)]
        dtype = DTYPE_NAMES[_DTYPES[row[1]]] if row[1] < len(_DTYPES) else "an unsupported dtype"
        what = "x".join(map(str, dims + [dtype])) if ndim <= _DIMS else f"a {ndim}-D tensor of {dims} {dtype}"
        if row[0] not in (0, self.code):
            return f"'{_OPS.get(row[0], 'another op')}' on {what}"
        return what

    def mismatch(self, rank_a: int, row_a: list[int], rank_b: int, row_b: list[int]) -> HirError:
        return HirError(
            f"{self.where}: error: '{self.name}' ranks disagree on what they transfer: rank {rank_a} has "
            f"{self.describe(row_a)}, rank {rank_b} has "
            f"{self.describe(row_b)} (shape and dtype must match on both sides)"
        )

    def collective(self, t: torch.Tensor, group) -> None:
        """All_gather every member's header of ``t`` (what it passes the collective, which
        must be the same on every member); raise, on every member, naming the first that
        differs from the team's first."""
        if not self.active:
            return
        mine = self.header(t, self.code)
        rows = [torch.empty_like(mine) for _ in self.members]
        dist.all_gather(rows, mine, group=group)
        got = [r.tolist() for r in rows]
        for i, row in enumerate(got):
            if row != got[0]:
                raise self.mismatch(self.members[0], got[0], self.members[i], row)

    def send(self, t: torch.Tensor, dst: int) -> list:
        """The handle of the header of ``t`` sent to ``dst`` (ahead of the data)."""
        if not self.active:
            return []
        return [dist.isend(self.header(t), dst=dst)]

    def receive(self, t: torch.Tensor, src: int, me: int) -> None:
        """Wait for the header of what ``src`` sends and raise unless it matches ``t``."""
        if not self.active:
            return
        mine = self.header(t)
        theirs = torch.empty_like(mine)
        dist.irecv(theirs, src=src).wait()  # pyright: ignore[reportOptionalMemberAccess]  # None only off the group
        if not torch.equal(mine, theirs):
            raise self.mismatch(src, theirs.tolist(), me, mine.tolist())

    def exchange(self, sent: torch.Tensor, dst: int, into: torch.Tensor, src: int, me: int, gloo: bool) -> None:
        """A shift's headers: ours of ``sent`` to ``dst``, ``src``'s checked against ``into``
        (NCCL: as one group, or a ring of sends deadlocks)."""
        if not self.active:
            return
        if gloo:
            handles = self.send(sent, dst)
            try:
                self.receive(into, src, me)
            finally:  # our header delivered before a mismatch is raised (the caller may exit at once)
                for handle in handles:
                    handle.wait()
            return
        mine, theirs = self.header(sent), torch.empty_like(self.header(into))
        for handle in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, dst), dist.P2POp(dist.irecv, theirs, src)]):
            handle.wait()
        expected = self.header(into)
        if not torch.equal(expected, theirs):
            raise self.mismatch(src, theirs.tolist(), me, expected.tolist())


def for_op(where: str, name: str, members: list[int], group, device: torch.device, run: Any = None) -> Headers | None:
    """The header exchange of an op on ``group`` when checks are on for it, else None;
    ``run``: the program's run-level switch (see :class:`Headers`)."""
    return Headers(where, name, members, device, run) if enabled(group) else None
