"""The programs benchmarks/overlap.py times, built with the builder: AG+matmul and matmul+RS
with a stream axis of S steps (for the schedule passes to pipeline), and their P2P forms (one step
per peer shard, for hir-p2p-pipeline)."""

from hir.builder import Builder, Shard


def ag_matmul_program(S: int, D: int, M: int, K: int, N: int):
    mesh = list(range(D))
    b = Builder()
    a = b.input([S, D, M // (S * D), K], "bf16", sharding=Shard(mesh, 1))
    w = b.input([K, N], "bf16", sharding=Shard(mesh, 1))
    a_full = b.set(a, sharding=Shard(mesh), stream_axis=0)
    b.output(b.matmul(a_full, w, sharding=Shard(mesh, 3), stream_axis=0))
    return b.finish()


def matmul_rs_program(S: int, D: int, M: int, K: int, N: int):
    mesh = list(range(D))
    b = Builder()
    a = b.input([S, D, M // S, K // D], "bf16", sharding=Shard(mesh, 1))
    w = b.input([1, D, K // D, N], "bf16", sharding=Shard(mesh, 1))
    partial = b.matmul(a, w, sharding=Shard(mesh, 1), stream_axis=0)
    b.output(b.sum(partial, [1], sharding=Shard(mesh, 1), stream_axis=0))
    return b.finish()


def p2p_ag_matmul_program(D: int, M: int, K: int, N: int):
    """The P2P form: the stream axis is the device axis (one step per peer shard)."""
    mesh = list(range(D))
    b = Builder()
    a = b.input([D, M // D, K], "bf16", sharding=Shard(mesh, 0))
    w = b.input([K, N], "bf16", sharding=Shard(mesh, 1))
    a_full = b.set(a, sharding=Shard(mesh), stream_axis=0)
    b.output(b.matmul(a_full, w, sharding=Shard(mesh, 2), stream_axis=0))
    return b.finish()


def p2p_matmul_rs_program(D: int, M: int, K: int, N: int):
    """The P2P form: the reduce-scatter's scattered axis (M) is the stream axis."""
    mesh = list(range(D))
    b = Builder()
    a = b.input([D, D, M // D, K // D], "bf16", sharding=Shard(mesh, 1))
    w = b.input([1, D, K // D, N], "bf16", sharding=Shard(mesh, 1))
    partial = b.matmul(a, w, sharding=Shard(mesh, 1), stream_axis=0)
    b.output(b.sum(partial, [1], sharding=Shard(mesh, 0), stream_axis=0))
    return b.finish()
