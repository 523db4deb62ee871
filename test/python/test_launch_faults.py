"""``hir-run --nproc`` under faults and as seen from the network: nothing a single-node run
starts listens beyond loopback (read from /proc/net/tcp and tcp6 while the ranks are paused
at the test hook, see hir.interrupts); a launcher killed outright takes its ranks with it,
and the next launch removes the temporary folders it left; a rank killed mid-run is named,
with its signal, not the peer whose collective broke because of it."""

import ipaddress
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def program(nproc: int) -> str:
    """An allreduce over ``nproc`` ranks (Gloo): its process group is up when the output is written."""
    team, shard = (
        ", ".join(map(str, range(nproc))),
        f"memref<{nproc}x3xf32, #hir.shard<array<i64: {', '.join(map(str, range(nproc)))}>, 0 : i64>>",
    )
    return f"""func.func @main(%a: {shard}) -> memref<3xf32> {{
  %o = memref.alloc() : memref<3xf32>
  %w = "hir.allreduce"(%a, %o) {{axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: {team}>}}
      : ({shard}, memref<3xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %o : memref<3xf32>
}}
"""


BOUND_S = 300  # how long a paused job may take to reach its pause point (a correctness bound)


@contextmanager
def paused_run(
    folder, nproc: int, point: str = "write", env: dict | None = None
) -> Iterator[tuple[subprocess.Popen, list[int]]]:
    """``hir-run --nproc NPROC`` of a small program in ``folder``, every rank waiting at the
    pause point ``point`` (default: writing its --save file, its process group up): yields
    the launcher and the ranks' pids; the launcher is killed on the way out if it is still
    running."""
    (folder / "p.mlir").write_text(program(nproc))
    pauses = folder / "paused"
    pauses.mkdir()
    env = dict(os.environ, HIR_TEST_PAUSE=f"{point}:{pauses}", HIR_DEVICE="cpu", **(env or {}))
    env.pop("HIR_LAUNCHED", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hir.tools.run_cli", "--nproc", str(nproc), "p.mlir", "ones", "--save", "out.pt"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        while len(os.listdir(pauses)) < nproc:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the ranks never reached the pause point"
            time.sleep(0.05)
        time.sleep(0.1)  # the pid files are written just before the wait starts
        yield proc, sorted(int(name) for name in os.listdir(pauses))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def descendants(pids: list[int]) -> set[int]:
    """``pids`` and every process below them."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = set(pids), list(pids)
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _address(hex_address: str) -> ipaddress._BaseAddress:
    """An address of /proc/net/tcp{,6}: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    return ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))


def listening_sockets(pids: set[int]) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of ``pids`` holds."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and inode in inodes:  # 0A: TCP_LISTEN
                    address, port = local.split(":")
                    found.append((str(_address(address)), int(port, 16)))
    return found


def loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


def test_a_run_listens_on_loopback_only(tmp_path):
    """The rendezvous store and the Gloo pairs of a paused ``--nproc 2`` run: every listening
    socket of the launcher and its ranks is on 127.0.0.0/8 or ::1."""
    with paused_run(tmp_path, 2) as (launcher, ranks):
        sockets = listening_sockets(descendants([launcher.pid, *ranks]))
        launcher.send_signal(signal.SIGINT)
        launcher.communicate(timeout=120)
    assert sockets, "the paused run listens nowhere: the store was not found"
    assert [s for s in sockets if not loopback(s[0])] == [], sockets


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_killed_launcher_takes_its_ranks(tmp_path):
    """SIGKILL to the launcher (nothing runs in it after that): its ranks die with it (within
    5 s: a bound on the parent-death signal's delivery, not a speed figure), and the next
    launch removes the temporary folders it left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with paused_run(tmp_path, 2, env={"TMPDIR": str(tmp)}) as (launcher, ranks):
        processes = descendants(ranks)
        left = sorted(p.name for p in tmp.iterdir())
        launcher.kill()
        launcher.communicate()
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [pid for pid in processes if alive(pid)]
        for pid in survivors:  # the test leaves nothing running, whatever it finds
            os.kill(pid, signal.SIGKILL)
    assert survivors == [], "ranks outlived their launcher"
    assert [name.split("-")[1] for name in left] == ["launch", "ranks"], left
    assert sorted(p.name for p in tmp.iterdir()) == left  # nothing removed them yet
    env = dict(os.environ, TMPDIR=str(tmp), HIR_DEVICE="cpu")
    env.pop("HIR_TEST_PAUSE", None)
    env.pop("HIR_LAUNCHED", None)
    again = subprocess.run(
        [sys.executable, "-m", "hir.tools.run_cli", "--nproc", "2", "p.mlir", "ones"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert again.returncode == 0, again.stderr
    assert list(tmp.iterdir()) == []


def test_only_this_users_stale_folders_are_removed(tmp_path):
    """A folder is stale when it is this user's and its launcher (the pid in its name) no
    longer runs (ended, or a zombie no one reaps): a running launcher's folder, another
    user's and other names stay."""
    from hir.tools.launch import remove_stale_folders

    ended, zombie = subprocess.Popen(["true"]), subprocess.Popen(["true"])
    ended.wait()
    deadline = time.monotonic() + BOUND_S
    while alive(zombie.pid):  # exited, not reaped until the end of the test
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stale = [tmp_path / f"hir-launch-{ended.pid}-a", tmp_path / f"hir-launch-{zombie.pid}-z"]
    kept = [
        tmp_path / f"hir-launch-{os.getpid()}-b",
        tmp_path / "hir-launch-x-c",
        tmp_path / f"hir-ranks-up-{ended.pid}-d",
    ]
    for folder in [*stale, *kept]:
        folder.mkdir()
    if os.geteuid() == 0:  # as root, a folder of another user's dead launcher too
        import pwd

        kept.append(tmp_path / f"hir-launch-{ended.pid}-e")
        kept[-1].mkdir()
        os.chown(kept[-1], pwd.getpwnam("nobody").pw_uid, -1)
    assert sorted(remove_stale_folders("hir-launch-", str(tmp_path))) == sorted(map(str, stale))
    assert sorted(tmp_path.iterdir()) == sorted(kept)
    zombie.wait()


