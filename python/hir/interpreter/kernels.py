"""Compiled kernel segments: a call of a ``func.func {hir.kernel}`` run as one
inductor-compiled function instead of op by op. A function body's compute regions (runs of
hir compute ops and kernel segments, :mod:`hir.interpreter.regions`) are compiled the same
way, as one function each; the segments inside them are not compiled on their own.

``compile_kernels`` (``Program(compile_kernels=...)``, ``hir-run --compile-kernels`` /
``--no-compile-kernels``):
- ``"auto"`` (default): compile the regions and segments of at least :data:`AUTO_MIN_OPS`
  compute ops (``torch.aten.*`` / ``linalg.*`` / hir compute ops) when the program runs on
  CUDA; on CPU nothing is compiled (inductor's C++ compile takes seconds and rarely beats
  aten's kernels there);
- ``True``: compile every region and kernel segment, on any device (a failure is an error);
- ``False``: never (every op runs by itself).

How a segment is compiled, so that compiled segments and CUDA graphs (``graph="auto"``)
compose: the segment's steps are traced once per *signature* (shape, strides and dtype of
every argument) with ``make_fx`` on fake tensors into a functional FX graph of aten ops (its
writes into destination buffers become ``copy_`` into graph inputs), and that graph is
compiled by inductor (:mod:`hir.interpreter.inductor_graph`: ``compile_fx_inner`` without AOT
autograd's second trace, ``triton.cudagraphs`` off: the program's own graph captures the
kernels; torch-mlir's ``aten.*.Scalar`` overloads become the ``.Tensor`` ones dynamo
records, which inductor's patterns, SDPA among them, are written against). No dynamo, so
no guards evaluated on the host per call: a call looks its signature up and launches the
compiled kernels, which a CUDA graph capture records like any others.
Compilation happens at the first call of a signature, which ``graph="auto"`` runs eagerly
(and ``graph=True`` runs as its warm-up before capturing). A signature first seen during a
capture runs the segment's steps op by op (compiling cannot be captured). A call in which
an argument the graph writes shares memory with another argument runs op by op too (the
trace assumed distinct buffers; arguments only read may share: a cut region's pieces often
read views of one buffer).

Regions that repeat (a model's identical layers, :mod:`hir.interpreter.repeats`) share one
signature cache: the first of them to meet a signature traces and compiles it, the others
call that compiled function on their own arguments.

Compile time is counted in :class:`KernelCompileStats` (``Program.kernel_compile``) and
logged at debug level on the ``hir.compile`` logger.

Inductor compiles a region's Triton kernels in parallel in its pool of compile workers, but
only once that pool answers: a kernel met before compiles in the calling process, one after
another. ``torch.compile``'s inductor backend starts the pool when dynamo hands it its first
graph; hir calls inductor directly, so it starts the pool itself
(:func:`warm_compile_workers`) when a program that may compile on CUDA is built, and
``hir.compile`` / ``hir.generate`` before they import the module, so the workers start up
while the export and lowering run (on a first call).
"""

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch_mlir import ir

from hir import progress
from hir.dialect.compute import ComputeOp
from hir.dialect.context import HirError
from hir.dialect.irutils import is_a

log = logging.getLogger("hir.compile")
CompileMode = bool | str  # True, False or "auto"
AUTO_MIN_OPS = 2  # "auto" compiles segments of at least this many compute ops
COMPUTE_PREFIXES = ("torch.aten.", "linalg.")  # compute ops of a segment (hir compute ops count too)


def check_mode(mode: CompileMode) -> CompileMode:
    if not (mode is True or mode is False or mode == "auto"):
        raise HirError(f"error: compile_kernels must be True, False or 'auto', got {mode!r}")
    return mode


@dataclass
class KernelCompileStats:
    """What compiling compute regions and kernel segments cost this program
    (``Program.kernel_compile``)."""

    mode: CompileMode = "auto"
    segments: int = 0  # compiled units of the plan: kernel segments compiled on their own and compute regions
    regions: int = 0  # of which compute regions (:mod:`hir.interpreter.regions`)
    regions_reason: str | None = None  # why no compute region runs compiled (None: they may)
    repeats: int = 0  # of which regions that repeat an earlier one (share its compiles)
    recomputed: int = 0  # writes the pieces of cut regions run again instead of taking their values (rematerialize.py)
    compiles: int = 0  # (segment, signature) pairs compiled so far (a repeated region's: once)
    seconds: float = 0.0  # total trace + inductor compile time
    # calls run op by op (a signature first seen under capture, aliased arguments, or "auto" failing to compile)
    fallbacks: int = 0
    autotune: bool = False  # compile with inductor's max-autotune (Program(autotune=True))
    # compile with inductor's programmatic dependent launch (planned decode kernels: decode_kernels.inductor_pdl)
    pdl: bool = False
    # compile with inductor's combo kernels (planned decode kernels: decode_kernels.planned)
    combo: bool = False

    def summary(self) -> str:
        """One line: what runs compiled and what compiling it cost."""
        alone = self.segments - self.regions
        fallbacks = f", {self.fallbacks} call(s) op by op instead (hir.compile log)" if self.fallbacks else ""
        repeats = f" ({self.repeats} repeating another: compiled once)" if self.repeats else ""
        recomputed = f", {self.recomputed} write(s) recomputed at the cuts" if self.recomputed else ""
        return (
            f"{self.regions} compiled region(s){repeats}{recomputed}, {alone} kernel segment(s) "
            f"compiled alone, {self.compiles} compile(s) in {self.seconds:.2f} s{fallbacks}"
        )


