"""The entry function's arguments: every call's inputs are checked before anything runs.

A buffer argument takes a tensor of its local shape, dtype and device; a host scalar
argument an index / integer / float / i1 bool. An entry whose arguments are all held buffers
of static shape (an imported model: parameters and activations) is checked by one generated
function per call, one ``isinstance`` per input and ONE tuple comparison of every input's
shape, dtype and device::

    def fits(a0, a1):
        return (isinstance(a0, Tensor) and isinstance(a1, Tensor)
                and (a0.shape, a0.dtype, a0.device, a1.shape, a1.dtype, a1.device) == expected)

Anything that does not fit goes through the per-argument check, which reports the first
bad input.
"""

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch_mlir import ir

from hir.dialect.context import HirError
from hir.interpreter.buffers import BufferSpec, buffer_spec, fmt_shape, is_memref


class ArgSpec:
    """One entry argument: a buffer (checked against its local shape, dtype and device) or a
    host scalar (index / integer / float / i1 bool)."""

    def __init__(self, index: int, type_: ir.Type, rank: int, device: torch.device) -> None:
        self.index = index
        self.device = device
        self.type_text = str(type_)
        self.buffer: BufferSpec | None = buffer_spec(type_, rank) if is_memref(type_) else None
        self.scalar = None if self.buffer else scalar_kind(type_)
        local = self.buffer.local_static() if self.buffer is not None and self.buffer.held else None
        # The local shape of a held buffer whose extents are all static, else None.
        self.size = torch.Size(local) if local is not None and all(e >= 0 for e in local) else None
        self.dtype = self.buffer.dtype if self.buffer is not None else None

    def fits(self, value: Any) -> bool:
        """The common case, checked in four comparisons per call: a tensor of exactly the
        static local shape, dtype and device. Anything else goes through :meth:`check`."""
        return (
            self.size is not None
            and isinstance(value, torch.Tensor)
            and value.shape == self.size
            and value.dtype is self.dtype
            and value.device == self.device
        )

    def check(self, value: Any, where: str) -> Any:
        what = f"argument #{self.index} ({self.type_text})"
        if self.buffer is None:
            scalar = self.scalar
            assert scalar is not None, "an argument that is not a buffer is a host scalar"
            if isinstance(value, torch.Tensor) and value.dim() == 0:
                value = value.item()
            if scalar is bool:  # i1: True / False (or 0 / 1)
                if not isinstance(value, int) or value not in (0, 1):
                    raise HirError(f"{where} {what} expects a bool, got {value!r}")
                return bool(value)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (scalar is int and isinstance(value, float))
            ):
                raise HirError(f"{where} {what} expects a {scalar.__name__}, got {type(value).__name__}")
            return scalar(value)
        spec = self.buffer
        if not spec.held:
            return None  # another rank's buffer: whatever was passed is ignored
        if not isinstance(value, torch.Tensor):
            raise HirError(f"{where} {what} expects a torch.Tensor, got {type(value).__name__}")
        expected = spec.local_static()
        local = " (this rank's shard)" if spec.sharding is not None and spec.sharding.is_split else ""
        if value.dim() != len(expected) or any(e >= 0 and e != a for e, a in zip(expected, value.shape)):
            raise HirError(f"{where} {what} expects shape {fmt_shape(expected)}{local}, got {fmt_shape(value.shape)}")
        if value.dtype != spec.dtype:
            raise HirError(f"{where} {what} expects dtype {spec.dtype}, got {value.dtype}")
        if value.device != self.device:
            raise HirError(f"{where} {what} expects a tensor on {self.device}, got one on {value.device}")
        return value


def scalar_kind(type_: ir.Type) -> type:
    """The Python type of a host scalar argument: bool (i1), float, else int."""
    text = str(type_)
    return bool if text == "i1" else float if text.startswith(("f", "bf")) else int


class EntryArguments:
    """The checks of the entry's arguments (``where()``: the prefix of an input error,
    built only when one is reported)."""

    def __init__(self, types: Sequence[ir.Type], rank: int, device: torch.device, where: Callable[[], str]) -> None:
        self.specs = [ArgSpec(i, t, rank, device) for i, t in enumerate(types)]
        self.where = where
        self.all_fit = _all_fit(self.specs)

    def check(self, inputs: Sequence[Any]) -> list:
        """The checked values of ``inputs`` (host scalars converted, other ranks' buffers
        None); an :class:`HirError` at the first bad one."""
        count = len(self.specs)
        if (
            self.all_fit is not None
            and type(inputs) in (list, tuple)
            and len(inputs) == count
            and self.all_fit(*inputs)
        ):
            return list(inputs)
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise HirError(f"{self.where()} takes a list of {count} input(s), got {type(inputs).__name__}")
        if len(inputs) != count:
            raise HirError(f"{self.where()} takes {count} input(s), got {len(inputs)}")
        return [value if arg.fits(value) else arg.check(value, self.where()) for arg, value in zip(self.specs, inputs)]


def _all_fit(specs: list[ArgSpec]) -> Callable[..., bool] | None:
    """Whether every input of a call fits its static argument, as one generated function
    (see the module docstring); None when an argument is a scalar, dynamic or not held."""
    if not specs or any(spec.size is None for spec in specs):
        return None
    names = [f"a{i}" for i in range(len(specs))]
    tensors = " and ".join(f"isinstance({n}, Tensor)" for n in names)
    fields = ", ".join(f"{n}.shape, {n}.dtype, {n}.device" for n in names)
    expected = tuple(x for spec in specs for x in (spec.size, spec.dtype, spec.device))
    scope: dict[str, Any] = {"Tensor": torch.Tensor, "expected": expected}
    exec(f"def fits({', '.join(names)}):\n    return {tensors} and ({fields},) == expected\n", scope)  # noqa: S102 - text built from argument counts only
    return scope["fits"]