def looping(nproc: int) -> str:
    """Allreduces over ``nproc`` ranks in a loop of %n iterations (Gloo)."""
    team = ", ".join(map(str, range(nproc)))
    shard = f"memref<{nproc}x3xf32, #hir.shard<array<i64: {team}>, 0 : i64>>"
    return f"""func.func @main(%a: {shard}, %n: index) -> memref<3xf32> {{
  %o = memref.alloc() : memref<3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "hir.for"(%c0, %n, %c1) ({{
  ^bb0(%i: index):
    %w = "hir.allreduce"(%a, %o) {{axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: {team}>}}
        : ({shard}, memref<3xf32>) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  return %o : memref<3xf32>
}}
"""


def rank_pids(launcher: int) -> dict[int, int]:
    """rank -> pid of the launcher's ranks started so far."""
    ranks = {}
    for pid in descendants([launcher]) - {launcher}:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        except OSError:
            continue
        if b"RANK" in env:
            ranks[int(env[b"RANK"])] = pid
    return ranks


def connected_to_peers(pid: int) -> bool:
    """Whether ``pid`` holds an established TCP connection other than to the store
    ($MASTER_PORT): its Gloo pairs are up, so its peers' collectives break when it dies."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        store = int(dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)[b"MASTER_PORT"])
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                ports = {int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)}
                if fields[3] == "01" and fields[9] in inodes and store not in ports:  # 01: ESTABLISHED
                    return True
    return False


@pytest.mark.parametrize(
    "nproc,tries",
    [(2, 1), pytest.param(2, 3, marks=pytest.mark.slow), pytest.param(4, 3, marks=pytest.mark.slow)],
    ids=["2-ranks", "2-ranks-3-times", "4-ranks-3-times"],
)
def test_a_killed_rank_is_named(tmp_path, nproc, tries):
    """SIGKILL to rank 1 while the ranks loop over allreduces: hir-run names rank 1 and the
    signal (its peers, whose allreduces broke, failed after it and are not blamed)."""
    (tmp_path / "loop.mlir").write_text(looping(nproc))
    env = dict(os.environ, HIR_DEVICE="cpu")
    for name in ("HIR_TEST_PAUSE", "HIR_LAUNCHED"):
        env.pop(name, None)
    for _ in range(tries):
        launcher = subprocess.Popen(
            [sys.executable, "-m", "hir.tools.run_cli", "--nproc", str(nproc), "loop.mlir", "ones", "1000000000"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + BOUND_S
            while not (1 in (ranks := rank_pids(launcher.pid)) and connected_to_peers(ranks[1])):
                assert launcher.poll() is None, launcher.communicate()
                assert time.monotonic() < deadline, "rank 1 never connected to its peers"
                time.sleep(0.05)
            os.kill(ranks[1], signal.SIGKILL)
            _, err = launcher.communicate(timeout=BOUND_S)
        finally:
            if launcher.poll() is None:
                launcher.kill()
                launcher.communicate()
        assert launcher.returncode == 1, err
        assert err.splitlines()[-1].startswith("hir-run: rank 1 failed (killed by SIGKILL)"), err


def test_causes_in_words():
    from hir.tools.launch import RankResult

    def cause(code: int) -> str:
        return RankResult(0, code, "", "", False).cause

    assert [cause(1), cause(-signal.SIGKILL), cause(-signal.SIGSEGV), cause(128 + signal.SIGTERM)] == [
        "exit status 1",
        "killed by SIGKILL",
        "killed by SIGSEGV",
        "exit status 143, after SIGTERM",
    ]


def test_the_store_listens_on_the_address_given(monkeypatch):
    """A launch of the user's (env://, rank 0 hosting the store): the store listens on
    $MASTER_ADDR only (127.0.0.2 here, a loopback address that is not 127.0.0.1), and an
    address that is not this machine's is refused with a message naming it."""
    from hir.core import HirError
    from hir.interpreter.backends.process_groups import rendezvous_store
    from hir.tools.launch import free_port

    port = free_port()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.2")
    monkeypatch.setenv("MASTER_PORT", str(port))
    store = rendezvous_store(0, 1)
    store.set("key", "value")
    assert [s for s in listening_sockets({os.getpid()}) if s[1] == port] == [("127.0.0.2", port)]
    del store
    monkeypatch.setenv("MASTER_ADDR", "203.0.113.123")  # TEST-NET-3: no machine's address
    with pytest.raises(
        HirError,
        match=r"rank 0 cannot listen for the run's store on MASTER_ADDR=203.0.113.123 "
        r"port \d+ .*must be an address of rank 0's machine",
    ):
        rendezvous_store(0, 1)
    monkeypatch.delenv("MASTER_PORT")
    with pytest.raises(HirError, match=r"a 2-rank run needs \$MASTER_ADDR and \$MASTER_PORT"):
        rendezvous_store(0, 2)
