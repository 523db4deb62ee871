"""The programs of test_p2p.py, as text for N ranks: AG+matmul and matmul+RS (nvFuser's P2P
forms, for hir-p2p-pipeline), and one of each collective on the ``cuda`` backend."""


def _shard(mesh: str, axis: int) -> str:
    return f"#hir.shard<array<i64: {mesh}>, {axis} : i64>"


def ag_matmul(world: int, m: int, k: int, n: int, dtype: str = "f32") -> str:
    mesh = ", ".join(str(r) for r in range(world))
    a = f"memref<{world}x{m}x{k}x{dtype}, {_shard(mesh, 0)}>"
    t = f"memref<{world}x{m}x{k}x{dtype}, {_shard(mesh, -1)}>"
    b = f"memref<{k}x{n}x{dtype}, {_shard(mesh, -1)}>"
    o = f"memref<{world}x{m}x{n}x{dtype}, {_shard(mesh, -1)}>"
    return f"""func.func @main(%a: {a}, %b: {b}) -> {o} {{
  %tmp = memref.alloc() : {t}
  %out = memref.alloc() : {o}
  "hir.set"(%a, %tmp) {{stream_axis = 0 : i64}} : ({a}, {t}) -> ()
  "hir.matmul"(%tmp, %b, %out) {{stream_axis = 0 : i64}} : ({t}, {b}, {o}) -> ()
  return %out : {o}
}}
"""


def matmul_rs(world: int, m: int, k: int, n: int, dtype: str = "f32") -> str:
    """out[p] = sum over ranks r of a[p, r] @ w[0, r]: rank r holds a K-slice of A (rows for
    every destination p) and of W; the reduce-scatter's scattered axis is the stream axis."""
    mesh = ", ".join(str(r) for r in range(world))
    a = f"memref<{world}x{world}x{m}x{k}x{dtype}, {_shard(mesh, 1)}>"
    w = f"memref<1x{world}x{k}x{n}x{dtype}, {_shard(mesh, 1)}>"
    p = f"memref<{world}x{world}x{m}x{n}x{dtype}, {_shard(mesh, 1)}>"
    o = f"memref<{world}x{m}x{n}x{dtype}, {_shard(mesh, 0)}>"
    return f"""func.func @main(%a: {a}, %w: {w}) -> {o} {{
  %partial = memref.alloc() : {p}
  "hir.matmul"(%a, %w, %partial) {{stream_axis = 0 : i64}} : ({a}, {w}, {p}) -> ()
  %out = memref.alloc() : {o}
  "hir.reduction"(%partial, %out) {{axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64}} : ({p}, {o}) -> ()
  return %out : {o}
}}
"""


def collectives(world: int) -> str:
    """allgather, reduce_scatter, allreduce (max: the process group; sum: one one-shot kernel
    on GPU), broadcast with backend = "cuda" (run twice: the second run reuses the registered
    peer buffers)."""
    mesh = ", ".join(str(r) for r in range(world))
    split0 = f"memref<{2 * world}x3xf32, {_shard(mesh, 0)}>"
    full = f"memref<{2 * world}x3xf32, {_shard(mesh, -1)}>"
    parts = f"memref<{world}x{2 * world}x3xf32, {_shard(mesh, 0)}>"
    rs_out = f"memref<{2 * world}x3xf32, {_shard(mesh, 0)}>"
    team = f"team = array<i64: {mesh}>"
    return f"""func.func @main(%x: {split0}, %p: {parts}, %r: {full}) -> ({full}, {rs_out}, {full}, {full}, {full}) {{
  %g = memref.alloc() : {full}
  %w0 = "hir.allgather"(%x, %g) {{axis = 0 : i64, backend = "cuda", {team}}} : ({split0}, {full}) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  %s = memref.alloc() : {rs_out}
  %w1 = "hir.reduce_scatter"(%p, %s) {{axis = 0 : i64, scatter_axis = 1 : i64, reduction = "sum", backend = "cuda",
      {team}}} : ({parts}, {rs_out}) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  %a = memref.alloc() : {full}
  %w2 = "hir.allreduce"(%p, %a) {{axis = 0 : i64, reduction = "max", backend = "cuda", {team}}}
      : ({parts}, {full}) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  %c = memref.alloc() : {full}
  %w3 = "hir.broadcast"(%r, %c) {{root = 1 : i64, backend = "cuda", {team}}} : ({full}, {full}) -> !hir.work
  "hir.wait"(%w3) : (!hir.work) -> ()
  %t = memref.alloc() : {full}
  %w4 = "hir.allreduce"(%p, %t) {{axis = 0 : i64, reduction = "sum", backend = "cuda", {team}}}
      : ({parts}, {full}) -> !hir.work
  "hir.wait"(%w4) : (!hir.work) -> ()
  return %g, %s, %a, %c, %t : {full}, {rs_out}, {full}, {full}, {full}
}}
"""
