"""The placement a program-level compute op infers for its output from its operands'
(``sharding="same"``), and the sizes of a broadcast result."""

from collections.abc import Sequence

from hir.dialect import Sharding


def broadcast_sizes(a: list, b: list, shape: list[int]) -> list:
    """Per-dimension sizes of a broadcast result: whichever operand is not 1 there."""
    out = []
    for i in range(1, len(shape) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        out.append(y if isinstance(x, int) and x == 1 else x)
    return out[::-1]


def elementwise_sharding(operands: Sequence[tuple[Sharding | None, int]], rank: int) -> Sharding | None:
    """The first operand split's axis in output coordinates, else replicated on the first
    operand mesh, else None (``operands``: each one's placement and rank)."""
    for s, operand_rank in operands:
        if s is not None and s.axis is not None:
            return Sharding(s.mesh, s.axis + rank - operand_rank)
    placed = next((s for s, _ in operands if s is not None), None)
    return None if placed is None else Sharding(placed.mesh, None)


def matmul_sharding(a: Sharding | None, rank_a: int, b: Sharding | None, rank_b: int, rank: int) -> Sharding | None:
    """The output placement a matmul computes locally: ``a``'s batch / M split, ``b``'s N
    split, else replicated on the operands' mesh (None without one). The output ends with
    ``a``'s axes but K, then N unless ``b`` is a vector."""
    if a is not None and a.axis is not None and a.axis < rank_a - 1:
        return Sharding(a.mesh, a.axis + rank - (rank_a - 1) - (1 if rank_b >= 2 else 0))
    if b is not None and b.axis is not None and b.axis == rank_b - 1 and rank_b >= 2:
        return Sharding(b.mesh, rank - 1)
    placed = a or b
    return None if placed is None else Sharding(placed.mesh, None)


def reduced_sharding(sharding: Sharding | None, axes: list[int]) -> Sharding | None:
    if sharding is None or sharding.axis is None:
        return sharding
    if sharding.axis in axes:
        return Sharding(sharding.mesh, None)
    return Sharding(sharding.mesh, sharding.axis - sum(1 for a in axes if a < sharding.axis))
