"""A compiled program: pick the entry function, compile it once for this rank, validate
inputs fully before anything runs, execute, and return the outputs."""

import functools
import logging
import sys
from collections.abc import Sequence
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import module_high_priority_streams
from hir.dialect.context import HirError, check_options
from hir.dialect.gc_stress import checkpoint
from hir.dialect.placement_checks import check_placements
from hir.interpreter import ops  # noqa: F401  (registers every op group's handlers)
from hir.interpreter.arguments import EntryArguments
from hir.interpreter.backends.process_groups import default_device, run_scope
from hir.interpreter.backends.process_groups import timeout as dist_timeout
from hir.interpreter.buffers import buffer_spec, fmt_shape, is_memref
from hir.interpreter.entry_checks import entry_function, module_teams, pool_size, refuse_resharding, require_module
from hir.interpreter.graph import GraphMode, GraphRunner, GraphState
from hir.interpreter.graph_checks import graph_blockers, written_arguments
from hir.interpreter.inputs import shard
from hir.interpreter.kernels import CompileMode, KernelCompileStats, check_mode, warm_compile_workers
from hir.interpreter.nodes import run_ranks_per_node
from hir.interpreter.plan import Compiler
from hir.interpreter.regions import compile_block, region_mode_reason
from hir.interpreter.runtime import AllocationTracker, Runtime, StreamPool
from hir.interpreter.steps import FunctionPlan, run_steps
from hir.interpreter.transfer_checks import TransferChecks
from hir.interpreter.weights import read_weights, recorded_weights, weights_path

log = logging.getLogger("hir.graph")


