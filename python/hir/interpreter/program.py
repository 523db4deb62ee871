"""A compiled program: pick the entry function, compile it once for this rank, validate
inputs fully before anything runs, execute, and return the outputs."""

import os
import sys
from functools import cached_property
from typing import Any, Optional, Sequence

import torch
from torch_mlir import ir

from hir.core import HirError
from hir.dialect.compute_ops import KERNEL_ATTR
from hir.interpreter import arith, comm, compute, control, memory, scf, streams, tensors, views  # noqa: F401  (register handlers)
from hir.interpreter.buffers import BufferSpec, buffer_spec, fmt_shape, is_memref
from hir.interpreter.distributed import Communicator, default_device, world
from hir.interpreter.graph import GraphRunner, check_capturable
from hir.interpreter.memory import AllocationTracker
from hir.interpreter.plan import Compiler, FunctionPlan, run_steps
from hir.interpreter.streams import StreamPool

COMM_OP_NAMES = tuple(f"hir.{name}" for name in comm.COLLECTIVES) + ("hir.send", "hir.recv")


class Runtime:
    """What compiled steps close over: device, rank, streams, the process group."""

    def __init__(
        self, device: torch.device, num_streams: int, backend: Optional[str], compile_kernels: bool, track_memory: bool = False
    ) -> None:
        self.device = device
        self.memory: Optional[AllocationTracker] = AllocationTracker() if track_memory else None
        self.backend = backend
        self.compile_kernels = compile_kernels
        self.rank, self.world_size = world()
        self.streams = StreamPool(device, num_streams)
        # Works no hir.wait consumes: (work, location, op name), completed at entry exit.
        self.pending: list = []
        self.debug = bool(os.environ.get("HIR_DEBUG"))

    @cached_property
    def comm(self) -> Communicator:
        """The process group, initialized on first need (programs without communication
        never touch torch.distributed)."""
        return Communicator(self.device, self.backend)