def compute_ops(func: ir.Operation) -> int:
    """The number of compute ops (:data:`COMPUTE_PREFIXES`, hir compute ops) in a kernel
    segment's body."""
    count = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += op.name.startswith(COMPUTE_PREFIXES) or is_a(op, ComputeOp)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return count


def wants_compile(mode: CompileMode, device: torch.device, func: ir.Operation) -> bool:
    """Whether a kernel segment runs compiled under ``mode`` on ``device``."""
    if mode == "auto":
        return device.type == "cuda" and compute_ops(func) >= AUTO_MIN_OPS
    return bool(mode)


def warm_compile_workers(mode: CompileMode, device: str | torch.device | None) -> None:
    """Start inductor's compile workers when ``mode`` may compile regions on ``device`` (a
    CUDA device; None: CUDA when there is one); see the module docstring. Returns at once;
    the workers start in the background. Nothing to do without Triton (CPU kernels compile
    with the C++ compiler, in threads)."""
    if mode is False:
        return
    try:
        cuda = torch.device(device).type == "cuda" if device is not None else torch.cuda.is_available()
    except (RuntimeError, ValueError):  # a bad device: reported where it is used
        return
    if not cuda:  # importing inductor alone costs ~2 s: only where its workers are wanted
        return
    try:
        from torch._inductor.async_compile import (
            maybe_warm_pool,  # inductor loads only when kernels compile (seconds to import)
        )
    except ImportError:  # a torch without it: the pool starts at the first kernel
        return
    maybe_warm_pool()


def _signature(args: list) -> tuple:
    return tuple((tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


def _writes_shared(args: list, written: set[int]) -> bool:
    """Whether an argument the compiled graph writes (``written``: positions in ``args``)
    shares memory with another argument."""
    if not written:
        return False
    storages = [
        (i, a.untyped_storage().data_ptr()) for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.numel()
    ]
    mine = {s for i, s in storages if i in written}
    counts = Counter(s for _, s in storages if s in mine)
    return any(n > 1 for n in counts.values())


def inductor_options(autotune: bool, pdl: bool = False, combo: bool = False) -> dict:
    """Inductor's config for a segment or region: never its own CUDA graphs (the program's
    graph captures the kernels); with ``autotune``, torch.compile's
    ``max-autotune-no-cudagraphs`` mode; with ``pdl``, kernels launched as programmatic
    dependents; with ``combo``, independent kernels launched as one (``combo_kernels``)."""
    from torch._inductor import list_mode_options  # inductor loads only when kernels compile (seconds to import)

    return {
        **(list_mode_options("max-autotune-no-cudagraphs") if autotune else {}),
        "triton.cudagraphs": False,
        # the program's order stands: inductor's locality pass sinks every producer used only
        # by outputs (a step's weight-gradient products) to the graph's end, holding their
        # inputs (the saved activations, the output head's logits gradient) through the backward
        "reorder_for_locality": False,
        **({"triton.enable_pdl": True} if pdl else {}),
        **({"combo_kernels": True} if combo else {}),
    }


def compiled_segment(
    run: Callable[[list], list], what: str, where: str, stats: KernelCompileStats, cache: dict | None = None
) -> Callable[[list], list]:
    """``run`` (the steps of ``what``: a kernel segment or a compute region, ``args ->
    results``) compiled per signature. ``cache``: signature -> (compiled function, the
    argument positions it writes), shared with the regions that repeat this one (None: its
    own)."""
    from hir.interpreter.inductor_graph import (
        compile_graph,  # inductor loads only when kernels compile (seconds to import)
    )

    cache = {} if cache is None else cache
    strict = stats.mode is True
    stats.segments += 1

    def compile_for(args: list, key: tuple) -> tuple[Callable | None, set[int]]:
        start = time.perf_counter()
        # Only tensors are graph inputs: the rest (indices, and None where destination passing
        # binds a destination to the segment's result) is part of the signature, fixed here.
        positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

        def traced(*tensors):
            full = list(args)
            for i, t in zip(positions, tensors):
                full[i] = t
            return run(full)

        try:
            tensors, options = [args[i] for i in positions], inductor_options(stats.autotune, stats.pdl, stats.combo)
            with torch.no_grad(), progress.task(f"compiling {what} at {where} (inductor)"):
                compiled, writes = compile_graph(traced, tensors, options)

            def boxed(a: list) -> Sequence:
                tensors = [a[i] for i in positions]
                a.clear()  # as AOT autograd calls inductor: the caller's list lets go of its inputs
                return compiled(tensors)

            fn: Callable[[list], Sequence] | None = boxed

            written = {positions[i] for i in writes}
        except Exception as err:
            if strict:
                raise HirError(
                    f"{where}: error: cannot compile {what} (compile_kernels=True): "
                    f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                ) from err
            log.warning("%s: %s runs op by op: compiling it failed: %s: %s", where, what, type(err).__name__, err)
            fn, written = None, set()
        seconds = time.perf_counter() - start
        stats.compiles += 1
        stats.seconds += seconds
        log.debug("compiled %s for %s in %.3f s", what, key, seconds)
        cache[key] = fn, written
        return fn, written

    def call(args: list) -> list:
        key = _signature(args)
        found = cache.get(key)
        if found is None:
            if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                stats.fallbacks += 1
                return run(args)
            found = compile_for(args, key)
        fn, written = found
        if fn is None or _writes_shared(args, written):
            stats.fallbacks += 1
            return run(args)
        with torch.no_grad():
            return list(fn(args))

    return call
