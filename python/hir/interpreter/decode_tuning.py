"""The decode kernels compiled and tuned ahead of their first call, in a process of their own.

At its first call on a shape, the small-M product's autotuner
(:mod:`hir.interpreter.triton_small_m`, :mod:`hir.interpreter.triton_one_row`) compiles each
candidate tile and times each one on that shape, and the attention
(:mod:`hir.interpreter.triton_decode`) compiles its kernel: seconds on the first decode step's
critical path, in the calling process, one candidate after the other. Here a program's
planned decode kernels (:func:`request`, at plan time; inductor compiles the program's
regions between its plan and its first step) go to a child process
(:func:`serve`) that makes the same calls on inputs of the same shapes on the same device,
compiling an autotuner's candidates at once in threads before it times them, and then the
tuned kernels' launches as programmatic dependents (what the parent's capture launches):
Triton writes the compiled kernels and the autotuner's timings (``cache_results``) into its
on-disk cache. The first call of a shape (:func:`wait`) waits
for the child's line for it, then finds both there: it loads the chosen kernel and compiles
and times nothing, nor does the capture. Where the child fails, is late (more than :data:`WAIT_S`), or the inputs'
layout differs from the child's (another specialization: a miss), the first call compiles
and tunes in process as before: nothing but time depends on the child.

Both processes use one Triton cache folder: where ``TRITON_CACHE_DIR`` is unset, the one
inductor sets for its own kernels when it first compiles (set here, earlier).
"""

import functools
import json
import os
import select
import subprocess
import sys
import threading
import time

import torch

WAIT_S = 60.0  # the longest a first call waits for the child's answer
IDLE_S = 30.0  # the child ends after this long without a request