class Program:
    """An hir module compiled for this process: call it with inputs, get outputs.

    ``Program(module, ...)(inputs)`` is :func:`hir.interpreter.run` without recompiling.

    ``num_streams``: the stream pool size when the module has no ``hir.num_streams``
    (default 4); with one, it must agree.

    ``graph="auto"`` (default): on CUDA, the second call with the same input shapes and host
    scalars captures the program as a CUDA graph and later ones replay it; programs that
    cannot be captured (CPU, Gloo, ``track_memory``) run eagerly, and
    ``graph_state`` says why. ``graph=True``: capture on the first call, an error where auto
    falls back. ``graph=False``: always eager. ``static_outputs=True``: return the graph's
    own output buffers (overwritten by the next call) instead of copies;
    ``graph_cache_size``: graphs kept (per input signature one bound to the caller's
    buffers and one on static buffers, each kind capped, least recently used dropped). See
    :mod:`hir.interpreter.graph` for the exact contract.
    ``track_memory=True``: count the bytes of live allocations (``program.memory.peak`` /
    ``.current``).
    ``compile_kernels="auto"`` (default): kernel segments of several ops run compiled by
    inductor on CUDA (eager on CPU); ``True`` / ``False`` force it on / off for every segment
    (:mod:`hir.interpreter.kernels`; ``kernel_compile`` reports the compile time).
    ``autotune=True``: compile them with inductor's max-autotune (GEMM templates and
    kernel configs benchmarked at compile time: longer compiles, faster kernels where it
    pays).
    ``regional=True`` (default): a compiled region is cut where it repeats (a model's
    identical layers) and each distinct piece is traced and compiled once
    (:mod:`hir.interpreter.repeats`); ``False``: each region compiles whole.
    Weights: when the entry's arguments name weight keys (``hir.weight``; hir-import and
    ``TorchProgram.save`` write them), a call given only the other arguments reads those
    from the module's safetensors file (``hir.weights``: next to ``source_name`` when that
    is a file, else in the current folder; ``weights=FILE`` another one) once, this rank's
    parts (:mod:`hir.interpreter.weights`);
    a call giving every argument uses what it is given.
    """

    @checkpoint
    def __init__(
        self,
        module: ir.Module,
        *,
        entry: str | None = None,
        device: str | None = None,
        num_streams: int | None = None,
        backend: str | None = None,
        compile_kernels: CompileMode = "auto",
        source_name: str | None = None,
        graph: GraphMode = "auto",
        track_memory: bool = False,
        static_outputs: bool = False,
        graph_cache_size: int = 4,
        autotune: bool = False,
        regional: bool = True,
        weights: str | None = None,
    ) -> None:
        require_module(module, "Program")
        num_streams = pool_size(module, num_streams, source_name)
        if not (graph is True or graph is False or graph == "auto"):
            raise HirError(f"error: graph must be True, False or 'auto', got {graph!r}")
        check_mode(compile_kernels)
        if graph_cache_size < 1:
            raise HirError(f"error: graph_cache_size must be >= 1, got {graph_cache_size}")
        if static_outputs and graph is False:
            raise HirError(
                "error: static_outputs=True needs graph=True or graph='auto' (eager runs have no static buffers)"
            )
        try:
            dev = default_device(device)
        except (RuntimeError, ValueError) as err:
            raise HirError(f"error: {err}") from None
        try:
            high_priority = module_high_priority_streams(module)
        except ValueError as err:
            raise HirError(f"{source_name or '<module>'}: error: {err}") from None
        self.runtime = Runtime(dev, num_streams, backend, compile_kernels, track_memory, high_priority)
        if self.runtime.world_size > 1:
            dist_timeout()  # validates $HIR_DIST_TIMEOUT before any rank waits on another
        self.device = dev
        self.source_name = source_name
        with module.context:
            self.runtime.ranks_per_node = run_ranks_per_node(
                module, self.runtime.rank, self.runtime.world_size, source_name
            )
            placement_errors = check_placements(module.operation, source_name, self.runtime.world_size)
            if placement_errors:
                raise HirError("\n".join(placement_errors))
            refuse_resharding(module, self.runtime.world_size, source_name)
            teams = module_teams(module)
            blockers = graph_blockers(module, dev, backend, bool(teams), track_memory) if graph is not False else []
            if graph is True and blockers:
                raise HirError(f"error: --cuda-graph (graph=True): {blockers[0]}")
            if teams:
                try:
                    # Teams naming absent ranks are reported at their op by the compiler.
                    world_size = self.runtime.world_size
                    self.runtime.comm.create_groups(t for t in teams if t and max(t) < world_size)
                except HirError:
                    raise
                except (RuntimeError, ValueError) as err:
                    raise HirError(f"error: cannot set up torch.distributed: {err}") from None
            self.entry = entry_function(module, entry, source_name)
            if teams:
                self.runtime.transfer_checks = TransferChecks(module, self.entry, self.runtime.world_size, dev)
            warm_compile_workers(compile_kernels, dev)  # its regions compile at the first call
            stats = self.runtime.kernel_compile
            stats.autotune = bool(autotune)
            stats.regions_reason = region_mode_reason(compile_kernels, dev, track_memory)
            shared = {} if regional else None
            regions = (
                None if stats.regions_reason else functools.partial(compile_block, mode=compile_kernels, shared=shared)
            )
            self.compiler = Compiler(module, self.runtime, source_name, regions)
            try:
                self.plan: FunctionPlan = self.compiler.function(self.entry)
            except HirError:
                raise
            except ValueError as err:  # e.g. an element type without a torch dtype
                raise HirError(f"{source_name or '<module>'}: error: {err}") from None
            self._args = EntryArguments(self.plan.arg_types, self.runtime.rank, dev, self._where)
            fn = self.compiler.functions[self.entry].operation
            self.recorded_weights = recorded_weights(module, fn)
            self.weights_path = weights_path(self.recorded_weights, source_name, weights)
            self._weights: dict | None = None
            keys = self.recorded_weights.keys
            # a call with this many inputs gives the arguments no weight fills (-1: none do)
            self._without_weights = len(self.plan.arg_types) - len(keys) if keys else -1
            functions = self.compiler.functions
            written = (
                written_arguments(functions[self.entry].regions[0].blocks[0], functions)
                if graph is not False
                else frozenset()
            )
        self._graph_state = GraphState(graph, "; ".join(blockers) or None if graph is not False else "graph=False")
        self.graph: GraphRunner | None = None
        if self._graph_state.active:
            self.graph = GraphRunner(
                self._execute,
                dev,
                self.runtime.streams,
                self._graph_state,
                written,
                static_outputs,
                graph_cache_size,
                self.runtime.capture_refreshes,
                lambda: self.runtime.dependent_launches,
            )
        else:
            self._graph_state.last = "eager"
            log.debug("graph %s: every call runs eagerly: %s", graph, self._graph_state.reason)

    @property
    def graph_state(self) -> GraphState:
        """What the program does with CUDA graphs: whether they are used (``reason``: why
        not), what the last call did, the graphs cached now."""
        return self.graph.refresh() if self.graph is not None else self._graph_state

    @property
    def kernel_compile(self) -> KernelCompileStats:
        """Compiled kernel segments: how many, how many signatures compiled, in how long."""
        return self.runtime.kernel_compile

    @property
    def memory(self) -> AllocationTracker | None:
        """The allocation tracker (``track_memory=True``), else None."""
        return self.runtime.memory

    @property
    def streams(self) -> StreamPool:
        return self.runtime.streams

    @property
    def rank(self) -> int:
        return self.runtime.rank

    def __call__(self, inputs: Sequence[Any]) -> list:
        """Run the entry function on ``inputs`` (local shards; None for buffers this rank
        does not hold) and return its results. Every input is checked before anything runs."""
        return self.run_checked(self.check_inputs(inputs))

    run = __call__

    def run_checked(self, values: list) -> list:
        """Run on ``values`` that :meth:`check_inputs` returned (eagerly or through CUDA
        graphs, as :meth:`__call__` does)."""
        if self.graph is not None:
            return self.graph(values)
        return self._execute(values)

    def _execute(self, values: list) -> list:
        """Run the steps on checked inputs (eagerly, or under capture)."""
        pool = self.runtime.streams
        caller = pool.enter()
        checks = self.runtime.transfer_checks
        try:
            if checks is not None:
                checks.begin(values)
            env = self.plan.env(values)
            run_steps(self.plan.steps, env)
            if self.runtime.pending:
                self._complete_pending()
            if checks is not None:
                checks.finish()
            return [env[slot] for slot in self.plan.result_slots]
        finally:
            self.runtime.pending.clear()
            # Hand the outputs back on the caller's stream, ordered after the program's work.
            last = pool.current()
            if last is not caller:
                caller.wait_stream(last)
                pool.set_current(caller)

    def _complete_pending(self) -> None:
        """Wait on every communication the program issued and never waited on (nvFuser's
        ring exchange waits only on its receives), so no transfer is cancelled when the
        entry returns; HIR_DEBUG=1 warns about each."""
        for work, where, name in self.runtime.pending:
            if self.runtime.debug:
                print(
                    f"{where}: warning: '{name}' work is never waited on; waited for when @{self.entry} returns",
                    file=sys.stderr,
                )
            work.wait()

    def check_inputs(self, inputs: Sequence[Any]) -> list:
        if len(inputs) == self._without_weights:
            inputs = self.with_weights(inputs)
        return self._args.check(inputs)

    def read_weights(self, wanted: set | None = None) -> dict:
        """``{argument index: tensor}`` of the arguments the module's recorded weights file
        gives (``wanted``: those indices only), this rank's parts, read once and kept (the
        same tensors every call, so parameter work computed from them is reused)."""
        keys = self.recorded_weights.keys
        if not keys:
            return {}
        if self.weights_path is None:
            raise HirError(
                f"{self._where()}: its arguments name weight keys but the module "
                "names no weights file (pass weights=FILE, hir-run --weights FILE)"
            )
        if self._weights is None:
            self._weights = read_weights(
                self.weights_path,
                self.plan.arg_types,
                keys,
                rank=self.runtime.rank,
                device=self.device,
                entry=self.entry,
            )
        return self._weights if wanted is None else {i: t for i, t in self._weights.items() if i in wanted}

    def with_weights(self, inputs: Sequence[Any]) -> list:
        """``inputs`` for the arguments that read no weight, with the weights filled in."""
        weights = self.read_weights()
        given = iter(inputs)
        return [weights[i] if i in weights else next(given) for i in range(len(self.plan.arg_types))]

    def _where(self) -> str:
        """The prefix of an input error (built only when one is reported)."""
        return f"{self.plan.location}: error: @{self.entry}"


