"""A stable textual form of outputs for ``hir-run --print`` (what FileCheck tests match):

    output 0: shape [2, 3] f32
    [[0, 1, 2],
     [3, 4, 5]]

Numbers use ``%g`` with 6 significant digits (2.0 prints as 2), booleans true/false."""

from typing import Optional

import torch

from hir.interpreter.buffers import DTYPE_NAMES


def format_output(index: int, value: Optional[torch.Tensor]) -> str:
    if value is None:
        return f"output {index}: not held by this rank"
    if not isinstance(value, torch.Tensor):
        return f"output {index}: {value}"
    t = value.detach().cpu()
    header = f"output {index}: shape [{', '.join(map(str, t.shape))}] {DTYPE_NAMES.get(t.dtype, str(t.dtype))}"
    if t.is_floating_point() and t.dtype != torch.float64:
        t = t.float()
    return header + "\n" + _format(t.tolist(), t.dim(), 0)


def _scalar(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:g}" if x == x else "nan"
    return str(x)


def _format(x, dims: int, indent: int) -> str:
    if dims == 0:
        return _scalar(x)
    if dims == 1:
        return "[" + ", ".join(_scalar(v) for v in x) + "]"
    sep = ",\n" + " " * (indent + 1)
    return "[" + sep.join(_format(v, dims - 1, indent + 1) for v in x) + "]"
