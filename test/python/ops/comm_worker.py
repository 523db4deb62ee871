"""One rank of the collective tests (run by test_comm.py through the launcher).

Every rank builds the same global tensors from one seed, runs each case's program on its
shards with hir.interpreter, checks its local result against torch on the global tensors,
and prints ``PASS <case>`` or ``FAIL <case>: <why>``. One process start serves every case.
Usage: python comm_worker.py [--device cuda]"""

import sys
import traceback
from collections.abc import Callable

import torch

import hir
from hir.interpreter import Program
from hir.interpreter.backends.process_groups import shutdown, world

RANK, N = world()
DEVICE = "cuda" if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cuda" else "cpu"
BACKEND = "nccl" if DEVICE == "cuda" else "gloo"


def mem(shape, mesh=None, axis=-1, dtype="f32") -> str:
    dims = "x".join(map(str, shape)) + "x" if shape else ""
    space = "" if mesh is None else f", #hir.shard<array<i64: {', '.join(map(str, mesh))}>, {axis} : i64>"
    return f"memref<{dims}{dtype}{space}>"


def comm_program(op: str, tin: str, tout: str, attrs: str) -> str:
    return f"""
func.func @main(%in: {tin}, %out: {tout}) {{
  %w = "hir.{op}"(%in, %out) {{{attrs}, backend = "{BACKEND}"}} : ({tin}, {tout}) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}}"""


def team(ranks) -> str:
    return f"team = array<i64: {', '.join(map(str, ranks))}>"


def shard(full: torch.Tensor, mesh, axis: int) -> torch.Tensor | None:
    if RANK not in mesh:
        return None
    if axis < 0:
        return full.clone()
    return full.chunk(len(mesh), axis)[list(mesh).index(RANK)].contiguous()


def run(text: str, inputs) -> list:
    module = hir.parse(text, "case.mlir")
    dev = torch.device(DEVICE, RANK) if DEVICE == "cuda" else torch.device("cpu")
    moved = [None if t is None else t.to(dev) for t in inputs]
    Program(module, device=str(dev))(moved)
    return [None if t is None else t.cpu() for t in moved]


CASES: dict[str, Callable[[], str | None]] = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def check(got: torch.Tensor | None, want: torch.Tensor | None) -> str | None:
    if want is None:
        return None
    if got is None or got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
        return f"rank {RANK}: got {got}, want {want}"
    return None


