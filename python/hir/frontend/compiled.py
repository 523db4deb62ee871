"""One compiled, reusable program: ``fn = program.compile(state, device=...)`` (or
``hir.compile``) binds an imported program's state once and returns a callable whose
per-call cost is the interpreter's.

What ``compile`` does, once: lowers the module (``TorchProgram.lower()``, unless it was
lowered already or ``lower=False``), lays out this rank's state arguments on the device
(tensors already there are used as they are, so a KV cache the program writes in place is
the caller's tensor; others are copied there once: :attr:`CompiledProgram.state` holds what
the program reads and writes), and builds the interpreter's plan
(:class:`hir.interpreter.Program`, one per compiled program, never per call). Options are
``Program``'s: ``graph`` (``"auto"``: CUDA graphs from the second call of an input
signature), ``compile_kernels`` (``"auto"``: compute regions compiled by inductor on CUDA),
``static_outputs``, ``num_streams``...; ``autotune=True`` compiles the regions with
inductor's max-autotune (:mod:`hir.interpreter.kernels`).

Per call: the inputs (moved to the device) are checked against ``@main``'s input types (a
dynamic dim's declared bounds once per input signature); the results come back in the
module's structure (:mod:`hir.frontend.output_tree`; ``fn.run``: as a list). On
CUDA with graphs, each input is copied into a staging buffer owned by the compiled program
(one set per input signature), so every call passes the very same buffers (the state and
the staging buffers): the interpreter's graph runner captures its graph on them (a *bound*
graph: no copies of the state in or out, :mod:`hir.interpreter.graph`) and from then on a
call is the input copies and one graph replay, with no per-argument checks.
"""

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import func

from hir.core import HirError
from hir.frontend.output_tree import rebuild
from hir.interpreter import Program
from hir.interpreter.backends.process_groups import default_device, world
from hir.interpreter.buffers import buffer_spec, fmt_shape, is_memref
from hir.interpreter.inputs import shard
from hir.interpreter.kernels import warm_compile_workers


