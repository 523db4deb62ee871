"""Speed of hir-opt against upstream torch-mlir-opt on the same generated module (parse,
verify and print; no pass), at several sizes.

    python benchmarks/opt_speed.py [--sizes 5,20,50] [--repeat 1] [--clock wall|cpu] [--keep DIR]

The module is shaped like what ``hir-import`` writes for a deep model: an entry function of
layers (an allocation, an ``hir.linear`` on the layer's weight arguments, a call of a kernel
segment, an ``hir.binary`` residual add) and one private function per layer (an ``hir.binary``
and an ``scf.for`` loop of ``hir.alias_select`` views and ``hir.set``), repeated until the file
reaches each size (MB). torch-mlir-opt reads hir through the dialect's IRDL (``hir-opt
--emit-irdl``). Both tools print to a file; the table gives seconds of each (best of --repeat,
process start included; wall or CPU time, --clock) and their ratio.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

T = "memref<4x64xf32>"


def layer(i: int, x: str) -> tuple[list[str], list[str], str]:
    """(entry-function lines, segment function lines, the layer's result) of layer ``i``."""
    w, b = f"%arg{2 * i}", f"%arg{2 * i + 1}"
    body = [
        f"%l{i} = memref.alloc() : {T}",
        f'"hir.linear"({x}, {w}, %l{i}, {b}) {{operandSegmentSizes = array<i32: '
        f"1, 1, 1, 1>}} : ({T}, memref<64x64xf32>, {T}, memref<64xf32>) -> ()",
        f"%s{i} = memref.alloc() : {T}",
        f"call @segment_{i}(%l{i}, %s{i}) : ({T}, {T}) -> ()",
        f"%r{i} = memref.alloc() : {T}",
        f'"hir.binary"(%s{i}, {x}, %r{i}) {{kind = "add"}} : ({T}, {T}, {T}) -> ()',
    ]
    segment = [
        f"func.func private @segment_{i}(%arg0: {T}, %arg1: {T}) {{",
        "  %c0 = arith.constant 0 : index",
        "  %c4 = arith.constant 4 : index",
        "  %c1 = arith.constant 1 : index",
        f"  %t = memref.alloc() : {T}",
        f'  "hir.binary"(%arg0, %arg0, %t) {{kind = "mul", stream_axis = 0 : i64}} : ({T}, {T}, {T}) -> ()',
        "  scf.for %j = %c0 to %c4 step %c1 {",
        f'    %row = "hir.alias_select"(%t, %j) {{axis = 0 : i64}} '
        f": ({T}, index) -> memref<64xf32, strided<[1], offset: ?>>",
        f'    %out = "hir.alias_select"(%arg1, %j) {{axis = 0 : i64}} '
        f": ({T}, index) -> memref<64xf32, strided<[1], offset: ?>>",
        '    "hir.set"(%row, %out) : (memref<64xf32, strided<[1], '
        "offset: ?>>, memref<64xf32, strided<[1], offset: ?>>) -> ()",
        "  }",
        f"  memref.dealloc %t : {T}",
        "  return",
        "}",
    ]
    return body, segment, f"%r{i}"


def generate(megabytes: float) -> str:
    """A module of about ``megabytes`` MB (see the module docstring)."""
    body, segments, params, x, size, i = [], [], [], "%x", 0, 0
    while size < megabytes * 1e6:
        lines, segment, x = layer(i, x)
        params += [
            f'%arg{2 * i}: memref<64x64xf32> {{hir.parameter, hir.weight = "layers.{i}.weight"}}',
            f'%arg{2 * i + 1}: memref<64xf32> {{hir.parameter, hir.weight = "layers.{i}.bias"}}',
        ]
        body += lines
        segments += segment
        size += sum(len(line) + 5 for line in lines + segment) + len(params[-1]) + len(params[-2])
        i += 1
    main = (
        f"func.func @main({', '.join(params)}, %x: {T}) -> {T} {{\n    "
        + "\n    ".join(body)
        + f"\n    return {x} : {T}\n  }}"
    )
    return "module {\n  " + main + "\n  " + "\n  ".join(segments) + "\n}\n"


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], repeat: int, clock: str) -> float:
    """Best seconds of ``command`` (its stdout to a file, as a user's -o would be): wall
    time, or with ``clock="cpu"`` the CPU time of the process (on a machine shared with
    other jobs, close to what an idle machine's wall clock gives)."""
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryFile() as out:
            start, start_cpu = time.perf_counter(), cpu_seconds()
            run = subprocess.run(command, stdout=out, stderr=subprocess.PIPE, text=True)
            times.append(cpu_seconds() - start_cpu if clock == "cpu" else time.perf_counter() - start)
        if run.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({run.returncode}): {run.stderr[-2000:]}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5,20,50", help="module sizes in MB, comma-separated (default 5,20,50)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tool per size; the best counts (default 1)")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="wall time, or CPU time of each process (default wall)"
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="write the generated modules to DIR (default: a temporary folder)"
    )
    args = parser.parse_args()
    upstream = shutil.which("torch-mlir-opt")
    hir_opt = [sys.executable, "-m", "hir.tools.opt"]
    folder = args.keep or tempfile.mkdtemp(prefix="hir-opt-speed-")
    os.makedirs(folder, exist_ok=True)
    irdl = os.path.join(folder, "hir.irdl.mlir")
    with open(irdl, "w") as f:
        subprocess.run(hir_opt + ["--emit-irdl"], stdout=f, check=True)
    print(f"| size (MB) | ops | hir-opt ({args.clock} s) | torch-mlir-opt ({args.clock} s) | ratio |")
    print("|---:|---:|---:|---:|---:|")
    try:
        for megabytes in (float(s) for s in args.sizes.split(",")):
            path = os.path.join(folder, f"module_{megabytes:g}mb.mlir")
            text = generate(megabytes)
            with open(path, "w") as f:
                f.write(text)
            ops = text.count("\n") - text.count("}\n")
            ours = timed(hir_opt + [path], args.repeat, args.clock)
            theirs = (
                timed([upstream, f"--irdl-file={irdl}", path], args.repeat, args.clock) if upstream else float("nan")
            )
            print(f"| {len(text) / 1e6:.1f} | {ops} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f}x |", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
