"""The harness of the multi-rank tests: the test launches its own file once per rank
(:func:`launch_ranks`: ``hir.tools.launch``'s environment and supervision, the ranks forked
from ``rank_zygote.py``, past their imports); each rank's worker prints ``rank R: <case> ok``
per passing case and its failures on stderr, and leaves the process group in order."""

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

from hir.tools.launch import FAILURE_LOG_ENV, GRACE_S, LaunchResult, RankResult, _root_cause, free_port, launch

LaunchReport = tuple[int, str]  # (" ok" lines over all ranks, every rank's output)


def finish_worker(failures: list[str]) -> int:
    """The worker's exit status after printing ``failures``; shuts the process group down
    (exiting with it alive aborts Gloo's threads)."""
    for failure in failures:
        print(failure, file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


def run_gloo_cases(cases: Sequence[str], run_case: Callable[[str, int, int], str]) -> int:
    """A worker: joins the Gloo group of the launch, runs ``run_case(name, rank, world)``
    for each case (it returns "" or what failed) and reports as :func:`finish_worker`."""
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    failures = []
    for name in cases:
        failure = run_case(name, rank, world)
        if failure:
            failures.append(failure)
        else:
            print(f"rank {rank}: {name} ok")
    return finish_worker(failures)


_ZYGOTE: subprocess.Popen | None = None


def _zygote() -> subprocess.Popen:
    """The session's zygote (started on first use, ended with the session's interpreter)."""
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE.poll() is not None:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rank_zygote.py")
        _ZYGOTE = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        atexit.register(_end_zygote, _ZYGOTE)
    return _ZYGOTE


def _end_zygote(zygote: subprocess.Popen) -> None:
    """End of input ends the zygote; waiting for it counts its ranks' CPU time as ours."""
    zygote.stdin.close()
    zygote.wait()


def _replies(zygote: subprocess.Popen, wait_s: float) -> list[dict]:
    """The zygote's answers that arrive within ``wait_s`` (each line whole)."""
    out = zygote.stdout.fileno()
    lines: list[bytes] = []
    buffer = b""
    while select.select([out], [], [], wait_s)[0] or buffer:
        data = os.read(out, 65536)
        if not data:
            raise RuntimeError("the rank zygote exited")
        buffer += data
        *complete, buffer = buffer.split(b"\n")
        lines += complete
        wait_s = 5.0 if buffer else 0.0  # a line cut by the pipe: its rest follows
    return [json.loads(line) for line in lines]


def launch_ranks(nproc: int, script: str, *args: str, timeout_s: float, env: dict | None = None) -> LaunchResult:
    """``hir.tools.launch.launch(nproc, [python, script, *args], ...)`` with the ranks forked
    from the zygote: the same rank environment, a failure or ``timeout_s`` stopping every
    rank, the same result. With CUDA: ``launch`` itself (no CUDA state may cross a fork)."""
    import torch

    if torch.cuda.is_available():
        return launch(nproc, [sys.executable, script, *args], timeout_s=timeout_s, env=env)
    base = dict(os.environ if env is None else env)
    base.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc)
    )
    with tempfile.TemporaryDirectory(prefix="hir-ranks-") as tmp:
        log = base[FAILURE_LOG_ENV] = os.path.join(tmp, "failures")
        ranks = [dict(base, RANK=str(rank), LOCAL_RANK=str(rank)) for rank in range(nproc)]
        result = run_forked(script, list(args), ranks, os.getcwd(), timeout_s, tmp)
        failed = [] if result.first_failure is None else [result.first_failure]
        result.first_failure = _root_cause(log, failed, [rank.returncode for rank in result.ranks])
    return result


def run_forked(script: str, args: list[str], envs: list[dict], cwd: str, timeout_s: float, folder: str) -> LaunchResult:
    """``python script *args`` once per environment in ``envs``, forked from the zygote, in
    ``cwd`` (outputs kept in ``folder``); the first failure or ``timeout_s`` stops the rest."""
    zygote = _zygote()
    pids, codes = [], {}
    for rank, env in enumerate(envs):
        request = {
            "script": script,
            "args": args,
            "env": env,
            "cwd": cwd,
            "out": os.path.join(folder, f"{rank}.out"),
            "err": os.path.join(folder, f"{rank}.err"),
        }
        zygote.stdin.write((json.dumps(request) + "\n").encode())
        while len(pids) <= rank:
            for reply in _replies(zygote, 60.0):
                if "pid" in reply:
                    pids.append(reply["pid"])
                else:
                    codes[reply["exit"]] = reply["code"]
    deadline, kill_at = time.monotonic() + timeout_s, None
    first_failure, stopped, timed_out = None, set(), False
    while len(codes) < len(pids):
        for reply in _replies(zygote, 0.02):
            codes[reply["exit"]] = reply["code"]
        if first_failure is None:
            failed = [r for r, pid in enumerate(pids) if codes.get(pid, 0) != 0]
            first_failure = failed[0] if failed else None
        if kill_at is None and (first_failure is not None or time.monotonic() > deadline):
            timed_out = first_failure is None
            stopped = {r for r, pid in enumerate(pids) if pid not in codes}
            _signal([pids[r] for r in stopped], signal.SIGTERM)
            kill_at = time.monotonic() + GRACE_S
        elif kill_at is not None and time.monotonic() > kill_at:
            _signal([pid for pid in pids if pid not in codes], signal.SIGKILL)
    results = []
    for rank, pid in enumerate(pids):
        with open(os.path.join(folder, f"{rank}.out")) as out, open(os.path.join(folder, f"{rank}.err")) as err:
            results.append(RankResult(rank, codes[pid], out.read(), err.read(), rank in stopped))
    return LaunchResult(results, first_failure, timed_out)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # ended; its exit is on the way
            pass


def launch_workers(world: int, script: str, *args: str, timeout_s: float, env: dict | None = None) -> LaunchReport:
    """Run ``python script *args`` on ``world`` ranks (:func:`launch_ranks`); asserts every rank exited 0."""
    result = launch_ranks(world, script, *args, timeout_s=timeout_s, env=env)
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    return sum(r.stdout.count(" ok") for r in result.ranks), report


def gpu_count() -> int:
    """The CUDA devices this machine has (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def launch_gpu_workers(world: int, script: str, *args: str, timeout_s: float) -> LaunchReport:
    """:func:`launch_workers` on ``world`` GPUs, symmetric memory without multicast
    (``backends/symmetric.py``'s ENV_FLAGS)."""
    from hir.interpreter.backends.symmetric import ENV_FLAGS

    return launch_workers(world, script, *args, timeout_s=timeout_s, env={**os.environ, **ENV_FLAGS})
