"""The harness of the multi-rank tests: the test launches its own file once per rank
(``hir.tools.launch``); each rank's worker prints ``rank R: <case> ok`` per passing case
and its failures on stderr, and leaves the process group in order."""

import os
import sys
from typing import Callable, Optional, Sequence

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


def launch_workers(world: int, script: str, *, timeout_s: float, env: Optional[dict] = None) -> LaunchReport:
    """Run ``python script`` on ``world`` ranks; asserts every rank exited 0."""
    from hir.tools.launch import launch

    result = launch(world, [sys.executable, script], timeout_s=timeout_s, env=env)
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    return sum(r.stdout.count(" ok") for r in result.ranks), report
