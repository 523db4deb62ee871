"""Host overhead of the hir interpreter per executed op, against eager torch doing the same
ops in the same process, side by side (tiny tensors, so the time is host time).

    python benchmarks/host_overhead.py [--device cpu] [--ops 200] [--repeat 7] [--no-p2p] [--profile]

For each case it prints the time per op (or per loop iteration) of the compiled hir program
run eagerly (``graph=False``) and of hand-written eager torch code making the same torch
calls, and their ratio. On CUDA a second table replays the same programs as CUDA graphs
(``Program(graph=True)``): host time per op of a replay call (inputs copied into the static
buffers, written inputs copied back + one graph launch, no synchronization) and wall time per
op (synchronized, so GPU time of the tiny kernels). A third table runs them with the default
``graph="auto"``: the first call (eager), the second (capture + replay) and the steady state
with the same buffers every call (a graph bound to them, no copies).
With 4 or more GPUs (and no ``--no-p2p``) a last table runs the chunked copy-engine P2P
AG+matmul and matmul+RS programs (hir-p2p-pipeline{chunks=2}) on 4 ranks, eager against
auto (host time of a call and median wall time, CUDA events, max over ranks).
On CPU (and no ``--no-checks``) a last table runs Gloo collectives on 2 ranks with and
without the cross-rank shape / dtype header exchange (``backends/headers.py``,
``HIR_CHECK_COLLECTIVES=0`` / ``1``): time per collective in the best call (a later call:
only the first call of an input signature exchanges headers, ``interpreter/transfer_checks.py``)
and in the first call (the one that checks)."""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch

import hir
from hir.interpreter import Program
from host_overhead_checks import checks_rank, checks_table
from timing import best

SHAPE = (4, 4)
T = "memref<4x4xf32>"
V = "memref<4xf32, strided<[1], offset: ?>>"
OPS = {
    "add": ('"hir.binary"(%a, %b, %o) {kind = "add"} : (T, T, T) -> ()', "torch.add(a, b, out=o)"),
    "mul": ('"hir.binary"(%o, %b, %o) {kind = "mul"} : (T, T, T) -> ()', "torch.mul(o, b, out=o)"),
    "set": ('"hir.set"(%a, %o) : (T, T) -> ()', "o.copy_(a)"),
    "sum": (
        '"hir.reduction"(%a, %r) {kind = "sum", axes = array<i64: 1>} : (T, memref<4xf32>) -> ()',
        "torch.sum(a, (1,), out=r)",
    ),
    "matmul": ('"hir.matmul"(%a, %b, %o) : (T, T, T) -> ()', "torch.matmul(a, b, out=o)"),
}


def straight_line(kinds: list[str], n: int) -> tuple[str, Callable]:
    """n ops cycling through ``kinds``: the hir program and the same calls as eager code."""
    seq = [kinds[i % len(kinds)] for i in range(n)]
    body = "\n".join("  " + OPS[k][0].replace("T", T) for k in seq)
    text = f"func.func @main(%a: {T}, %b: {T}, %o: {T}, %r: memref<4xf32>) {{\n{body}\n  return\n}}"
    src = "def eager(a, b, o, r):\n" + "\n".join("    " + OPS[k][1] for k in seq) + "\n"
    scope = {"torch": torch}
    exec(src, scope)  # eager code written out op by op, as a user would
    return text, scope["eager"]


LOOP = f"""func.func @main(%a: {T}, %b: {T}, %o: {T}, %r: memref<4xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.for"(%c0, %n, %c1) ({{
  ^bb0(%j: index):
    %i = arith.remsi %j, %c4 : index
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    %ra = "hir.alias_select"(%a, %i) {{axis = 0 : i64}} : ({T}, index) -> {V}
    %rb = "hir.alias_select"(%b, %i) {{axis = 0 : i64}} : ({T}, index) -> {V}
    %ro = "hir.alias_select"(%o, %i) {{axis = 0 : i64}} : ({T}, index) -> {V}
    "hir.binary"(%ra, %rb, %ro) {{kind = "mul"}} : ({V}, {V}, {V}) -> ()
    "hir.set_current_stream"(%user) : (!hir.stream) -> ()
    "hir.synchronize"(%s) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return
}}"""