class _Lines:
    """Lines read from a file descriptor as they come (``select`` on the descriptor, so no
    line sits unseen in a buffer)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.partial = b""

    def read(self, timeout: float) -> list[bytes] | None:
        """The next whole lines, waiting up to ``timeout`` seconds for one (none by then:
        ``[]``); None once the writer has closed its end."""
        deadline = time.monotonic() + timeout
        while True:
            if not select.select([self.fd], [], [], max(deadline - time.monotonic(), 0.0))[0]:
                return []
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            *lines, self.partial = (self.partial + chunk).split(b"\n")
            if lines:
                return lines


class _Tuner:
    """The child process and the lines it has answered."""

    def __init__(self, index: int):
        self.cache_dir = os.environ.get("TRITON_CACHE_DIR")  # where the child writes: the parent reads there
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import serve; serve({index})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdout is not None
        self.answers = _Lines(self.process.stdout.fileno())

    def end(self) -> None:
        """Closes the child's input: it ends once its requests are answered."""
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def send(self, key: tuple) -> bool:
        """Whether the request reached the child (False: it has ended)."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(key).encode() + b"\n")
            stdin.flush()
        except OSError:
            return False
        return True


_LOCK = threading.Lock()
_TUNER: _Tuner | None = None
_PENDING: dict[tuple, _Tuner] = {}  # key -> the child working on it
_SENT: set[tuple] = set()  # every key sent (one request per key and process)


def linear_key(dtype: torch.dtype, rows: int, n: int, k: int, split_k: bool, gemv: bool, device: torch.device) -> tuple:
    """The request for ``small_m_linear`` of ``rows`` rows of K ``k`` by an ``[n, k]`` weight."""
    return ("linear", _name(dtype), rows, n, k, split_k, gemv, _index(device))


def swiglu_key(dtype: torch.dtype, rows: int, n: int, k: int, device: torch.device) -> tuple:
    """The request for ``swiglu_small_m`` of ``rows`` rows of K ``k`` by two ``[n, k]`` weights."""
    return ("swiglu", _name(dtype), rows, n, k, False, False, _index(device))


def fused_key(dtype: torch.dtype, n: int, k: int, variant: str, device: torch.device) -> tuple:
    """The request for the one-row kernel of ``variant`` (``rms_norm_linear``,
    ``rms_norm_swiglu``, ``linear_residual``: :mod:`hir.interpreter.decode_fusions`) by
    ``[n, k]`` weights."""
    return ("fused", _name(dtype), n, k, variant, True, _index(device))


def attention_key(
    dtype: torch.dtype, query: tuple, key: tuple, mask: tuple, fused_combine: bool, device: torch.device
) -> tuple:
    """The request for ``split_kv_attention`` of a ``query`` over ``key`` / ``value`` (4-d
    shapes) with a boolean ``mask`` of that shape."""
    return ("attention", _name(dtype), *query, *key, *mask, fused_combine, False, _index(device))


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def start(device: torch.device) -> None:
    """Starts the child for ``device`` ahead of the first :func:`request` (where none is
    running): its interpreter, torch, Triton and CUDA context take seconds to start, which a
    caller that will plan decode kernels (``hir.generate``, before its export) hides."""
    with _LOCK:
        _running_tuner(_index(device))


def request(key: tuple) -> None:
    """Has the child compile (and tune) the kernel of ``key`` (:func:`linear_key`,
    :func:`swiglu_key`, :func:`fused_key`, :func:`attention_key`), once per key; starts the
    child where none is running."""
    global _TUNER
    with _LOCK:
        if key in _SENT:
            return
        _SENT.add(key)
        for _ in range(2):  # a child that has just ended for want of requests: another one
            tuner = _running_tuner(key[-1])
            if tuner is None:  # no process to be had: the first call tunes in process
                return
            if tuner.send(key):
                _PENDING[key] = tuner
                return
            _TUNER = None


def _running_tuner(index: int) -> _Tuner | None:
    """The running child (started here where there is none), writing into the Triton cache
    folder this process reads; None where no process can be started. Holds ``_LOCK``."""
    global _TUNER
    if os.environ.get("TRITON_CACHE_DIR") is None:
        from torch._inductor.runtime.cache_dir_utils import triton_cache_dir

        os.environ["TRITON_CACHE_DIR"] = triton_cache_dir(index)
    if _TUNER is not None and _TUNER.cache_dir != os.environ.get("TRITON_CACHE_DIR"):
        _TUNER.end()  # it would write into the cache folder this process no longer reads
        _TUNER = None
    if _TUNER is None or _TUNER.process.poll() is not None:
        try:
            _TUNER = _Tuner(index)
        except OSError:
            return None
    return _TUNER


def waiting() -> bool:
    """Whether a request is still unanswered (a cheap test before building a key)."""
    return bool(_PENDING)


def wait(key: tuple) -> None:
    """Returns once the child has answered ``key`` (its kernels are in Triton's cache), at
    once where ``key`` was never sent, after :data:`WAIT_S` where the child is late (then
    ended: the caller tunes in process)."""
    if key not in _PENDING:
        return
    with _LOCK:
        tuner = _PENDING.get(key)
        deadline = time.monotonic() + WAIT_S
        while tuner is not None and key in _PENDING:
            lines = tuner.answers.read(deadline - time.monotonic())
            if lines is None or (not lines and time.monotonic() >= deadline):
                if lines is not None:
                    tuner.process.kill()
                for other in [k for k, t in _PENDING.items() if t is tuner]:
                    del _PENDING[other]
                return
            for line in lines:
                _PENDING.pop(tuple(json.loads(line)), None)


_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
COMPILE_THREADS = max(1, min(8, _CPUS // 2))  # the child's (the parent compiles too)


def _compile(key: tuple) -> None:
    """The child's calls for ``key`` (kind, dtype name, sizes, the kernel's flag: split-K,
    fused combine or the fused variant, the product's one-row GEMV, device index): the
    parent's kernels on random inputs of its shapes, their candidate tiles compiled in
    :data:`COMPILE_THREADS` threads; then, where the parent's capture will launch them as
    programmatic dependents (:mod:`hir.interpreter.dependent_launch`: on Hopper or newer, also
    where ``HIR_DECODE_KERNELS`` leaves ``kernel-pdl`` out), those launches of the tuned tile
    too (their own compiles), so that the capture compiles nothing."""
    from hir.interpreter.dependent_launch import supported
    from hir.interpreter.triton_decode import candidates_compiled_in_threads

    kind, dtype, *sizes, flag, gemv, index = key
    device = torch.device("cuda", index)
    dtype = getattr(torch, dtype)
    with torch.cuda.device(device):
        call, dependents = _calls(kind, dtype, sizes, flag, gemv, device)
        with candidates_compiled_in_threads(COMPILE_THREADS):
            call(pdl=False, weight_first=False)
        if supported(device):
            for weight_first in dependents:
                call(pdl=True, weight_first=weight_first)
        torch.cuda.synchronize(device)


def _calls(kind: str, dtype: torch.dtype, sizes: list, flag, gemv: bool, device: torch.device) -> tuple:
    """(the parent's call for a request, taking ``pdl`` and ``weight_first``; the
    ``weight_first`` values of its launches as a programmatic dependent: both for the one-row
    products, False for the attention with its combine fused, none for the others)."""
    randn = functools.partial(torch.randn, device=device, dtype=dtype)
    plain_and_weight_first = (False, True)
    if kind in ("linear", "swiglu"):
        from hir.interpreter.triton_one_row import one_row_linear, runs_one_row
        from hir.interpreter.triton_small_m import small_m_linear, swiglu_small_m

        rows, n, k = sizes
        x, weight = randn(rows, k), randn(n, k)
        if kind == "swiglu":
            w_up = randn(n, k)
            return lambda pdl, weight_first: swiglu_small_m(x, weight, w_up), ()
        if gemv and runs_one_row(x, weight):
            return lambda pdl, weight_first: one_row_linear(
                x, weight, pdl=pdl, weight_first=weight_first
            ), plain_and_weight_first
        return lambda pdl, weight_first: small_m_linear(x, weight, split_k=flag), ()
    if kind == "fused":
        from hir.interpreter.triton_one_row import one_row_linear

        n, k = sizes
        x, weight = randn(1, k), randn(n, k)
        norm = randn(k) if flag != "linear_residual" else None
        w_up = randn(n, k) if flag == "rms_norm_swiglu" else None
        residual = randn(1, n) if flag == "linear_residual" else None

        def fused(pdl: bool, weight_first: bool) -> None:
            one_row_linear(x, weight, norm, 1e-6, w_up, residual, pdl=pdl, weight_first=weight_first)

        return fused, plain_and_weight_first
    from hir.interpreter.triton_decode import split_kv_attention

    query, keys, mask_shape = sizes[:4], sizes[4:8], sizes[8:]
    q, k, v = randn(query), randn(keys), randn(keys)
    mask = torch.ones(mask_shape, device=device, dtype=torch.bool)
    dependents = (False,) if flag else ()  # a dependent launch with its combine fused only
    return lambda pdl, weight_first: split_kv_attention(q, k, v, mask, 0.125, fused_combine=flag, pdl=pdl), dependents


def serve(index: int) -> None:
    """The child: each request line on stdin compiled (and tuned), then echoed on stdout
    (also where it failed: the parent then tunes that key itself); ends with stdin, or after
    :data:`IDLE_S` without a request. Before the first request it loads what the requests
    use (the kernels' modules, Triton, device ``index``'s CUDA context)."""
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # what the kernels' libraries print goes to stderr
    try:
        import hir.interpreter.triton_decode
        import hir.interpreter.triton_small_m  # noqa: F401  (and triton_one_row, which it imports)

        torch.empty(1, device=torch.device("cuda", index))
    except Exception as error:  # noqa: BLE001 (each request then reports its own failure)
        print(f"decode_tuning: start: {error!r}", file=sys.stderr)
    requests = _Lines(0)
    while True:
        lines = requests.read(IDLE_S)
        if not lines:  # closed, or idle
            return
        for line in lines:
            try:
                _compile(tuple(json.loads(line)))
            except Exception as error:  # noqa: BLE001 (the parent compiles that key itself)
                print(f"decode_tuning: {line!r}: {error!r}", file=sys.stderr)
            answers.write(line + b"\n")
