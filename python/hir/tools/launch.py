"""Start N local processes of one command as the ranks of a torch.distributed run (what
``hir-run --nproc N`` does), and make a failure anywhere end the whole run: when one rank
exits non-zero the others are terminated, and a run past ``timeout_s`` is killed.

Each rank gets torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT on a free localhost port); its stdout and stderr are collected
separately so the caller can print them in rank order. Nothing of the run listens beyond
loopback: rank 0 hosts the store on 127.0.0.1 only
(:func:`hir.interpreter.backends.process_groups.rendezvous_store`) and Gloo binds to the
loopback interface ($GLOO_SOCKET_IFNAME, unless the caller set it).

The launcher names the rank whose failure brought the run down, and its cause
(:func:`_root_cause`): it sees each exit as it happens (a poll on the ranks' pidfds), and a
rank that fails on its own calls :func:`note_failure` first, before its peers' collectives
break.

A launch that fails part way (a rank cannot be started, the launcher is interrupted) stops
the ranks it started and removes its temporary folder before the error propagates. A
launcher killed outright (SIGKILL, the OOM killer) takes its ranks with it: each rank gets
SIGKILL when the launcher dies (Linux's parent-death signal), and the next launch removes the
temporary folders that launchers of this user which are no longer running left behind
(:func:`temporary_folder`). :func:`rank_limit` is how many ranks ``hir-run --nproc`` starts without ``--max-nproc``."""

import contextlib
import ctypes
import math
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from hir.interrupts import signals_held

GRACE_S = 5.0  # how long a terminated rank gets before it is killed
FAILURE_LOG_ENV = "HIR_FAILURE_LOG"
RANKS_PER_CPU = 4  # CPU ranks mostly wait on each other; more than this only thrashes


_PR_SET_PDEATHSIG = 1  # prctl option: the signal this process gets when its parent dies
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None  # loaded before any fork


class LaunchError(Exception):
    """A rank could not be started; the ranks already started were stopped."""


def rank_limit(cuda: bool) -> tuple[int, str]:
    """(the most local ranks a run may start, why): one per GPU on CUDA (NCCL needs a GPU per
    rank), else :data:`RANKS_PER_CPU` per CPU core."""
    if cuda:
        import torch  # imports torch: the CLI starts without it

        count = torch.cuda.device_count()
        return count, f"one rank per GPU, and this machine has {count} GPU(s)"
    cpus = os.cpu_count() or 1
    return RANKS_PER_CPU * cpus, f"{RANKS_PER_CPU} ranks per CPU core, and this machine has {cpus} core(s)"


@dataclass
class RankResult:
    rank: int
    returncode: int
    stdout: str
    stderr: str
    stopped: bool  # terminated by the launcher because another rank failed / timeout

    @property
    def cause(self) -> str:
        """How the rank ended, in words: ``exit status 1``, ``killed by SIGKILL``."""
        if self.returncode < 0:
            return f"killed by {_signal_name(-self.returncode)}"
        if self.returncode - 128 in _CLI_SIGNALS:
            return f"exit status {self.returncode}, after {_signal_name(self.returncode - 128)}"
        return f"exit status {self.returncode}"


# hir's CLIs exit 128 + N on these signals (hir.interrupts.cli_main) instead of dying of them
_CLI_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass
class LaunchResult:
    ranks: list[RankResult]
    first_failure: int | None  # the rank that failed first (None: all succeeded)
    timed_out: bool

    @property
    def returncode(self) -> int:
        if self.timed_out:
            return 124
        if self.first_failure is None:
            return 0
        code = self.ranks[self.first_failure].returncode
        return code if code > 0 else 1  # a rank killed by a signal still fails the run


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_interface() -> str | None:
    """The name of this machine's loopback network interface (``lo``), None when none is found."""
    try:
        names = sorted(os.listdir("/sys/class/net"))
    except OSError:
        return None
    for name in names:
        try:
            with open(f"/sys/class/net/{name}/flags") as f:
                flags = int(f.read(), 16)
        except (OSError, ValueError):
            continue
        if flags & 0x8:  # IFF_LOOPBACK
            return name
    return None