def local_arguments(module: ir.Module, values: Sequence[Any], rank: int, *, entry: str | None = None) -> list:
    """Rank ``rank``'s arguments of the entry function from GLOBAL values (what ``hir-run``
    does with ``.pt`` inputs): each tensor cut to this rank's shard as its argument type
    places it (``#hir.shard``; a contiguous copy), None for a buffer whose mesh excludes the
    rank, scalars as given. A tensor whose shape is not the type's global shape is an error
    naming the argument."""
    name = entry_function(module, entry, None)
    fn = next(
        op.operation
        for op in module.body.operations
        if op.operation.name == func.FuncOp.OPERATION_NAME
        and ir.StringAttr(op.operation.attributes["sym_name"]).value == name
    )
    types = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs
    if len(values) != len(types):
        raise HirError(f"error: @{name} takes {len(types)} argument(s), got {len(values)}")
    out = []
    for index, (value, type_) in enumerate(zip(values, types)):
        if not is_memref(type_):
            out.append(value)
            continue
        spec = buffer_spec(type_, rank)
        if not (hasattr(value, "shape") and spec.fits(value.shape)):
            raise HirError(
                f"error: argument #{index} of @{name}: expected a global tensor of shape {fmt_shape(spec.shape)} "
                f"({type_}), got {fmt_shape(value.shape) if hasattr(value, 'shape') else type(value).__name__}"
            )
        out.append(shard(value, spec.sharding, rank) if spec.held else None)
    return out


def compile(module: ir.Module, **options: Any) -> Program:
    """Compile ``module`` once; call the result with inputs as often as needed."""
    return Program(module, **options)


def run(module: ir.Module, inputs: Sequence[Any], **options: Any) -> list:
    """Compile and run ``module`` once (see :class:`Program` for the options). A process
    group this call creates does not outlive it when the run fails or has one rank. Unknown
    options and inputs that are not a list are :class:`HirError`s."""
    check_options("hir.run", options, Program.__init__)
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
        raise HirError(
            "error: hir.run: inputs must be a list of the entry function's "
            f"arguments (tensors and scalars), got {type(inputs).__name__}"
        )
    with run_scope():
        return Program(module, **options)(inputs)
