"""A fork server for the lit suite's ``hir-run`` and ``hir-import``: each RUN line's call
forks a process that has imported torch and hir once, and runs the tool's console-script
``main`` there, where a fresh ``hir-run`` costs ~2.2 CPU-s importing torch and a fresh
``hir-import`` ~4.6 importing torch.export and dynamo (``benchmarks/cold_start.py --cpu``;
on CI's 2 cores, most of lit's time). lit.cfg.py starts it and puts a shim of each tool
first on the tests' PATH; a shim that cannot reach the server execs the installed script
instead. ``HIR_LIT_ZYGOTE=0`` runs the installed scripts throughout. The server imports
torch but never initializes CUDA (lit's tools run on the CPU: ``HIR_DEVICE=cpu``), so a
fork starts clean.

``hir-opt`` (~0.35 CPU-s a start, ~230 RUN lines) forks from a second server, which imported
what a fresh ``hir-opt`` imports before its ``main`` and no more (hir-opt never imports
torch). The ranks of ``hir-run --nproc`` (the launcher starts ``sys.executable -m
hir.tools.run_cli`` once per rank, each ~3.7 CPU-s of imports: about 46 ranks in the lit
suite) fork from the first server: in a forked ``hir-run``, ``sys.executable`` is a shim of
python that sends ``-m hir.tools.run_cli ARGS`` to the server like a tool's call and execs
the real python for anything else. The launcher still starts, supervises and stops a
process per rank (the shim, which forwards its signals).

Protocol, over a Unix socket: the shim sends one message, a 4-byte length then a JSON
object ``{"tool", "argv", "env", "cwd"}``, with its stdin / stdout / stderr attached
(SCM_RIGHTS). The server forks a handler that forks the tool's process: it takes the three
descriptors as 0-2, exactly ``env``, ``cwd`` and ``argv``, runs ``main`` as the console
script would (``sys.exit(main())``), runs the exit handlers and leaves with the code. The
handler answers a line ``{"pid": P}`` (the shim forwards TERM, INT, HUP and QUIT to P, as a
launcher stopping its workers expects) and, when P ends, ``{"code": C}`` (C as
``Popen.returncode``: negative for a signal). A shim killed outright (SIGKILL: a lit
timeout) closes its socket; the handler then sends P what the shim would have forwarded,
SIGTERM, and SIGKILL ``ORPHAN_GRACE`` seconds later, so no tool outlives its caller."""

import atexit
import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

# Each server's tools, by the name of its socket: torch's, and hir-opt's without torch.
SERVERS = {"socket": ("hir-run", "hir-import"), "socket-opt": ("hir-opt",)}
TOOLS = tuple(tool for tools in SERVERS.values() for tool in tools)
RANK_MODULE = "hir.tools.run_cli"  # hir-run --nproc's ranks: python -m RANK_MODULE ARGS
RANK = "-m " + RANK_MODULE  # the ranks' name in requests
HEADER = struct.Struct("!I")
ORPHAN_GRACE = 10.0  # seconds a tool whose shim died has to stop on SIGTERM (a launcher its workers)


def _entry(tool: str):
    from importlib.metadata import entry_points

    # the first on sys.path, as the tool's own script resolves it (a venv over a system
    # install sees both: scripts/check-wheel)
    return next(e for e in entry_points(group="console_scripts") if e.name == tool).load()


def _preload(tools: tuple) -> dict:
    if "hir-run" not in tools:
        return {tool: _entry(tool) for tool in tools}
    import torch
    import torch._dynamo
    import torch.export
    import torch.export._trace  # noqa: F401  (the tracer: imported at the first export)

    import hir.frontend
    import hir.interpreter  # noqa: F401
    from hir.tools import run_cli

    return {**{tool: _entry(tool) for tool in tools}, RANK: run_cli.main}


def _rank_python(socket_path: str) -> str:
    """The shim of python that a forked ``hir-run`` starts its ranks with."""
    return os.path.join(os.path.dirname(socket_path), "rank", "python")


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < HEADER.size:
        data += conn.recv(1 << 16)
    (size,) = HEADER.unpack_from(data)
    while len(data) < HEADER.size + size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the shim closed the connection mid-request")
        data += more
    return json.loads(data[HEADER.size : HEADER.size + size]), fds


def _become(request: dict, fds: list[int], main, rank_python: str) -> None:
    """In the tool's process: take the shim's descriptors, environment, directory and
    arguments, run ``main`` as its console script would, and exit; never returns.
    ``hir-run`` starts its ranks with ``rank_python`` (see the module docstring)."""
    import threading
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = list(request["argv"])
    if request["tool"] == "hir-run":
        sys.executable = rank_python
    code = 0
    try:
        sys.exit(main())
    except SystemExit as done:
        code = done.code
    except BaseException:  # an uncaught error: what the interpreter would print, status 1
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # the interpreter's exit waits for non-daemon threads, then runs atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def _handle(conn: socket.socket, entries: dict, rank_python: str) -> None:
    """In a handler process: run one request's tool in a child, answer its exit status."""
    code = 1
    try:
        request, fds = _receive(conn)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _become(request, fds, entries[request["tool"]], rank_python)
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")  # the shim forwards its signals there
        _stop_if_orphaned(conn, pid)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    finally:
        try:
            conn.sendall(json.dumps({"code": code}).encode() + b"\n")
        finally:
            os._exit(0)


