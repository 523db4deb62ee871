"""A wall-clock stack sampler started in every Python process that has this folder on its
path (``benchmarks/stacks.py run`` puts it there): with ``HIR_SAMPLE_OUT=DIR`` set, a
thread reads the main thread's stack every few milliseconds and, when the process exits,
writes ``DIR/<pid>.txt``: its command line, then one line per distinct stack, frames root
first joined by ``;``, and its count. Inductor's compile workers write nothing. Waiting
(for the GPU, for a compile worker) is sampled like work: it is wall-clock time."""

import atexit
import collections
import os
import sys
import threading
import time

OUT = os.environ.get("HIR_SAMPLE_OUT")
INTERVAL_S = 0.005
PREFIXES = ("site-packages/", "/hir-src/", "/python3.12/", "/python3.11/")


def _frame_name(code) -> str:
    name = code.co_filename
    for prefix in PREFIXES:
        at = name.find(prefix)
        if at >= 0:
            name = name[at + len(prefix) :]
            break
    return f"{name}:{code.co_name}"


def _start(out: str) -> None:
    counts: collections.Counter = collections.Counter()
    main = threading.main_thread().ident
    state = {"on": True, "start": time.perf_counter(), "samples": 0}

    def sample() -> None:
        time.sleep(0.05)  # sys.argv is set by then
        if any("compile_worker" in a or "subproc" in a for a in sys.argv):
            return
        while state["on"]:
            frame = sys._current_frames().get(main)
            names = []
            while frame is not None:
                names.append(_frame_name(frame.f_code))
                frame = frame.f_back
            counts[";".join(reversed(names))] += 1
            state["samples"] += 1
            time.sleep(INTERVAL_S)

    def write() -> None:
        state["on"] = False
        if not counts:
            return
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, f"{os.getpid()}.txt"), "w") as f:
            wall = time.perf_counter() - state["start"]
            f.write(f"# argv {' '.join(sys.argv)}\n# wall {wall:.1f} s, samples {state['samples']}\n")
            for stack, n in counts.most_common():
                f.write(f"{stack} {n}\n")

    threading.Thread(target=sample, daemon=True).start()
    atexit.register(write)


if OUT:
    _start(OUT)