def launch(nproc: int, argv: Sequence[str], *, timeout_s: float | None = None, env: dict | None = None) -> LaunchResult:
    """Run ``argv`` as ``nproc`` ranks and wait for all of them (see the module docstring)."""
    if nproc < 1:
        raise ValueError(f"nproc must be >= 1, got {nproc}")
    base = dict(os.environ if env is None else env)
    base.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc)
    )
    interface = loopback_interface()
    if interface is not None:
        base.setdefault("GLOO_SOCKET_IFNAME", interface)  # else Gloo listens on the hostname's address
    with temporary_folder("hir-launch-") as tmp:
        log = os.path.join(tmp, "failures")
        base[FAILURE_LOG_ENV] = log
        procs, files = [], []
        try:
            for rank in range(nproc):
                files.append(
                    (open(os.path.join(tmp, f"{rank}.out"), "w+"), open(os.path.join(tmp, f"{rank}.err"), "w+"))
                )
                rank_env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
                try:
                    # A session of its own: a Ctrl-C at the terminal reaches the launcher
                    # only, which stops every rank (no rank prints its own interruption).
                    # A signal while Popen runs is held until the rank is in procs: raised
                    # between its fork and its return it would orphan the rank.
                    with signals_held():
                        procs.append(
                            subprocess.Popen(
                                list(argv),
                                env=rank_env,
                                stdout=files[-1][0],
                                stderr=files[-1][1],
                                stdin=subprocess.DEVNULL,
                                start_new_session=True,
                                preexec_fn=_dies_with(os.getpid()),
                            )
                        )
                except OSError as err:
                    raise LaunchError(f"cannot start rank {rank} of {nproc}: {err.strerror or err}") from None
            failed, timed_out, stopped = _supervise(procs, timeout_s)
            first_failure = _root_cause(log, failed, [p.returncode for p in procs])
            results = []
            for rank, (proc, (out, err)) in enumerate(zip(procs, files)):
                out.seek(0)
                err.seek(0)
                results.append(RankResult(rank, proc.returncode, out.read(), err.read(), rank in stopped))
        finally:  # on any failure part way, no rank outlives the launch
            _stop([p for p in procs if p.poll() is None])
            for out, err in files:
                out.close()
                err.close()
    return LaunchResult(results, first_failure, timed_out)


def _dies_with(launcher: int) -> Callable[[], None] | None:
    """What a rank runs between fork and exec: ask for SIGKILL when the launcher dies (in its
    own session, a rank would otherwise run on under init), and stop at once if the launcher
    died before the request."""
    if _LIBC is None:
        return None
    prctl = _LIBC.prctl

    def request() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != launcher:
            os.kill(os.getpid(), signal.SIGKILL)

    return request


@contextlib.contextmanager
def temporary_folder(prefix: str) -> Iterator[str]:
    """A temporary folder (0700) named ``<prefix><pid>-...`` after this process, removed on
    the way out; first removes the folders of the same prefix left by processes of this user
    that no longer run (a launcher killed by SIGKILL cannot remove its own)."""
    remove_stale_folders(prefix)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as folder:
        yield folder