def _stop_if_orphaned(conn: socket.socket, pid: int) -> None:
    """Return when the tool's process ``pid`` has ended, or once it is told to: when the
    shim's end of ``conn`` closes first (the shim was killed), SIGTERM, then SIGKILL after
    ``ORPHAN_GRACE`` seconds. Without pidfds (before Linux 5.3) it returns at once and the
    caller just waits."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return
    try:
        while True:
            ready, _, _ = select.select([conn, pidfd], [], [])
            if pidfd in ready:
                return
            if not conn.recv(4096):  # the shim sends nothing after its request: this is EOF
                os.kill(pid, signal.SIGTERM)
                if not select.select([pidfd], [], [], ORPHAN_GRACE)[0]:
                    os.kill(pid, signal.SIGKILL)
                return
    finally:
        os.close(pidfd)


def serve(path: str) -> None:
    parent = os.getppid()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)  # shims connecting while the imports run wait in the backlog
    entries = _preload(SERVERS[os.path.basename(path)])
    while os.getppid() == parent:  # lit's end ends the server
        ready, _, _ = select.select([server], [], [], 1.0)
        while True:  # reap the handlers that answered
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not ready:
            continue
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            _handle(conn, entries, _rank_python(path))
        conn.close()


SHIM = r"""#!{python} -S
# {tool} through the lit suite's fork server (test/lit_zygote.py), else {real}
import json, os, signal, socket, struct, sys
{only}
try:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect({socket!r})
except OSError:
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
request = json.dumps({{"tool": {tool!r}, "argv": {argv}, "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
message = struct.pack("!I", len(request)) + request
socket.send_fds(conn, [message[:1 << 16]], [0, 1, 2])
conn.sendall(message[1 << 16:])


def forward(number, frame):
    os.kill(pid, number)


pid, code, answer = None, 1, b""
while True:
    more = conn.recv(4096)
    if not more:
        break
    answer += more
    while b"\n" in answer:
        line, answer = answer.split(b"\n", 1)
        message = json.loads(line)
        if "pid" in message:  # a launcher's TERM or the terminal's INT reach the tool
            pid = message["pid"]
            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
                signal.signal(number, forward)
        else:
            code = message["code"]
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def start(env: dict) -> str | None:
    """Start the servers for this lit run (ended with lit's process) and write the shims;
    returns the shims' directory, or None where the installed scripts must run
    (``HIR_LIT_ZYGOTE=0``, a tool not installed, a server that did not come up)."""
    if os.environ.get("HIR_LIT_ZYGOTE", "1") == "0":
        return None
    real = {tool: shutil.which(tool, path=env.get("PATH")) for tool in TOOLS}
    rank_module = importlib.util.find_spec(RANK_MODULE)
    if None in real.values() or rank_module is None or rank_module.origin is None:
        return None
    folder = tempfile.mkdtemp(prefix="hir-lit-zygote-")
    servers = {}
    with open(os.path.join(folder, "server.log"), "w") as log:
        for name in SERVERS:
            path = os.path.join(folder, name)
            servers[path] = subprocess.Popen(
                [sys.executable, __file__, path], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    def stop() -> None:
        for server in servers.values():
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    for path, server in servers.items():
        for _ in range(200):  # the socket is bound before the imports: ~0.1 s
            if os.path.exists(path) or server.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(path):
            return None
    shims = os.path.join(folder, "bin")
    os.mkdir(shims)
    for name, tools in SERVERS.items():
        for tool in tools:
            _write_shim(
                os.path.join(shims, tool),
                SHIM.format(
                    python=sys.executable,
                    tool=tool,
                    socket=os.path.join(folder, name),
                    real=real[tool],
                    only="",
                    argv="sys.argv",
                ),
            )
    path = os.path.join(folder, "socket")  # the ranks' server: hir-run's
    # python -m RANK_MODULE ARGS as a request with the argv python would give the module
    # (its file, then ARGS); any other command line is the real python's
    only = (
        f"if sys.argv[1:3] != ['-m', {RANK_MODULE!r}]:\n"
        f"    os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])"
    )
    os.mkdir(os.path.dirname(_rank_python(path)))
    _write_shim(
        _rank_python(path),
        SHIM.format(
            python=sys.executable,
            tool=RANK,
            socket=path,
            real=sys.executable,
            only=only,
            argv=f"[{rank_module.origin!r}, *sys.argv[3:]]",
        ),
    )
    return shims


def _write_shim(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


if __name__ == "__main__":
    serve(sys.argv[1])