class CompiledProgram:
    """An imported program compiled with its state bound: ``fn(*inputs)`` returns what the
    module returns, ``fn.run(*inputs)`` the list of ``@main``'s results
    (``program.output_names``). See the module docstring."""

    def __init__(
        self, program: Any, state: Mapping, *, device: str | None = None, lower: bool = True, **options: Any
    ) -> None:
        if not isinstance(state, Mapping):
            raise HirError(
                "error: compile: the state must be a dict of tensors "
                f"(program.state(module) or module.state_dict()), got {type(state).__name__}"
            )
        try:
            self.device = default_device(device)
        except (RuntimeError, ValueError) as err:
            raise HirError(f"error: compile: {err}") from None
        self.program = program
        warm_compile_workers(options.get("compile_kernels", "auto"), self.device)  # starting up while it lowers
        if lower and not getattr(program, "lowered", False):
            program.lower()
        self.names = list(program.state_names)
        self._types = _input_types(program.module, len(self.names))
        self._sharded = program.mesh is not None
        local = program.arguments(state, *[_placeholder(t) for t in self._types])[: len(self.names)]
        self._state_args = [_on(t, self.device) for t in local]
        self.state: dict[str, torch.Tensor] = dict(zip(self.names, self._state_args))
        self.interpreter = Program(program.module, device=str(self.device), **options)
        self._signatures: set = set()  # input signatures checked
        self._stages: dict[tuple, list] = {}  # input signature -> staging buffers (CUDA graphs)
        self._replays: dict[tuple, Callable[[], list]] = {}  # input signature -> bound graph replay

    @property
    def output_names(self) -> list:
        return self.program.output_names

    @property
    def graph_state(self) -> Any:
        """The interpreter's CUDA graph state (:attr:`hir.interpreter.Program.graph_state`)."""
        return self.interpreter.graph_state

    @property
    def kernel_compile(self) -> Any:
        """What compiling compute regions cost (:attr:`hir.interpreter.Program.kernel_compile`)."""
        return self.interpreter.kernel_compile

    def __call__(self, *inputs: Any, **keyword_inputs: Any) -> Any:
        """What the module returns (a tensor, a tuple, a dict, a ``ModelOutput``: its
        structure, :attr:`TorchProgram.output_tree`) on ``inputs`` (tensors on any device;
        moved to the program's); a list of ``@main``'s results for a program that records no
        structure (loaded from a file). The keyword inputs (``example_kwargs``' tensors,
        :attr:`TorchProgram.keyword_inputs`) by keyword, or positionally after the others."""
        return rebuild(self.program.output_tree, self.run(*inputs, **keyword_inputs))

    def run(self, *inputs: Any, **keyword_inputs: Any) -> list:
        """``@main``'s results on ``inputs``, as a list (``program.output_names``)."""
        given = self.program.with_keywords(inputs, keyword_inputs) if keyword_inputs else inputs
        if len(given) != len(self._types):
            raise HirError(f"error: the program takes {len(self._types)} input(s), got {len(given)}")
        args = [
            x.to(self.device, non_blocking=True) if isinstance(x, torch.Tensor) and x.device != self.device else x
            for x in given
        ]
        key = tuple((x.shape, x.dtype) if isinstance(x, torch.Tensor) else x for x in args)
        if key not in self._signatures:  # once per input signature: bounds and named dims of the dynamic ones
            self._check(args)
            self.program.check_dynamic(args)
            self._signatures.add(key)
        if self._sharded:
            args = self._local_inputs(args)
        graph = self.interpreter.graph
        if graph is None:
            return self._run(self._state_args + args)
        stage = self._stages.get(key)
        if stage is None:
            stage = self._stages[key] = [torch.empty_like(x) if isinstance(x, torch.Tensor) else x for x in args]
        for buffer, x in zip(stage, args):
            if isinstance(x, torch.Tensor) and buffer is not x:
                buffer.copy_(x, non_blocking=True)
        replay = self._replays.get(key)
        if replay is not None:
            return replay()
        values = self._state_args + stage
        outputs = self._run(values)
        replay = graph.bound_replay(values)
        if replay is not None:
            self._replays[key] = replay
        return outputs

    def _run(self, values: list) -> list:
        try:
            checked = self.interpreter.check_inputs(values)
        except HirError:
            self._check(values[len(self.names) :])
            raise
        return self.interpreter.run_checked(checked)

    def _check(self, inputs: list) -> None:
        """Each input must have its ``@main`` argument's shape and dtype; the error names the
        input (the interpreter's names the argument number)."""
        for i, (x, type_) in enumerate(zip(inputs, self._types)):
            if not is_memref(type_):
                continue
            spec = buffer_spec(type_, 0)
            got = None
            if not isinstance(x, torch.Tensor):
                got = type(x).__name__
            elif not spec.fits(x.shape) and not self._sharded:
                got = f"shape {fmt_shape(x.shape)}"
            elif x.dtype != spec.dtype:
                got = f"dtype {x.dtype}"
            if got is not None:
                raise HirError(
                    f"error: input {i}: expected a tensor of shape {fmt_shape(spec.shape)} "
                    f"and dtype {spec.dtype} (as imported), got {got}"
                )

    def _local_inputs(self, inputs: list) -> list:
        """This rank's shards of the inputs, as their ``@main`` types place them (the state's
        were cut once, at compile)."""
        rank = world()[0]
        out = []
        for x, type_ in zip(inputs, self._types):
            spec = buffer_spec(type_, rank) if is_memref(type_) else None
            out.append(x if spec is None else shard(x, spec.sharding, rank) if spec.held else None)
        return out


def compile_program(program: Any, state: Mapping, **options: Any) -> CompiledProgram:
    """:meth:`hir.frontend.TorchProgram.compile`."""
    return CompiledProgram(program, state, **options)


def _main(module: ir.Module) -> Any:
    return next(
        op
        for op in module.body.operations
        if op.operation.name == func.FuncOp.OPERATION_NAME
        and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"
    )


def _arg_types(module: ir.Module) -> list:
    return list(ir.FunctionType(ir.TypeAttr(_main(module).operation.attributes["function_type"]).value).inputs)


def _input_types(module: ir.Module, state_count: int) -> list:
    return _arg_types(module)[state_count:]


def _placeholder(type_: ir.Type) -> Any:
    """A meta tensor of ``type_``'s global shape (a dynamic extent: its split's part count,
    which divides), for laying out arguments without data."""
    if not is_memref(type_):
        return 0
    spec = buffer_spec(type_, 0)
    shape = [e if e >= 0 else spec.parts(axis) for axis, e in enumerate(spec.shape)]
    return torch.empty(shape, dtype=spec.dtype, device="meta")


def _on(tensor: Any, device: torch.device) -> Any:
    if isinstance(tensor, torch.Tensor) and tensor.device != device:
        return tensor.to(device)
    return tensor
