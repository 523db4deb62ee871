"""Sampled wall-clock stacks of a command and of the Python processes it starts, and
their reading.

    python benchmarks/stacks.py run OUT -- python3 benchmarks/train.py --rows "hir default"
    python benchmarks/stacks.py top OUT/1234.txt [SUBSTRING]     # inclusive share per frame
    python benchmarks/stacks.py kids OUT/1234.txt FRAME [DEPTH]  # what FRAME's samples call

``run`` puts ``benchmarks/stack_sampler`` on ``PYTHONPATH`` (its ``sitecustomize`` samples
each process's main thread, :mod:`stack_sampler.sitecustomize`) and writes one file per
process into OUT. Samples are taken while the sampler thread holds the interpreter lock, so
a long stretch of C++ that keeps the lock is under-counted: read shares, not seconds.
"""

import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path: str) -> list[tuple[list[str], int]]:
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                stack, _, count = line.rstrip().rpartition(" ")
                rows.append((stack.split(";"), int(count)))
    return rows


def top(rows: list, substring: str = "") -> None:
    total = sum(n for _, n in rows)
    inclusive: collections.Counter = collections.Counter()
    for stack, n in rows:
        for frame in set(stack):
            inclusive[frame] += n
    for frame, n in inclusive.most_common():
        if substring in frame and n / total >= 0.005:
            print(f"{100 * n / total:5.1f}%  {frame}")


def kids(rows: list, target: str, depth: int = 1) -> None:
    total = sum(n for _, n in rows)
    below: collections.Counter = collections.Counter()
    inside = 0
    for stack, n in rows:
        at = next((i for i, frame in enumerate(stack) if target in frame), None)
        if at is None:
            continue
        inside += n
        below[";".join(stack[at + 1 : at + 1 + depth]) or "<self>"] += n
    print(f"{target}: {100 * inside / total:.1f}% of {total} samples")
    for path, n in below.most_common(25):
        print(f"  {100 * n / total:5.1f}%  {path}")


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "run" and "--" in argv:
        command = argv[argv.index("--") + 1 :]
        path = os.path.join(HERE, "stack_sampler")
        env = dict(os.environ, HIR_SAMPLE_OUT=os.path.abspath(argv[1]))
        env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return subprocess.run(command, env=env).returncode
    if len(argv) >= 2 and argv[0] == "top":
        top(load(argv[1]), argv[2] if len(argv) > 2 else "")
        return 0
    if len(argv) >= 3 and argv[0] == "kids":
        kids(load(argv[1]), argv[2], int(argv[3]) if len(argv) > 3 else 1)
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
