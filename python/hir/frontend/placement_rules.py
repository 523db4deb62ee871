"""DTensor's placement rules for the compute ops of an imported program, on one mesh axis
(a multi-D mesh applies them axis by axis). Each rule takes the operands' split dims on
that axis (None: replicated) and returns ``(operand splits, output split)`` (operands
resharded to those splits first), or :data:`PARTIAL` when the op contracts a split dim (a
local product whose sum over the mesh axis is an allreduce / reduce-scatter).

* linear: replicated input x column-split weight -> output split on its last axis
  (ColwiseParallel); split contraction on both sides (RowwiseParallel) -> partial; split
  rows x replicated weight -> split rows (data / sequence parallel);
* matmul: as linear for [..., M, K] @ [..., K, N], and equal split batch dims stay split;
* binary: equal placements stay; a split operand with a replicated one broadcast along the
  split axis stays split; otherwise both replicated;
* reduction: a kept split axis stays split; a reduction over the outermost split axis alone
  is an allreduce; otherwise replicated first.
"""

from typing import Optional, Sequence, Union

Split = Optional[int]
PARTIAL = "partial"
Rule = Union[str, tuple[list[Split], Split]]


def _replicated(count: int) -> Rule:
    return [None] * count, None


def linear(px: Split, pw: Split, x_rank: int, has_bias: bool) -> Rule:
    last = x_rank - 1
    if pw == 0:  # ColwiseParallel (a split input is gathered first, as in sequence parallelism)
        return [None, 0] + ([0] if has_bias else []), last
    if px == last and pw == 1:  # RowwiseParallel
        return PARTIAL
    if px is not None and px < last and pw is None:  # split rows (data / sequence parallel)
        return [px, None] + ([None] if has_bias else []), px
    return _replicated(2 + has_bias)


def matmul(pa: Split, pb: Split, ra: int, rb: int, out_rank: int) -> Rule:
    if ra < 2 or rb < 2:
        return _replicated(2)
    if pa == ra - 2 and pb is None:
        return [pa, None], out_rank - 2
    if pb == rb - 1:
        return [None, pb], out_rank - 1
    if pa == ra - 1 and pb == rb - 2:
        return PARTIAL
    if pa is not None and pa < ra - 2 and ra == rb and pa == pb:
        return [pa, pb], pa + out_rank - ra
    if pa is not None and pa < ra - 2 and pb is None and out_rank - ra + pa < out_rank - rb:
        return [pa, None], pa + out_rank - ra  # a batch dim only A has (B broadcasts)
    return _replicated(2)


def binary(splits: Sequence[Split], shapes: Sequence[Sequence[int]], out_rank: int) -> Rule:
    to_out = [None if s is None else s + out_rank - len(shape) for s, shape in zip(splits, shapes)]
    if to_out[0] == to_out[1]:
        return list(splits), to_out[0]
    if None in to_out:
        k = to_out[0] if to_out[0] is not None else to_out[1]
        out = []
        for shape in shapes:
            own = k - (out_rank - len(shape))
            out.append(None if own < 0 or shape[own] == 1 else own)
        return out, k
    return _replicated(2)


def reduction(px: Split, axes: Sequence[int]) -> Rule:
    if px is None:
        return [None], None
    if px not in axes:
        return [px], px - sum(1 for a in axes if a < px)
    if list(axes) == [px] and px == 0:
        return [px], None  # an allreduce
    return [None], None