def eager_loop(a, b, o, r, n, streams):
    """The eager version of LOOP: the same views and multiply, with the same stream
    switches and waits on CUDA (on CPU there are no streams, so eager does only the math)."""
    if streams is None:
        for j in range(n):
            i = j % 4
            torch.mul(a.select(0, i), b.select(0, i), out=o.select(0, i))
        return
    user = torch.cuda.current_stream()
    for j in range(n):
        i = j % 4
        s = streams[i]
        torch.cuda.set_stream(s)
        s.wait_stream(user)
        torch.mul(a.select(0, i), b.select(0, i), out=o.select(0, i))
        torch.cuda.set_stream(user)
        user.wait_stream(s)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--ops", type=int, default=200, help="ops per straight-line program / loop trip count")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--no-p2p", action="store_true", help="skip the 4-GPU P2P table")
    p.add_argument(
        "--profile", action="store_true", help="instead of the tables: cProfile the eager stream loop, hir and torch"
    )
    p.add_argument("--no-checks", action="store_true", help="skip the 2-rank Gloo header-check table")
    p.add_argument("--p2p-rank", action="store_true", help=argparse.SUPPRESS)  # a rank of the P2P table
    p.add_argument("--checks-rank", action="store_true", help=argparse.SUPPRESS)  # a rank of the checks table
    args = p.parse_args()
    if args.p2p_rank:
        return p2p_rank()
    if args.checks_rank:
        return checks_rank(args.repeat)
    dev = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    a, b, o = (torch.randn(*SHAPE, device=dev) for _ in range(3))
    r = torch.empty(4, device=dev)
    n = args.ops
    if args.profile:
        return profile_loop(dev, a, b, o, r, n, sync)
    rows = []
    cases = [
        ("binary add", ["add"]),
        ("set", ["set"]),
        ("reduction sum", ["sum"]),
        ("matmul", ["matmul"]),
        ("mixed add/mul/set/sum/matmul", ["add", "mul", "set", "sum", "matmul"]),
    ]
    for label, kinds in cases:
        text, eager = straight_line(kinds, n)
        prog = Program(hir.parse(text), device=str(dev), graph=False)
        inputs = [a, b, o, r]
        t_hir = best(lambda inputs=inputs, prog=prog: prog(inputs), args.repeat, 20, sync) / n
        t_eager = best(lambda eager=eager: eager(a, b, o, r), args.repeat, 20, sync) / n
        rows.append((f"{label} ({n} ops)", "op", t_hir, t_eager))
    prog = Program(hir.parse(LOOP), device=str(dev), graph=False)
    streams = [prog.streams.get(i) for i in range(4)] if dev.type == "cuda" else None
    t_hir = best(lambda: prog([a, b, o, r, n]), args.repeat, 10, sync) / n
    t_eager = best(lambda: eager_loop(a, b, o, r, n, streams), args.repeat, 10, sync) / n
    rows.append((f"stream loop, 11 hir ops/iter ({n} iters)", "iter", t_hir, t_eager))
    print(f"device: {dev}, torch {torch.__version__}, tensors {list(SHAPE)} f32")
    print("| case | unit | hir (us) | eager torch (us) | ratio |")
    print("|---|---|---:|---:|---:|")
    for label, unit, th, te in rows:
        print(f"| {label} | {unit} | {th * 1e6:.2f} | {te * 1e6:.2f} | {th / te:.2f}x |")
    if dev.type == "cuda":
        graph_rows(cases, args, a, b, o, r, sync, rows)
        auto_rows(cases, args, a, b, o, r, sync)
        if not args.no_p2p and torch.cuda.device_count() >= 4:
            p2p_table()
    else:
        state = Program(hir.parse(LOOP), device=str(dev)).graph_state
        print(f"\ngraph='auto' on {dev}: every call eager ({state.reason})")
        if not args.no_checks:
            checks_table(args.repeat)