def entry_function(module: ir.Module, entry: Optional[str], source_name: Optional[str]) -> str:
    """``entry`` if given, else ``main``, else the single public function that is not a kernel."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    names = [ir.StringAttr(f.operation.attributes["sym_name"]).value for f in funcs]
    if entry is not None:
        if entry not in names:
            raise HirError(f"{source_name or '<module>'}: error: no function @{entry} (functions: {', '.join(names) or 'none'})")
        return entry
    if "main" in names:
        return "main"
    public = [
        n
        for n, f in zip(names, funcs)
        if KERNEL_ATTR not in f.operation.attributes
        and ("sym_visibility" not in f.operation.attributes or ir.StringAttr(f.operation.attributes["sym_visibility"]).value == "public")
    ]
    if len(public) != 1:
        raise HirError(
            f"{source_name or '<module>'}: error: cannot pick the entry function: "
            f"{'no' if not public else len(public)} public non-kernel functions ({', '.join(public)}); name one with entry="
        )
    return public[0]


def module_teams(module: ir.Module) -> list[tuple[int, ...]]:
    """The teams of every collective of the module, in op order (for group creation)."""
    teams: list[tuple[int, ...]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in COMM_OP_NAMES:
            if "team" in op.attributes:
                team = tuple(sorted(ir.DenseI64ArrayAttr(op.attributes["team"])))
                if team not in teams:
                    teams.append(team)
            elif not teams:
                teams.append(())  # P2P only: the world group is enough
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return teams


class Program:
    """An hir module compiled for this process: call it with inputs, get outputs.

    ``Program(module, ...)(inputs)`` is :func:`hir.interpreter.run` without recompiling.

    ``graph=True``: capture the program as a CUDA graph on the first call and replay it
    afterwards (see :mod:`hir.interpreter.graph`). ``track_memory=True``: count the bytes
    of live allocations (``program.memory.peak`` / ``.current``).
    """

    def __init__(
        self,
        module: ir.Module,
        *,
        entry: Optional[str] = None,
        device: Optional[str] = None,
        num_streams: int = 4,
        backend: Optional[str] = None,
        compile_kernels: bool = False,
        source_name: Optional[str] = None,
        graph: bool = False,
        track_memory: bool = False,
    ) -> None:
        if num_streams < 1:
            raise HirError(f"error: num_streams must be >= 1, got {num_streams}")
        try:
            dev = default_device(device)
        except (RuntimeError, ValueError) as err:
            raise HirError(f"error: {err}") from None
        self.runtime = Runtime(dev, num_streams, backend, compile_kernels, track_memory)
        self.device = dev
        self.source_name = source_name
        with module.context:
            teams = module_teams(module)
            if graph:
                check_capturable(module, dev, backend, bool(teams))
            if teams:
                try:
                    # Teams naming absent ranks are reported at their op by the compiler.
                    world_size = self.runtime.world_size
                    self.runtime.comm.create_groups(t for t in teams if t and max(t) < world_size)
                except (RuntimeError, ValueError) as err:
                    raise HirError(f"error: cannot set up torch.distributed: {err}") from None
            self.entry = entry_function(module, entry, source_name)
            self.compiler = Compiler(module, self.runtime, source_name)
            try:
                self.plan: FunctionPlan = self.compiler.function(self.entry)
            except ValueError as err:  # e.g. an element type without a torch dtype
                raise HirError(f"{source_name or '<module>'}: error: {err}") from None
            self._args = [ArgSpec(i, t, self.runtime.rank) for i, t in enumerate(self.plan.arg_types)]
        self.graph: Optional[GraphRunner] = GraphRunner(self._execute, dev, self.runtime.streams) if graph else None

    @property
    def memory(self) -> Optional[AllocationTracker]:
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
        values = self.check_inputs(inputs)
        if self.graph is not None:
            return self.graph(values)
        return self._execute(values)

    run = __call__

    def _execute(self, values: list) -> list:
        """Run the steps on checked inputs (eagerly, or under capture)."""
        pool = self.runtime.streams
        caller = pool.current()
        try:
            env = self.plan.template.copy()
            for slot, value in zip(self.plan.arg_slots, values):
                env[slot] = value
            run_steps(self.plan.steps, env)
            if self.runtime.pending:
                self._complete_pending()
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
                print(f"{where}: warning: '{name}' work is never waited on; waited for when @{self.entry} returns", file=sys.stderr)
            work.wait()

    def check_inputs(self, inputs: Sequence[Any]) -> list:
        where = f"{self.plan.location}: error: @{self.entry}"
        if len(inputs) != len(self._args):
            raise HirError(f"{where} takes {len(self._args)} input(s), got {len(inputs)}")
        return [arg.check(value, where, self.device) for arg, value in zip(self._args, inputs)]


class ArgSpec:
    """One entry argument: a buffer (checked against its local shape, dtype and device) or a
    host scalar (index / integer / float)."""

    def __init__(self, index: int, type_: ir.Type, rank: int) -> None:
        self.index = index
        self.type_text = str(type_)
        self.buffer: Optional[BufferSpec] = buffer_spec(type_, rank) if is_memref(type_) else None
        self.scalar = None if self.buffer else scalar_kind(type_)

    def check(self, value: Any, where: str, device: torch.device) -> Any:
        what = f"argument #{self.index} ({self.type_text})"
        if self.buffer is None:
            if isinstance(value, torch.Tensor) and value.dim() == 0:
                value = value.item()
            if self.scalar is bool:  # i1: True / False (or 0 / 1)
                if not isinstance(value, int) or value not in (0, 1):
                    raise HirError(f"{where} {what} expects a bool, got {value!r}")
                return bool(value)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (self.scalar is int and isinstance(value, float)):
                raise HirError(f"{where} {what} expects a {self.scalar.__name__}, got {type(value).__name__}")
            return self.scalar(value)
        spec = self.buffer
        if not spec.held:
            return None  # another rank's buffer: whatever was passed is ignored
        if not isinstance(value, torch.Tensor):
            raise HirError(f"{where} {what} expects a torch.Tensor, got {type(value).__name__}")
        expected = spec.local_static()
        local = " (this rank's shard)" if spec.split_axis is not None else ""
        if value.dim() != len(expected) or any(e >= 0 and e != a for e, a in zip(expected, value.shape)):
            raise HirError(f"{where} {what} expects shape {fmt_shape(expected)}{local}, got {fmt_shape(value.shape)}")
        if value.dtype != spec.dtype:
            raise HirError(f"{where} {what} expects dtype {spec.dtype}, got {value.dtype}")
        if value.device != device:
            raise HirError(f"{where} {what} expects a tensor on {device}, got one on {value.device}")
        return value


def scalar_kind(type_: ir.Type) -> type:
    """The Python type of a host scalar argument: bool (i1), float, else int."""
    text = str(type_)
    return bool if text == "i1" else float if text.startswith(("f", "bf")) else int


def compile(module: ir.Module, **options: Any) -> Program:  # noqa: A001 - the natural name
    """Compile ``module`` once; call the result with inputs as often as needed."""
    return Program(module, **options)


def run(module: ir.Module, inputs: Sequence[Any], **options: Any) -> list:
    """Compile and run ``module`` once (see :class:`Program` for the options)."""
    return Program(module, **options)(inputs)
