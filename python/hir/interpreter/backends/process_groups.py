"""Process-group plumbing: which rank this process is, the default device and backend,
process-group initialization (from torchrun's / ``hir-run --nproc``'s environment, or a
single-process group) and the cache of team sub-groups.

``torch.distributed.new_group`` is collective over the whole world, so every rank must create
the same groups in the same order: :meth:`Communicator.create_groups` is called with the
teams of a whole module, in op order, when a program is compiled (all ranks compile the same
module)."""

import atexit
import datetime
import gc
import os
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
import torch.distributed as dist

# Documented public names that torch.distributed imports from its native module without
# re-exporting them (no ``as``, not in ``__all__``), which pyright's py.typed rules read as private.
from torch.distributed import HashStore, Store, TCPStore  # pyright: ignore[reportPrivateImportUsage]

from hir.dialect.context import HirError

TIMEOUT_ENV = "HIR_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 60.0


def world() -> tuple[int, int]:
    """(rank, world size) of this process: from an initialized process group, else from the
    launcher's environment (RANK / WORLD_SIZE), else a single process."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def default_device(device: str | None = None) -> torch.device:
    """``device`` if given, else $HIR_DEVICE, else cuda when available, else cpu. A bare
    "cuda" in a multi-process run means this process's GPU (LOCAL_RANK)."""
    env = os.environ.get("HIR_DEVICE")
    name = device or env or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        where = f"device={device!r}" if device else f"$HIR_DEVICE={env!r}"
        raise ValueError(f"{where}: not a device (cpu, cuda or cuda:N)") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(
            f"{f'device={device!r}' if device else f'$HIR_DEVICE={env!r}'}: hir runs on cpu or cuda, not {dev.type}"
        )
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' requested but CUDA is not available")
        if dev.index is None:
            dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    return dev


def timeout() -> datetime.timedelta:
    """How long a collective may block before the process group fails it ($HIR_DIST_TIMEOUT
    seconds), so a dead peer makes every rank fail instead of hanging."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return datetime.timedelta(seconds=DEFAULT_TIMEOUT_S)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < 1e9:
        raise HirError(
            f"error: ${TIMEOUT_ENV}={raw!r}: expected a number of seconds > 0 (default {DEFAULT_TIMEOUT_S:g})"
        )
    return datetime.timedelta(seconds=seconds)


class Communicator:
    """The process group of the run and its team sub-groups."""

    # Shared by every program of the process; a rank outside a team holds torch's
    # non-member marker (an int) for it.
    _groups: dict[tuple[int, str, tuple[int, ...]], dist.ProcessGroup | int | None] = {}

    def __init__(self, device: torch.device, backend: str | None) -> None:
        if not (dist.is_available() and dist.is_initialized()):
            init_process_group(device, backend)
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.backend = str(dist.get_backend())
        self.device = device

    def create_groups(self, teams: Iterable[tuple[int, ...]]) -> None:
        """Create (collectively, in the given order) every team's group not cached yet."""
        for team in teams:
            self._cached(tuple(sorted(team)))

    def group(self, team: Iterable[int]) -> dist.ProcessGroup | None:
        """The process group of ``team``, of which this rank is a member (the world group, or
        None, torch's name for it, when the team is everyone)."""
        ranks = tuple(sorted(team))
        group = self._cached(ranks)
        assert not isinstance(group, int), f"rank {self.rank} asked for the group of team {list(ranks)}, not its own"
        return group

    def _cached(self, ranks: tuple[int, ...]) -> dist.ProcessGroup | int | None:
        if ranks == tuple(range(self.world_size)):
            return dist.group.WORLD
        key = (id(dist.group.WORLD), self.backend, ranks)  # a re-initialized world gets new groups
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = dist.new_group(list(ranks), timeout=timeout())
        return group

    def is_gloo(self, group: dist.ProcessGroup | None) -> bool:
        return str(dist.get_backend(group)) == "gloo"


