"""The ranks of the multi-rank tests, forked from one process that has imported torch, hir
and transformers once: a fresh ``python worker.py`` spends seconds of CPU importing them
(torch.export and torch._dynamo included) before its first case, per rank and per launch,
which on CI's 2 cores was a large part of the suite. The zygote imports and never runs a
torch op (no thread pool to inherit), so each forked rank starts as a fresh process would,
past its imports. The launch itself (``hir-run --nproc``, torchrun) is tested elsewhere
with real processes; this only starts the workers of tests that check what ranks compute.
On a machine with CUDA the tests launch real processes (a fork must not inherit CUDA).

Protocol (one JSON object a line): the client writes ``{"script", "env", "cwd", "out",
"err"}``; the zygote forks a rank running ``script`` as ``__main__`` with exactly ``env``,
its stdout / stderr in the files ``out`` / ``err``, in a session of its own, and answers
``{"pid": PID}``; when a rank ends it writes ``{"exit": PID, "code": C}`` (C as
``Popen.returncode``: negative for a signal). End of input ends the zygote."""

import json
import os
import runpy
import select
import sys


def preload() -> None:
    import pytest  # noqa: F401  (the workers are test files)
    import torch
    import torch._dynamo
    import torch.distributed
    import torch.distributed.tensor.parallel
    import torch.export
    import torch.export._trace  # noqa: F401  (torch.export's tracer: imported at the first export)

    import hir
    import hir.frontend
    import hir.interpreter  # noqa: F401

    try:
        import transformers  # noqa: F401
    except ImportError:
        pass


def run_rank(request: dict) -> None:
    """In the forked child: become the rank and run its script; exits like ``python script``."""
    os.setsid()
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        target = os.open(path, flags, 0o600)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    script = request["script"]
    sys.argv = [script, *request.get("args", [])]
    entries = [os.path.dirname(os.path.abspath(script))] + [
        e for e in request["env"].get("PYTHONPATH", "").split(os.pathsep) if e
    ]
    sys.path[:0] = [e for e in entries if e not in sys.path]  # as python's start-up would put them
    # SystemExit (the worker's sys.exit) leaves through serve() and the interpreter's exit.
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def serve() -> None:
    preload()
    reply = sys.stdout
    children: set = set()
    stdin = sys.stdin.fileno()
    pending = b""
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.01 if children else None)
        while children:  # report the ranks that ended
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            children.discard(pid)
            reply.write(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
            reply.flush()
        if not ready:
            continue
        data = os.read(stdin, 65536)
        if not data:
            return
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                run_rank(request)
            children.add(pid)
            reply.write(json.dumps({"pid": pid}) + "\n")
            reply.flush()


if __name__ == "__main__":
    serve()
