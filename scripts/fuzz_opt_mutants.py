#!/usr/bin/env python3
"""Mutant fuzzing of hir-opt: random mutants of the lit inputs must give a clean result or a
clean error, never a Python traceback / internal error, a hang or a crash.

    python scripts/fuzz_opt_mutants.py --count 600 --seed 0 [--jobs 2] [--keep DIR]

Mutants come from test/Dialect and test/Transforms files: a line deleted, duplicated or two
lines swapped; a token deleted, duplicated or two tokens swapped; a random byte slice cut;
the body wrapped in hundreds of nested regions (deep nesting). Each runs through hir-opt's
``main`` with the file's own RUN-line pipeline and flags, in a forked child (the parent has
the modules imported, so a run costs milliseconds) under a timeout. A child that exits with
2 (hir-opt's internal error) or prints a traceback counts as a traceback, one past the
timeout as a hang, one killed by a signal as a crash. Prints the counts (one line of JSON at
the end) and exits 1 when any is non-zero; ``--keep`` saves the failing mutants.
"""

import argparse
import glob
import json
import os
import random
import re
import shlex
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = re.compile(r'"[^"\n]*"|%[\w.#]+|@[\w.]+|[\w.]+|\S')
FLAGS = ("--split-input-file", "--verify-diagnostics")


def sources() -> list[tuple[str, str, list[str]]]:
    """(path, text, hir-opt flags from its first RUN line) of every seed file."""
    out = []
    for path in sorted(
        glob.glob(os.path.join(ROOT, "test", "Dialect", "*.mlir"))
        + glob.glob(os.path.join(ROOT, "test", "Transforms", "*.mlir"))
    ):
        text = open(path, encoding="utf-8").read()
        flags: list[str] = []
        m = re.search(r"^// RUN: hir-opt %s(.*?)(\||$)", text, re.M)
        if m:
            for word in shlex.split(m.group(1)):
                if word.startswith(("--pass-pipeline", "-p=")) or word in FLAGS:
                    flags.append(word)
        out.append((path, text, flags))
    return out


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """(mutation kind, mutant)."""
    lines = text.split("\n")
    kind = rng.choice(
        [
            "delete-line",
            "duplicate-line",
            "swap-lines",
            "delete-token",
            "duplicate-token",
            "swap-tokens",
            "cut",
            "deep-nesting",
        ]
    )
    if kind == "delete-line":
        del lines[rng.randrange(len(lines))]
    elif kind == "duplicate-line":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == "swap-lines":
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "cut":
        i = rng.randrange(len(text) + 1)
        return kind, text[:i] + text[i + rng.randrange(1, 40) :]
    elif kind == "deep-nesting":
        depth = rng.choice([300, 600, 3000, 10000])
        opener = rng.choice(["{", "(", "[", "<", '"hir.for"(%c, %c, %c) ({\n^bb0(%i: index):\n'])
        return kind, opener * depth + text
    else:
        spans = [m.span() for m in TOKEN.finditer(text)]
        if not spans:
            return kind, text
        a, b = spans[rng.randrange(len(spans))]
        if kind == "delete-token":
            return kind, text[:a] + text[b:]
        if kind == "duplicate-token":
            return kind, text[:b] + " " + text[a:b] + text[b:]
        c, d = spans[rng.randrange(len(spans))]
        if (a, b) > (c, d):
            a, b, c, d = c, d, a, b
        if b > c:
            return kind, text
        return kind, text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    return kind, "\n".join(lines)


def run_child(path: str, flags: list[str], out_path: str) -> None:
    """In the forked child: hir-opt on ``path``, stdout discarded, stderr to ``out_path``."""
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(fd, 2)
    from hir.tools import opt

    try:
        code = opt.main([path, *flags])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - a traceback escaping main is what we count
        import traceback

        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a mutant counts as a hang")
    ap.add_argument("--keep", help="folder to copy failing mutants into")
    args = ap.parse_args()

    import hir.passes  # loaded once in the parent; children fork from it
    import hir.tools.opt  # noqa: F401

    rng = random.Random(args.seed)
    seeds = sources()
    work = tempfile.mkdtemp(prefix="hir-fuzz-")
    counts = {"mutants": 0, "ok": 0, "errors": 0, "tracebacks": 0, "hangs": 0, "crashes": 0}
    failures: list[dict] = []
    running: dict[int, tuple] = {}
    start = time.monotonic()

    def reap_one() -> None:
        """Wait for one child to end (or to pass the timeout) and count its outcome."""
        while True:
            now = time.monotonic()
            for pid, (t0, info) in list(running.items()):
                if now - t0 > args.timeout:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    finish(pid, info, "hangs")
                    return
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                time.sleep(0.005)
                continue
            info = running[pid][1]
            if os.WIFSIGNALED(status):
                finish(pid, info, "crashes", f"signal {os.WTERMSIG(status)}")
                return
            code = os.WEXITSTATUS(status)
            err = open(info["err"], encoding="utf-8", errors="replace").read()
            if code >= 2 or "Traceback" in err or "internal error" in err:
                finish(pid, info, "tracebacks", err[-400:])
            else:
                finish(pid, info, "ok" if code == 0 else "errors")
            return

    def finish(pid: int, info: dict, outcome: str, detail: str = "") -> None:
        running.pop(pid, None)
        counts[outcome] += 1
        if outcome in ("tracebacks", "hangs", "crashes"):
            failures.append(
                {
                    "outcome": outcome,
                    "seed": info["seed"],
                    "kind": info["kind"],
                    "flags": info["flags"],
                    "detail": detail.strip()[-300:],
                }
            )
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                os.replace(info["path"], os.path.join(args.keep, f"{len(failures):03d}-{outcome}.mlir"))
                return
        os.remove(info["path"])
        os.remove(info["err"])

    for n in range(args.count):
        path_, text, flags = rng.choice(seeds)
        kind, mutant = mutate(text, rng)
        path = os.path.join(work, f"m{n}.mlir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(mutant)
        info = {"path": path, "err": path + ".err", "seed": os.path.relpath(path_, ROOT), "kind": kind, "flags": flags}
        while len(running) >= args.jobs:
            reap_one()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(path, flags, info["err"])
        running[pid] = (time.monotonic(), info)
        counts["mutants"] += 1
    while running:
        reap_one()
    if not os.listdir(work):
        os.rmdir(work)
    for failure in failures:
        print(json.dumps(failure))
    counts["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(counts))
    return 1 if counts["tracebacks"] or counts["hangs"] or counts["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