@atexit.register
def _drop_groups() -> None:
    """Release cached sub-groups while the interpreter is still whole: a Gloo group whose
    last reference dies during interpreter teardown aborts the process."""
    Communicator._groups.clear()


def init_process_group(device: torch.device, backend: str | None) -> None:
    """Initialize the default process group: from the environment when launched with
    several processes (rank 0 hosting the store on $MASTER_ADDR, :func:`rendezvous_store`,
    unless torchrun's agent hosts it), else a one-process group on an in-memory store."""
    backend = backend or ("nccl" if device.type == "cuda" else "gloo")
    rank, size = world()
    # With device_id NCCL initializes its communicator eagerly and send/recv run on it; lazily,
    # every send/recv pair creates its own 2-rank communicator, which deadlocks a ring
    # (rank r creates {r, r+1} while rank r+1 waits in {r+1, r+2}).
    device_id = device if device.type == "cuda" and backend == "nccl" else None
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if size > 1:
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # torchrun's agent hosts the store
            dist.init_process_group(
                backend, init_method="env://", rank=rank, world_size=size, timeout=timeout(), device_id=device_id
            )
        else:
            dist.init_process_group(
                backend,
                store=rendezvous_store(rank, size),
                rank=rank,
                world_size=size,
                timeout=timeout(),
                device_id=device_id,
            )
    else:
        dist.init_process_group(
            backend, store=HashStore(), rank=0, world_size=1, timeout=timeout(), device_id=device_id
        )


def rendezvous_store(rank: int, size: int) -> Store:
    """The store of an ``env://`` rendezvous whose rank 0 hosts it (``hir-run --nproc``, a
    launcher of the user's): rank 0 listens on $MASTER_ADDR:$MASTER_PORT only, where torch's
    own store listens on every interface (any host reaching the machine could read and
    write the run's keys); the other ranks connect there."""
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not host or port is None or not port.isdigit() or not 0 < int(port) < 65536:
        raise HirError(
            f"error: a {size}-rank run needs $MASTER_ADDR and $MASTER_PORT (a port number) set, "
            f"got MASTER_ADDR={host!r} MASTER_PORT={port!r}"
        )
    listening = _listen(host, int(port)) if rank == 0 else None
    return TCPStore(host, int(port), size, is_master=rank == 0, timeout=timeout(), master_listen_fd=listening)


def _listen(host: str, port: int) -> int:
    """The file descriptor of a socket listening on ``host``:``port`` (the first of its
    addresses that can be bound), handed over to the store."""
    errors = []
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        addresses, errors = [], [str(err)]
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(socket.SOMAXCONN)
        except OSError as err:
            sock.close()
            errors.append(f"{address[0]}: {err.strerror or err}")
            continue
        return sock.detach()
    raise HirError(
        "error: rank 0 cannot listen for the run's store on "
        f"MASTER_ADDR={host} port {port} ({'; '.join(errors) or 'no address'}): "
        "$MASTER_ADDR must be an address of rank 0's machine"
    )


@contextmanager
def run_scope() -> Iterator[None]:
    """The scope of one run (:func:`hir.run`): a process group created inside it is destroyed
    when it ends after a failure, or when the run had a single rank, so no half-used or
    one-rank group is left to the next call (a later multi-rank import would see world size
    1). A multi-rank group of a successful run stays for the next run of the process."""
    before = dist.is_available() and dist.is_initialized()
    ok = False
    try:
        yield
        ok = True
    finally:
        if not before and dist.is_available() and dist.is_initialized() and (not ok or dist.get_world_size() == 1):
            shutdown(wait_for_peers=False)


def shutdown(wait_for_peers: bool = True) -> None:
    """Leave torch.distributed in order: wait for every rank (not after a failure, when peers
    may be blocked in a collective), drop the cached team groups while the default group is
    alive, then destroy it. Exiting with Gloo groups still referenced lets their threads die
    in interpreter teardown, which aborts the process."""
    if dist.is_available() and dist.is_initialized():
        if wait_for_peers:
            dist.barrier()
        Communicator._groups.clear()
        gc.collect()
        dist.destroy_process_group()