def profile_loop(dev: torch.device, a, b, o, r, n: int, sync: Callable[[], None]) -> None:
    """Where the eager stream loop's host time goes: cProfile of 20 calls of the hir program
    (``graph=False``) and of the hand-written torch loop, the functions taking the most time
    of their own first."""
    import cProfile
    import pstats

    prog = Program(hir.parse(LOOP), device=str(dev), graph=False)
    streams = [prog.streams.get(i) for i in range(4)] if dev.type == "cuda" else None
    for label, fn in (
        ("hir eager", lambda: prog([a, b, o, r, n])),
        ("torch eager", lambda: eager_loop(a, b, o, r, n, streams)),
    ):
        fn()
        sync()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(20):
            fn()
        sync()
        profile.disable()
        print(f"=== {label}: stream loop, {n} iterations x 20 calls on {dev}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)


def host_only(fn: Callable[[], None], repeat: int, number: int, sync: Callable[[], None]) -> float:
    """Fastest host time of ``number`` calls without synchronizing between them."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
        sync()
    return min(times)


def graph_programs(cases, n: int, a, b, o, r) -> list[tuple[str, str, list, str]]:
    """(row label, program text, inputs, unit) of every case, the stream loop last."""
    programs = [(f"{label} ({n} ops)", straight_line(kinds, n)[0], [a, b, o, r], "op") for label, kinds in cases]
    programs.append((f"stream loop, 11 hir ops/iter ({n} iters)", LOOP, [a, b, o, r, n], "iter"))
    return programs


def graph_rows(cases, args, a, b, o, r, sync, eager_rows) -> None:
    """CUDA graph replay of the same programs (the multi-stream loop included)."""
    n = args.ops
    print()
    print("CUDA graph replay (Program(graph=True)): one capture, then replays")
    print("| case | unit | replay host (us) | replay wall (us) | eager hir (us) | eager torch (us) |")
    print("|---|---|---:|---:|---:|---:|")
    for (what, text, inputs, unit), (_, _, th, te) in zip(graph_programs(cases, n, a, b, o, r), eager_rows):
        prog = Program(hir.parse(text), device="cuda", graph=True)
        host = host_only(lambda inputs=inputs, prog=prog: prog(inputs), args.repeat, 20, sync) / n
        wall = best(lambda inputs=inputs, prog=prog: prog(inputs), args.repeat, 20, sync) / n
        print(f"| {what} | {unit} | {host * 1e6:.2f} | {wall * 1e6:.2f} | {th * 1e6:.2f} | {te * 1e6:.2f} |")


def auto_rows(cases, args, a, b, o, r, sync) -> None:
    """The default ``graph="auto"``: first call (eager), second call (capture + replay),
    then steady-state replays with the same buffers every call (a graph bound to them: no
    copies). Calls with other buffers replay a graph on static buffers (inputs copied in,
    written inputs copied back): that is what the graph=True table above measures."""
    n = args.ops
    print()
    print("graph='auto' (the default): first call eager, second captures, later calls replay")
    print("| case | unit | 1st call wall (us) | 2nd call (capture) wall (ms) | steady host (us) | steady wall (us) |")
    print("|---|---|---:|---:|---:|---:|")
    for what, text, inputs, unit in graph_programs(cases, n, a, b, o, r):
        prog = Program(hir.parse(text), device="cuda")
        sync()
        walls = []
        for _ in range(2):
            start = time.perf_counter()
            prog(inputs)
            sync()
            walls.append(time.perf_counter() - start)
        host = host_only(lambda inputs=inputs, prog=prog: prog(inputs), args.repeat, 20, sync) / n
        wall = best(lambda inputs=inputs, prog=prog: prog(inputs), args.repeat, 20, sync) / n
        assert prog.graph_state.last == "replay (bound)", prog.graph_state
        print(
            f"| {what} | {unit} | {walls[0] / n * 1e6:.2f} | "
            f"{walls[1] * 1e3:.2f} | {host * 1e6:.2f} | {wall * 1e6:.2f} |"
        )


P2P_RANKS = 4
P2P_PIPELINE = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=2},hir-lower"


def p2p_table() -> None:
    """Run :func:`p2p_rank` on 4 local ranks (one GPU each) and print rank 0's table."""
    from hir.tools.launch import launch

    result = launch(P2P_RANKS, [sys.executable, os.path.abspath(__file__), "--p2p-rank"], timeout_s=600)
    print()
    sys.stdout.write(result.ranks[0].stdout)
    if result.returncode:
        failed = result.ranks[result.first_failure] if result.first_failure is not None else result.ranks[0]
        print(f"P2P table failed (rank {failed.rank}, exit {result.returncode}): {failed.stderr.strip()[-2000:]}")


def p2p_rank() -> None:
    """One rank of the P2P table: the chunked copy-engine AG+matmul and matmul+RS programs,
    eager (graph=False) against graph="auto", on small bf16 sizes where host time shows."""
    import torch.distributed as dist

    from dist_timing import bench, init_nccl  # benchmarks/dist_timing.py
    from overlap_programs import p2p_ag_matmul_program, p2p_matmul_rs_program  # benchmarks/overlap_programs.py

    rank = init_nccl()
    D, (M, K, N) = dist.get_world_size(), (2048, 1024, 1024)
    dev, bf16 = torch.device("cuda", rank), torch.bfloat16
    cases = (
        (
            "AG+matmul",
            p2p_ag_matmul_program,
            [torch.randn(1, M // D, K, device=dev, dtype=bf16), torch.randn(K, N // D, device=dev, dtype=bf16)],
        ),
        (
            "matmul+RS",
            p2p_matmul_rs_program,
            [
                torch.randn(D, 1, M // D, K // D, device=dev, dtype=bf16),
                torch.randn(1, 1, K // D, N, device=dev, dtype=bf16),
            ],
        ),
    )
    rows = []
    for name, build, inputs in cases:
        for mode in (False, "auto"):
            module = build(D, M, K, N)
            hir.lower(module, P2P_PIPELINE)
            program = Program(module, device=str(dev), num_streams=4, graph=mode)
            ms = bench(lambda inputs=inputs, program=program: program(inputs))  # its warm-up calls capture in auto mode
            host = []
            for _ in range(15):
                dist.barrier()
                torch.cuda.synchronize()
                start = time.perf_counter()
                program(inputs)
                host.append(time.perf_counter() - start)
            torch.cuda.synchronize()
            worst = torch.tensor([statistics.median(host)], device=dev)
            dist.all_reduce(worst, op=dist.ReduceOp.MAX)
            rows.append((name, "eager" if mode is False else "auto", worst.item() * 1e6, ms, program.graph_state.last))
    if rank == 0:
        print(
            f"chunked P2P programs ({P2P_PIPELINE}), {D} GPUs, bf16, M={M} K={K} N={N} ({torch.cuda.get_device_name()})"
        )
        print("| program | graph | host per call (us) | wall per call (ms) | last call |")
        print("|---|---|---:|---:|---|")
        for name, mode, host_us, ms, last in rows:
            print(f"| {name} | {mode} | {host_us:.1f} | {ms:.3f} | {last} |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
