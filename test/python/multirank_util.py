"""The harness of the multi-rank tests: the test launches its own file once per rank
(``hir.tools.launch``); each rank's worker prints ``rank R: <case> ok`` per passing case
and its failures on stderr, and leaves the process group in order."""

import sys
from typing import Optional

LaunchReport = tuple[int, str]  # (" ok" lines over all ranks, every rank's output)


def finish_worker(failures: list[str]) -> int:
    """The worker's exit status after printing ``failures``; shuts the process group down
    (exiting with it alive aborts Gloo's threads)."""
    for failure in failures:
        print(failure, file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


def launch_workers(world: int, script: str, *, timeout_s: float, env: Optional[dict] = None) -> LaunchReport:
    """Run ``python script`` on ``world`` ranks; asserts every rank exited 0."""
    from hir.tools.launch import launch

    result = launch(world, [sys.executable, script], timeout_s=timeout_s, env=env)
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    return sum(r.stdout.count(" ok") for r in result.ranks), report
