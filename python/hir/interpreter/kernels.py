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
every argument) with ``make_fx`` on fake tensors into an FX graph of aten ops (its writes
into destination buffers become ``copy_`` into graph inputs), and that graph is compiled by
inductor (``compile_fx``, ``triton.cudagraphs`` off: the program's own graph captures the
kernels; torch-mlir's ``aten.*.Scalar`` overloads are first renamed to the ``.Tensor`` ones
dynamo records, which inductor's patterns, SDPA among them, are written against). No
dynamo, so no guards evaluated on the host per call: a call looks its signature up and
launches the compiled kernels, which a CUDA graph capture records like any others.
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
graph; hir calls ``compile_fx`` directly, so it starts the pool itself
(:func:`warm_compile_workers`) when a program that may compile on CUDA is built, and
``hir.compile`` / ``hir.generate`` before they import the module, so the workers start up
while the export and lowering run (on a first call).
"""

import logging
import time
from collections import Counter
from collections.abc import Callable
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
    compiles: int = 0  # (segment, signature) pairs compiled so far (a repeated region's: once)
    seconds: float = 0.0  # total trace + inductor compile time
    # calls run op by op (a signature first seen under capture, aliased arguments, or "auto" failing to compile)
    fallbacks: int = 0
    autotune: bool = False  # compile with inductor's max-autotune (Program(autotune=True))
    # compile with inductor's programmatic dependent launch (planned decode kernels: decode_kernels.inductor_pdl)
    pdl: bool = False

    def summary(self) -> str:
        """One line: what runs compiled and what compiling it cost."""
        alone = self.segments - self.regions
        fallbacks = f", {self.fallbacks} call(s) op by op instead (hir.compile log)" if self.fallbacks else ""
        repeats = f" ({self.repeats} repeating another: compiled once)" if self.repeats else ""
        return (
            f"{self.regions} compiled region(s){repeats}, {alone} kernel segment(s) "
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


def written_inputs(graph: torch.fx.GraphModule) -> set[int]:
    """Positions (among ``graph``'s inputs) of the inputs it writes, directly or through a
    view of them."""
    base = {n: i for i, n in enumerate(n for n in graph.graph.nodes if n.op == "placeholder")}
    written: set[int] = set()
    for node in graph.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None:
            continue
        named = [(a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs]
        for argument, value in [*zip(schema.arguments, node.args), *named]:
            if argument.alias_info is not None and argument.alias_info.is_write and value in base:
                written.add(base[value])
        if schema.returns and schema.returns[0].alias_info is not None and node.args and node.args[0] in base:
            base[node] = base[node.args[0]]  # a view of an input (or an in-place op's result)
    return written


# The ``.Scalar`` overloads torch-mlir's import names (``aten.div.Scalar``) and the
# ``.Tensor`` overload a Python scalar operand dispatches to when torch.compile traces a
# module (``x / 8.0``): inductor's pattern matcher (the SDPA patterns, among others) is
# written against the latter.
_SCALAR_OVERLOADS = {
    torch.ops.aten.add.Scalar: torch.ops.aten.add.Tensor,
    torch.ops.aten.sub.Scalar: torch.ops.aten.sub.Tensor,
    torch.ops.aten.mul.Scalar: torch.ops.aten.mul.Tensor,
    torch.ops.aten.div.Scalar: torch.ops.aten.div.Tensor,
}


def canonical_scalar_overloads(graph: torch.fx.GraphModule) -> None:
    """Rewrite ``aten.<op>.Scalar`` calls of ``graph`` into the ``.Tensor`` overload with the
    same Python scalar operand (same values: both broadcast a wrapped scalar); ``alpha``,
    positional in ``add.Scalar`` / ``sub.Scalar``, is keyword-only in ``.Tensor``."""
    for node in graph.graph.nodes:
        if node.op == "call_function" and node.target in _SCALAR_OVERLOADS:
            node.target = _SCALAR_OVERLOADS[node.target]
            if len(node.args) == 3:
                node.kwargs = {**node.kwargs, "alpha": node.args[2]}
                node.args = node.args[:2]
    graph.recompile()


def _fake_inputs(tensors: list) -> list:
    """Fake copies of ``tensors`` (static shapes) in a fake mode with a shape environment:
    inductor's FX graph cache (on disk, keyed by the traced graph) needs one, so a region
    compiled once is loaded, not compiled again, by a later process (without it every
    process compiles: 'Bypassing FX Graph Cache because No shape env')."""
    from torch._subclasses.fake_tensor import (
        FakeTensorMode,  # inductor loads only when kernels compile (seconds to import)
    )
    from torch.fx.experimental.symbolic_shapes import (
        ShapeEnv,  # inductor loads only when kernels compile (seconds to import)
    )

    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    return [mode.from_tensor(t, static_shapes=True) for t in tensors]


def inductor_options(autotune: bool, pdl: bool = False) -> dict:
    """Inductor's config for a segment or region: never its own CUDA graphs (the program's
    graph captures the kernels); with ``autotune``, torch.compile's
    ``max-autotune-no-cudagraphs`` mode; with ``pdl``, kernels launched as programmatic
    dependents."""
    from torch._inductor import list_mode_options  # inductor loads only when kernels compile (seconds to import)

    return {
        **(list_mode_options("max-autotune-no-cudagraphs") if autotune else {}),
        "triton.cudagraphs": False,
        **({"triton.enable_pdl": True} if pdl else {}),
    }


def compiled_segment(
    run: Callable[[list], list], what: str, where: str, stats: KernelCompileStats, cache: dict | None = None
) -> Callable[[list], list]:
    """``run`` (the steps of ``what``: a kernel segment or a compute region, ``args ->
    results``) compiled per signature. ``cache``: signature -> (compiled function, the
    argument positions it writes), shared with the regions that repeat this one (None: its
    own)."""
    from torch._inductor.compile_fx import compile_fx  # inductor loads only when kernels compile (seconds to import)
    from torch.fx.experimental.proxy_tensor import (
        make_fx,  # inductor loads only when kernels compile (seconds to import)
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
            fakes = _fake_inputs([args[i] for i in positions])
            with torch.no_grad(), progress.task(f"compiling {what} at {where} (inductor)"):
                graph = make_fx(traced, tracing_mode="fake", _allow_non_fake_inputs=True)(*fakes)
                canonical_scalar_overloads(graph)
                compiled = compile_fx(graph, fakes, config_patches=inductor_options(stats.autotune, stats.pdl))
            assert callable(compiled), "compile_fx returns a callable outside AOT mode"
            fn = lambda a: compiled(*[a[i] for i in positions])  # noqa: E731
            written = {positions[i] for i in written_inputs(graph)}
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
