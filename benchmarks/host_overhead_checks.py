"""The checks table of benchmarks/host_overhead.py: the cost of the collectives' header exchange
(``HIR_CHECK_COLLECTIVES``) on 2 Gloo ranks, each program of ``CHECK_CALLS`` collectives timed
with the exchange off and on. The ranks run host_overhead.py --checks-rank."""

import os
import sys
import time

import torch

import hir
from hir.interpreter import Program

CHECK_RANKS = 2
CHECK_CALLS = 50  # collectives per program (each waited on at once)
CHECK_CASES = (("allreduce", [16]), ("allreduce", [65536]), ("allgather", [16]))


def checks_table(repeat: int) -> None:
    """Run :func:`checks_rank` on 2 Gloo ranks and print rank 0's table."""
    from hir.tools.launch import launch

    result = launch(
        CHECK_RANKS,
        [
            sys.executable,
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_overhead.py"),
            "--checks-rank",
            "--repeat",
            str(repeat),
        ],
        timeout_s=600,
        env=dict(os.environ, HIR_DEVICE="cpu"),
    )
    print()
    sys.stdout.write(result.ranks[0].stdout)
    if result.returncode:
        failed = result.ranks[result.first_failure] if result.first_failure is not None else result.ranks[0]
        print(f"checks table failed (rank {failed.rank}, exit {result.returncode}): {failed.stderr.strip()[-2000:]}")


def collective_program(kind: str, n: int, world: int) -> str:
    """``CHECK_CALLS`` collectives of f32[n] per rank, each waited on at once."""
    shard = f"#hir.shard<array<i64: {', '.join(map(str, range(world)))}>, 0 : i64>"
    tin = f"memref<{world}x{n}xf32, {shard}>"
    tout = f"memref<{n}xf32>" if kind == "allreduce" else f"memref<{world}x{n}xf32>"
    extra = ', reduction = "sum"' if kind == "allreduce" else ""
    team = f"array<i64: {', '.join(map(str, range(world)))}>"
    op = (
        f'  %w{{i}} = "hir.{kind}"(%x, %y) {{{{axis = 0 : i64, backend = '
        f'"gloo"{extra}, team = {team}}}}} : ({tin}, {tout}) -> !hir.work\n'
        f'  "hir.wait"(%w{{i}}) : (!hir.work) -> ()\n'
    )
    body = "".join(op.format(i=i) for i in range(CHECK_CALLS))
    return f"func.func @main(%x: {tin}, %y: {tout}) {{\n{body}  return\n}}\n"


def checks_rank(repeat: int) -> None:
    """One rank of the checks table: each collective program compiled with the header
    exchange off and on, timed in turns (best of ``repeat``), the slowest rank's time."""
    import torch.distributed as dist

    from hir.interpreter.backends.headers import CHECK_ENV

    dist.init_process_group("gloo")
    world = dist.get_world_size()
    rows = []
    for kind, (n,) in CHECK_CASES:
        x = torch.randn(1, n)
        y = torch.empty(n) if kind == "allreduce" else torch.empty(world, n)
        programs = {}
        for check in ("0", "1"):
            os.environ[CHECK_ENV] = check  # read when the program is compiled
            programs[check] = Program(hir.parse(collective_program(kind, n, world)), device="cpu", graph=False)
        # Gloo sets up a collective's first use of a size: paid here, not by the first timed call
        warm = torch.empty(world, n)
        dist.all_reduce(warm[0]) if kind == "allreduce" else dist.all_gather(list(warm), x[0])
        times = {check: [] for check in programs}
        for _ in range(repeat):
            for check, program in programs.items():
                dist.barrier()
                start = time.perf_counter()
                program([x, y])
                times[check].append((time.perf_counter() - start) / CHECK_CALLS)
        # the first call of the checked program verifies (a header per collective)
        got = torch.tensor([min(times["0"]), min(times["1"]), times["0"][0], times["1"][0]], dtype=torch.float64)
        dist.all_reduce(got, op=dist.ReduceOp.MAX)
        rows.append((f"{kind} f32[{n}]", *got.tolist()))
    if dist.get_rank() == 0:
        print(
            f"Gloo collectives on {world} CPU ranks, {CHECK_CALLS} a "
            f"call, each waited on at once; best of {repeat}, slowest rank"
        )
        print(
            "| collective | unchecked (us) | checked (us) | check cost "
            "| first call: unchecked (us) | first call: checked (us) |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for label, off, on, first_off, first_on in rows:
            print(
                f"| {label} | {off * 1e6:.1f} | {on * 1e6:.1f} | {(on - off) / off * 100:+.0f}% "
                f"| {first_off * 1e6:.1f} | {first_on * 1e6:.1f} |"
            )
    dist.destroy_process_group()