def remove_stale_folders(prefix: str, where: str | None = None) -> list[str]:
    """Remove the folders ``<prefix><pid>-*`` under ``where`` (default: the temporary
    directory) that belong to this user and whose process ``pid`` no longer runs; returns them."""
    where = where or tempfile.gettempdir()
    try:
        names = os.listdir(where)
    except OSError:
        return []
    removed = []
    for name in names:
        pid = name[len(prefix) :].split("-", 1)[0]
        if not name.startswith(prefix) or not pid.isdigit():
            continue
        path = os.path.join(where, name)
        try:
            status = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not _running(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is no zombie (a container's init may
    never reap a launcher whose parent is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process now has the pid
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _supervise(procs: list, timeout_s: float | None) -> tuple[list[int], bool, set]:
    """Wait until every rank exits, one fails, or the timeout passes (then stop the others);
    returns the ranks that failed in the order they exited, whether the run timed out, and
    the ranks stopped."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    failed: list[int] = []
    with _Exits(procs) as exits:
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            failed += [rank for rank in exits.next(left) if procs[rank].returncode != 0]
            running = {rank for rank, p in enumerate(procs) if p.returncode is None}
            if not running:
                return failed, False, set()
            timed_out = deadline is not None and time.monotonic() >= deadline
            if failed or timed_out:
                _stop([procs[rank] for rank in running])
                return failed, timed_out, running


class _Exits:
    """The ranks' exits in the order they happen: a poll on each rank's pidfd wakes as soon
    as one exits (where pidfds are missing, every rank is polled each 20 ms)."""

    def __init__(self, procs: list) -> None:
        self.procs = procs
        self.ranks: dict[int, int] = {}  # pidfd -> rank
        self.poller: select.poll | None = select.poll()
        try:
            for rank, p in enumerate(procs):
                fd = os.pidfd_open(p.pid)
                self.ranks[fd] = rank
                self.poller.register(fd, select.POLLIN)
        except (AttributeError, OSError):  # no os.pidfd_open, or a kernel before 5.3
            self.close()
            self.poller = None

    def __enter__(self) -> "_Exits":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self.ranks:
            os.close(fd)
        self.ranks.clear()

    def next(self, timeout_s: float | None) -> list[int]:
        """The ranks that exited (now reaped) since the last call, in the order seen, after
        waiting up to ``timeout_s`` (None: for as long as it takes) for one."""
        if self.poller is None:
            exited = [rank for rank, p in enumerate(self.procs) if p.returncode is None and p.poll() is not None]
            if not exited:
                time.sleep(0.02 if timeout_s is None else min(0.02, timeout_s))
            return exited
        exited = []
        for fd, _ in self.poller.poll(None if timeout_s is None else math.ceil(timeout_s * 1000)):
            self.poller.unregister(fd)
            os.close(fd)
            rank = self.ranks.pop(fd)
            self.procs[rank].wait()  # it exited: this reaps it
            exited.append(rank)
        return exited


def note_failure() -> None:
    """Called by a rank that is about to fail on its own: appends its rank to the launcher's
    failure log, so the launcher can tell the root cause from peers that failed because of
    it (their collectives break when it exits, often before the launcher notices)."""
    path = os.environ.get(FAILURE_LOG_ENV)
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.environ.get('RANK', '0')}\n".encode())
        finally:
            os.close(fd)


def _root_cause(log: str, failed: list[int], returncodes: list) -> int | None:
    """The rank whose failure brought the run down, of those that ``failed`` (in exit order):
    the first killed by a signal (a crash, the OOM killer, a kill; the launcher had stopped no
    rank yet: a rank whose peer dies fails with an error, never a signal), else the first in
    the failure log (a rank failing on its own notes it before its peers' collectives break
    and they note theirs), else the first to exit."""
    if not failed:
        return None
    signalled = [rank for rank in failed if returncodes[rank] < 0 or returncodes[rank] - 128 in _CLI_SIGNALS]
    if signalled:
        return signalled[0]
    if os.path.exists(log):
        with open(log) as f:
            logged = [int(line) for line in f if line.strip().isdigit() and int(line) < len(returncodes)]
        if logged:
            return logged[0]
    return failed[0]


def _stop(procs: list) -> None:
    """Terminate the given child processes (ours, by handle), killing any that linger."""
    for p in procs:
        p.terminate()
    end = time.monotonic() + GRACE_S
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