def permuted_mesh() -> list[int]:
    """All ranks in a non-sorted order, so mesh positions differ from group ranks."""
    return (
        list(range(N))[::-1]
        if N == 2
        else [(2 * i + 1) % N for i in range(N)][: N // 2] + [(2 * i) % N for i in range(N // 2)]
    )


def allgather_case(mesh, axis: int) -> str | None:
    shape = [3, 3]
    shape[axis] = 2 * N
    g = torch.randn(shape)
    text = comm_program("allgather", mem(shape, mesh, axis), mem(shape), f"axis = {axis} : i64, {team(mesh)}")
    _, out = run(text, [shard(g, mesh, axis), torch.zeros(shape)])
    return check(out, g)


@case
def allgather_axis0():
    return allgather_case(list(range(N)), 0)


@case
def allgather_axis1_staged():
    return allgather_case(list(range(N)), 1)


@case
def allgather_permuted_mesh():
    return allgather_case(permuted_mesh(), 0)


@case
def allgather_subteam():
    sub = [N - 1, 0]
    g = torch.randn(4, 3)
    text = comm_program("allgather", mem([4, 3], sub, 0), mem([4, 3], sub, -1), f"axis = 0 : i64, {team(sub)}")
    _, out = run(text, [shard(g, sub, 0), torch.zeros(4, 3) if RANK in sub else None])
    return check(out, g if RANK in sub else None)


def allreduce_case(kind: str, local: int) -> str | None:
    mesh = list(range(N))
    g = torch.randn(local * N, 5)
    text = comm_program(
        "allreduce", mem([local * N, 5], mesh, 0), mem([5]), f'axis = 0 : i64, reduction = "{kind}", {team(mesh)}'
    )
    _, out = run(text, [shard(g, mesh, 0), torch.zeros(5)])
    want = {"sum": g.sum(0), "max": g.amax(0), "min": g.amin(0), "prod": g.prod(0)}[kind]
    return check(out, want)


@case
def allreduce_sum():
    return allreduce_case("sum", 1)


@case
def allreduce_sum_local_extent_2():
    return allreduce_case("sum", 2)


@case
def allreduce_max():
    return allreduce_case("max", 1)


@case
def allreduce_prod():
    return allreduce_case("prod", 1)


@case
def reduce_scatter_sum():
    mesh = permuted_mesh()
    g = torch.randn(N, 2 * N, 3)
    tin, tout = mem([N, 2 * N, 3], mesh, 0), mem([2 * N, 3], mesh, 0)
    text = comm_program(
        "reduce_scatter", tin, tout, f'axis = 0 : i64, scatter_axis = 1 : i64, reduction = "sum", {team(mesh)}'
    )
    _, out = run(text, [shard(g, mesh, 0), torch.zeros(2, 3)])
    return check(out, g.sum(0).chunk(N, 0)[mesh.index(RANK)])


@case
def reduce_scatter_max_axis1():
    mesh = list(range(N))
    g = torch.randn(3, N, N)  # reduce axis 1, scatter axis 2 -> output axis 1
    tin, tout = mem([3, N, N], mesh, 1), mem([3, N], mesh, 1)
    text = comm_program(
        "reduce_scatter", tin, tout, f'axis = 1 : i64, scatter_axis = 2 : i64, reduction = "max", {team(mesh)}'
    )
    _, out = run(text, [shard(g, mesh, 1), torch.zeros(3, 1)])
    return check(out, g.amax(1).chunk(N, 1)[RANK])


@case
def broadcast_from_last():
    root, everyone = N - 1, list(range(N))
    g = torch.randn(4, 3)
    text = comm_program(
        "broadcast", mem([4, 3], [root]), mem([4, 3], everyone), f"root = {root} : i64, {team(everyone)}"
    )
    _, out = run(text, [shard(g, [root], -1), torch.zeros(4, 3)])
    return check(out, g)


@case
def scatter_from_root0():
    everyone = list(range(N))
    g = torch.randn(2 * N, 3)
    text = comm_program(
        "scatter",
        mem([2 * N, 3], [0]),
        mem([2 * N, 3], everyone, 0),
        f"axis = 0 : i64, root = 0 : i64, {team(everyone)}",
    )
    _, out = run(text, [shard(g, [0], -1), torch.zeros(2, 3)])
    return check(out, g.chunk(N, 0)[RANK])


@case
def scatter_root_outside_mesh():
    root, mesh = 0, list(range(1, N))
    g = torch.randn(3 * len(mesh), 2)
    tin, tout = mem(list(g.shape), [root]), mem(list(g.shape), mesh, 0)
    text = comm_program("scatter", tin, tout, f"axis = 0 : i64, root = {root} : i64, {team([root] + mesh)}")
    _, out = run(text, [shard(g, [root], -1), torch.zeros(3, 2) if RANK in mesh else None])
    return check(out, g.chunk(len(mesh), 0)[mesh.index(RANK)] if RANK in mesh else None)


@case
def gather_axis1_to_root():
    root, everyone = N - 1, list(range(N))
    g = torch.randn(3, 2 * N)
    text = comm_program(
        "gather",
        mem([3, 2 * N], everyone, 1),
        mem([3, 2 * N], [root]),
        f"axis = 1 : i64, root = {root} : i64, {team(everyone)}",
    )
    _, out = run(text, [shard(g, everyone, 1), torch.zeros(3, 2 * N) if RANK == root else None])
    return check(out, g if RANK == root else None)


@case
def reduce_sum_to_root():
    root, everyone = 0, list(range(N))
    g = torch.randn(N, 6)
    text = comm_program(
        "reduce",
        mem([N, 6], everyone, 0),
        mem([6], [root]),
        f'axis = 0 : i64, root = {root} : i64, reduction = "sum", {team(everyone)}',
    )
    _, out = run(text, [shard(g, everyone, 0), torch.zeros(6) if RANK == root else None])
    return check(out, g.sum(0) if RANK == root else None)


@case
def send_recv_first_to_last():
    src, dst = 0, N - 1
    g = torch.randn(4, 3)
    text = comm_program("send_recv", mem([4, 3], [src]), mem([4, 3], [dst]), f"root = {src} : i64, {team([src, dst])}")
    _, out = run(text, [shard(g, [src], -1), torch.zeros(4, 3) if RANK == dst else None])
    return check(out, g if RANK == dst else None)


@case
def send_and_recv_ring():
    """Every rank sends its row to the next rank and receives the previous rank's row into
    a column view (a non-contiguous receive buffer)."""
    nxt, prev = (RANK + 1) % N, (RANK - 1) % N
    g = torch.randn(N, 4)
    text = f"""
func.func @main(%x: memref<4xf32>, %buf: memref<4x2xf32>) {{
  %c0 = arith.constant 0 : index
  %col = "hir.alias_select"(%buf, %c0) {{axis = 1 : i64}}
      : (memref<4x2xf32>, index) -> memref<4xf32, strided<[2], offset: ?>>
  %s = "hir.send"(%x) {{peer = {nxt} : i64, backend = "{BACKEND}"}} : (memref<4xf32>) -> !hir.work
  %r = "hir.recv"(%col) {{peer = {prev} : i64, backend = "{BACKEND}"}}
      : (memref<4xf32, strided<[2], offset: ?>>) -> !hir.work
  "hir.wait"(%s) : (!hir.work) -> ()
  "hir.wait"(%r) : (!hir.work) -> ()
  return
}}"""
    if N == 1:
        return None
    _, buf = run(text, [g[RANK].clone(), torch.zeros(4, 2)])
    return check(buf[:, 0], g[prev])


@case
def allgather_in_stream_loop():
    """A lowered-program shape: per-row allgathers through alias_select views in an
    hir.for with streams, waited inside the loop."""
    mesh = list(range(N))
    g = torch.randn(3, 2 * N, 4)
    tin, tout = mem([3, 2 * N, 4], mesh, 1), mem([3, 2 * N, 4])
    rout = mem([2 * N, 4]).replace(">", ", strided<[4, 1], offset: ?>>", 1)
    rin = (
        f"memref<{2 * N}x4xf32, strided<[4, 1], offset: ?>, "
        f"#hir.shard<array<i64: {', '.join(map(str, mesh))}>, 0 : i64>>"
    )
    text = f"""
func.func @main(%in: {tin}, %out: {tout}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.for"(%c0, %c3, %c1) ({{
  ^bb0(%i: index):
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    %a = "hir.alias_select"(%in, %i) {{axis = 0 : i64}} : ({tin}, index) -> {rin}
    %b = "hir.alias_select"(%out, %i) {{axis = 0 : i64}} : ({tout}, index) -> {rout}
    %w = "hir.allgather"(%a, %b) {{axis = 0 : i64, backend = "{BACKEND}", {team(mesh)}}} : ({rin}, {rout}) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    "hir.set_current_stream"(%user) : (!hir.stream) -> ()
    "hir.synchronize"(%s) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""
    _, out = run(text, [shard(g, mesh, 1), torch.zeros(3, 2 * N, 4)])
    return check(out, g)


def main() -> int:
    failures = 0
    for name, fn in CASES.items():
        torch.manual_seed(1234)  # the same global tensors on every rank
        try:
            why = fn()
        except Exception as err:  # noqa: BLE001 - report and go on to the next case
            why = f"rank {RANK}: {type(err).__name__}: {err}\n{traceback.format_exc()}"
        print(f"PASS {name}" if why is None else f"FAIL {name}: {why}", flush=True)
        failures += why is not None
    shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
