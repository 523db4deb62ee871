"""Speed of hir-lower on a generated program-level module of N ops (default 10,000 ops in
@main's body: allocations plus compute ops, two thirds of the compute ops stream-parallel,
so the lowering builds thousands of loops, fuses pairs of them and inserts deallocations).

    python benchmarks/lower_speed.py [--ops 10000] [--repeat 3] [--no-hir-opt] [--clock cpu]

Prints a table: parse, each pipeline element (in-process, best of --repeat), the whole
hir-lower in-process, and hir-opt end to end (a fresh process: start-up included). Each
figure is also given as a multiple of the parse time ("x parse"): absolute seconds depend on
the machine and its load, the ratios much less, so a regression shows on any machine.
``--clock cpu`` times CPU seconds of this process (and of hir-opt's) instead of wall time:
on a machine shared with other jobs that is close to what an idle machine's wall clock gives.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import hir
import hir.passes

PIPELINE = "hir-lower"
T = "memref<?x64xf32>"


def generate(num_ops: int) -> str:
    """Blocks of 6 ops: two stream-parallel ops (fusable), then a plain op between loops."""
    lines = ["%c0 = arith.constant 0 : index", f"%S = memref.dim %arg0, %c0 : {T}"]
    prev, i = "%arg0", 0
    while len(lines) + 6 <= num_ops:
        a, b, c = f"%a{i}", f"%b{i}", f"%t{i}"
        lines += [
            f"{a} = memref.alloc(%S) : {T}",
            f'"hir.set"({prev}, {a}) {{stream_axis = 0 : i64}} : ({T}, {T}) -> ()',
            f"{b} = memref.alloc(%S) : {T}",
            f'"hir.binary"({a}, %arg1, {b}) {{kind = "add", stream_axis = 0 : i64}} : ({T}, memref<64xf32>, {T}) -> ()',
            f"{c} = memref.alloc(%S) : {T}",
            f'"hir.binary"({b}, {a}, {c}) {{kind = "mul"}} : ({T}, {T}, {T}) -> ()',
        ]
        prev, i = c, i + 1
    body = "\n  ".join(lines)
    return f"func.func @main(%arg0: {T}, %arg1: memref<64xf32>) -> {T} {{\n  {body}\n  return {prev} : {T}\n}}\n"


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (hir-opt runs)."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


CLOCK = time.perf_counter


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-hir-opt", action="store_true")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="wall time (default) or CPU time of the process"
    )
    args = parser.parse_args()
    global CLOCK
    CLOCK = cpu_seconds if args.clock == "cpu" else time.perf_counter
    text = generate(args.ops)
    n_ops = text.count("\n") - 2  # body lines
    rows = [("parse + verify", best(lambda: hir.parse(text), args.repeat))]

    per_pass = {}
    for _ in range(args.repeat):
        module = hir.parse(text)
        # Each element on its own, to time every pass separately.
        for element in hir.passes.parse_pipeline(PIPELINE):
            start = CLOCK()
            hir.lower(module, element.text)
            per_pass.setdefault(element.text, []).append(CLOCK() - start)
    rows += [(f"  {name}", min(ts)) for name, ts in per_pass.items()]

    total = best(lambda: hir.lower(hir.parse(text), PIPELINE), args.repeat)
    rows.append((f"{PIPELINE} in-process (parse + lower)", total))
    once = best(lambda: hir.lower(hir.parse(text), PIPELINE, verify_each=False), args.repeat)
    rows.append((f"{PIPELINE} in-process, verify once (verify_each=False)", once))
    lowered = whole_module(text)
    rows.append(("verify the lowered module", best(lambda: lowered.operation.verify(), args.repeat)))
    out_ops = str(lowered).count("\n")
    if not args.no_hir_opt and shutil.which("hir-opt"):
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(text)
        try:

            def cli() -> None:
                subprocess.run(
                    ["hir-opt", f.name, f"--pass-pipeline=builtin.module({PIPELINE})", "-o", os.devnull], check=True
                )

            rows.append((f"hir-opt --pass-pipeline={PIPELINE} (process)", best(cli, args.repeat)))
        finally:
            os.unlink(f.name)
    print(
        f"hir-lower speed: {n_ops} input ops -> ~{out_ops} output lines, "
        f"best of {args.repeat}, {os.cpu_count()} cores, {args.clock} clock"
    )
    parse_time = rows[0][1]
    print(f"{'step':<58} {'seconds':>8} {'x parse':>8}")
    for name, seconds in rows:
        print(f"{name:<58} {seconds:8.3f} {seconds / parse_time:8.2f}")


def whole_module(text: str):
    module = hir.parse(text)
    hir.lower(module, PIPELINE)
    return module


if __name__ == "__main__":
    sys.exit(main())
