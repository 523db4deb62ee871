"""Cold start of the CLIs: a fresh process per run, side by side with ``python -c pass``.

    python benchmarks/cold_start.py [--repeat 9]

Rows: the interpreter alone, ``hir-opt`` on an empty module, ``hir-opt`` lowering the README's
example with ``hir-lower``, ``hir-run`` running it (torch imported), ``hir-import`` of a
one-layer module (torch.export and dynamo imported: the start-up test/lit_zygote.py saves
lit's RUN lines). Each row is the median wall time of ``--repeat`` runs (the runs of
all rows interleaved, so machine load hits them alike) and its ratio to ``python -c pass``;
``--cpu`` reports user+system CPU time of the child instead, steadier on a shared machine.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAM = """func.func @main(%arg0: memref<?x32xf32>, %arg1: memref<32x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x32xf32>
  %alloc = memref.alloc(%dim) : memref<?x8xf32>
  "hir.matmul"(%arg0, %arg1, %alloc) {stream_axis = 0 : i64}
      : (memref<?x32xf32>, memref<32x8xf32>, memref<?x8xf32>) -> ()
  %alloc_0 = memref.alloc(%dim) : memref<?x8xf32>
  "hir.binary"(%alloc, %alloc, %alloc_0) {kind = "add", stream_axis = 0 : i64}
      : (memref<?x8xf32>, memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %alloc_0 : memref<?x8xf32>
}
"""

MODEL = """import torch
module = torch.nn.Linear(4, 2)
example_args = (torch.ones(3, 4),)
"""


def run_once(command: list[str], cpu: bool) -> float:
    start = time.perf_counter()
    before = os.times()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = os.times()
    if cpu:
        return (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--cpu", action="store_true", help="child CPU time instead of wall time")
    args = parser.parse_args()
    tools = {
        tool: shutil.which(tool) or sys.exit(f"{tool} is not on PATH: install hir first")
        for tool in ("hir-opt", "hir-run", "hir-import")
    }
    hir_opt = tools["hir-opt"]
    with tempfile.TemporaryDirectory() as folder:
        empty = os.path.join(folder, "empty.mlir")
        program = os.path.join(folder, "program.mlir")
        with open(empty, "w") as f:
            f.write("module {}\n")
        with open(program, "w") as f:
            f.write(PROGRAM)
        model = os.path.join(folder, "model.py")
        with open(model, "w") as f:
            f.write(MODEL)
        rows = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "hir-opt empty.mlir": [hir_opt, empty],
            "hir-opt program.mlir -p builtin.module(hir-lower)": [hir_opt, program, "-p", "builtin.module(hir-lower)"],
            "hir-run program.mlir random:4x32 random:32x8": [tools["hir-run"], program, "random:4x32", "random:32x8"],
            "hir-import model.py": [tools["hir-import"], model, "-o", os.path.join(folder, "model.mlir")],
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        for command in rows.values():  # warm the file cache
            run_once(command, args.cpu)
        for _ in range(args.repeat):
            for name, command in rows.items():
                times[name].append(run_once(command, args.cpu))
    base = statistics.median(times["python -c pass"])
    clock = "CPU s" if args.cpu else "wall s"
    print(f"| command | median {clock} | x python -c pass |")
    print("|---|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| `{name}` | {median:.3f} | {median / base:.1f} |")


if __name__ == "__main__":
    main()
