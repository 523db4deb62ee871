"""``hir-run --nproc N`` and the ranks of a launch: refusing more ranks than the machine can
run, starting the ranks and reporting them in rank order, and a rank's own ``--timeout``."""

import argparse
import os
import sys
import threading

from hir import progress
from hir.tools.cli_common import CliError, write_stdout

RANKS_UP_ENV = "HIR_RANKS_UP"  # where ranks of hir-run --nproc say they are up


def launched_rank() -> bool:
    """Whether this process is a rank of a run another launcher started (torchrun sets RANK
    and WORLD_SIZE; ``hir-run --nproc``'s own ranks carry --nproc)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def stop_rank_after(seconds: float) -> None:
    """``--timeout`` on a rank of a torchrun launch: the rank stops itself after ``seconds``
    with status 124, wherever it is blocked (a collective waiting for a dead node
    included); torchrun then stops the node's other ranks and exits non-zero."""

    def expire() -> None:
        rank = os.environ.get("RANK", "0")
        sys.stderr.write(
            f"hir-run: error: --timeout {seconds:g}: rank {rank} did not finish in time; stopped it (exit status 124)\n"
        )
        sys.stderr.flush()
        os._exit(124)  # no unwinding: the main thread may be inside a blocking collective

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def gpu_nodes() -> bool:
    """Whether the machine shows NVIDIA device nodes (/dev/nvidia0...): without any, CUDA
    cannot be available."""
    try:
        return any(name.startswith("nvidia") and name[len("nvidia") :].isdigit() for name in os.listdir("/dev"))
    except OSError:
        return True


def check_nproc(args: argparse.Namespace) -> None:
    """Refuse, before any rank starts, more ranks than the machine can run (``--max-nproc`` overrides)."""
    if args.max_nproc is not None:
        limit, why = args.max_nproc, f"--max-nproc {args.max_nproc}"
    else:
        from hir.tools.launch import rank_limit  # only with --nproc

        device = args.device or os.environ.get("HIR_DEVICE") or ""
        if device.startswith("cpu") or (not device and not gpu_nodes()):
            cuda = False  # decided without importing torch: the refusal comes at once
        else:
            import torch  # imports torch: the CLI starts without it

            cuda = device.startswith("cuda") or (not device and torch.cuda.is_available())
        limit, why = rank_limit(cuda)
    if args.nproc > limit:
        hint = "" if args.max_nproc is not None else "; --max-nproc N raises the limit"
        raise CliError(f"--nproc {args.nproc}: more ranks than this run may start (at most {limit}: {why}){hint}")


def launch_ranks(args: argparse.Namespace, argv: list[str]) -> int:
    """``--nproc N``: rerun this command line as N ranks and report in rank order. SIGINT
    and SIGTERM (see :func:`hir.interrupts.cli_main`) unwind through launch(), which stops
    every rank."""
    from hir.tools.launch import LaunchError, launch, temporary_folder  # loaded only for multi-rank runs

    env = dict(os.environ, HIR_LAUNCHED="1")
    try:
        with temporary_folder("hir-ranks-up-") as up:
            env[RANKS_UP_ENV] = up  # each rank marks itself up there (see mark_up)
            with progress.task(f"running {args.nproc} ranks", status=lambda: f"{len(os.listdir(up))}/{args.nproc} up"):
                result = launch(
                    args.nproc, [sys.executable, "-m", "hir.tools.run_cli", *argv], timeout_s=args.timeout, env=env
                )
    except LaunchError as err:
        print(f"hir-run: error: --nproc {args.nproc}: {err}; stopped the ranks already started", file=sys.stderr)
        return 1
    try:
        write_stdout("".join(rank.stdout for rank in result.ranks))
    except CliError as err:
        print(f"hir-run: error: {err}", file=sys.stderr)
        return 1
    if result.first_failure is not None:
        failed = result.ranks[result.first_failure]
        sys.stderr.write(failed.stderr)
        if args.nproc > 1:
            others = [
                r.rank
                for r in result.ranks
                if r.returncode not in (0, None) and not r.stopped and r.rank != failed.rank
            ]
            also = f" (then rank(s) {', '.join(map(str, others))} failed too)" if others else ""
            print(
                f"hir-run: rank {failed.rank} failed ({failed.cause}){also}; stopped the other ranks", file=sys.stderr
            )
    elif result.timed_out:
        print(
            f"hir-run: error: --timeout {args.timeout:g}: the run did "
            "not finish in time; stopped all ranks (exit status 124)",
            file=sys.stderr,
        )
    else:
        for rank in result.ranks:
            sys.stderr.write(rank.stderr)
    return result.returncode


def mark_up(rank: int) -> None:
    """A rank of ``hir-run --nproc`` says it is up, its inputs built: the launcher's progress
    line counts the ranks up."""
    if os.environ.get(RANKS_UP_ENV):
        open(os.path.join(os.environ[RANKS_UP_ENV], str(rank)), "w").close()


def rank_path(path: str, rank: int, world: int, default_ext: str) -> str:
    """``path`` for rank 0 (or a single process); ``ROOT.rankR.EXT`` for the other ranks."""
    if world > 1 and rank > 0:
        root, ext = os.path.splitext(path)
        return f"{root}.rank{rank}{ext or default_ext}"
    return path
