"""A stable textual form of outputs for ``hir-run --print`` (what FileCheck tests match):

    output 0: shape [2, 3] f32
    [[0, 1, 2],
     [3, 4, 5]]

Numbers use ``%g`` with 6 significant digits (2.0 prints as 2), booleans true/false."""

import zlib

import torch

from hir.interpreter.buffers import DTYPE_NAMES


def format_output(index: int, value: torch.Tensor | None) -> str:
    if not isinstance(value, torch.Tensor):
        return _header(index, value)
    t = value.detach().cpu()
    if t.is_floating_point() and t.dtype != torch.float64:
        t = t.float()
    return _header(index, value) + "\n" + _format(t.tolist(), t.dim(), 0)


def summarize_output(index: int, value: torch.Tensor | None) -> str:
    """One line: the header of :func:`format_output`, the sum of the values (``%g``) and a
    CRC-32 of the bytes (equal bytes, equal checksum), what ``hir-run`` prints without
    ``--print``: ``output 0: shape [2, 3] f32, sum 15, crc32 9a1c3f02``."""
    if not isinstance(value, torch.Tensor):
        return _header(index, value)

    t = value.detach().cpu().contiguous()
    total = t.double().sum().item() if t.numel() else 0.0
    crc = zlib.crc32(
        t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    )  # (a 0-d tensor has no byte view)
    return f"{_header(index, value)}, sum {_scalar(total)}, crc32 {crc:08x}"


def _header(index: int, value: object) -> str:
    if value is None:
        return f"output {index}: not held by this rank"
    if not isinstance(value, torch.Tensor):
        return f"output {index}: {value}"
    return (
        f"output {index}: shape [{', '.join(map(str, value.shape))}] {DTYPE_NAMES.get(value.dtype, str(value.dtype))}"
    )


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
