"""Kernels for decode-shaped work on CUDA, chosen at plan time from the op's static shapes.

A decode step reads every weight once and the used part of its KV cache once; its matrix
products have a few rows (batch x new tokens) and its attention a few query rows over a long
static cache. Torch ops (:mod:`hir.interpreter.decode_ops`) run those shapes with Triton
kernels (:mod:`hir.interpreter.triton_decode`), where this module's plan puts them:

- ``hir::attention`` stands in for ``aten.scaled_dot_product_attention`` (same schema) where
  the query has at most :data:`MAX_ROWS` rows per head, the keys at least :data:`MIN_CACHE`
  positions, the mask is boolean, no dropout, no ``is_causal``, one key head per query head (the
  grouped import stacks a KV head's query heads as rows) and a bf16/f16 head dim of 16..256
  (a power of two). Its kernel reads keys and values only up to the last position the mask
  lets a row see (the cache's used part, found on the device), where SDPA's kernels read the
  whole cache.
- ``hir::small_m_linear`` stands in for ``hir.linear`` without a bias where the input has at
  most :data:`MAX_ROWS` rows in all (bf16/f16): one pass over the weight, no split-K.
- ``hir::swiglu_small_m`` stands in for ``hir::swiglu`` (an MLP's gated product
  ``silu(x @ w_gate.T) * (x @ w_up.T)``, which the import makes of that pattern:
  :func:`hir.frontend.fx_rewrites.fuse_swiglu`; elsewhere it is its four torch ops, which a
  compiled region compiles as before) where ``x`` has at most :data:`MAX_ROWS` rows: both
  weights streamed by one launch, the SiLU and product in its epilogue.

How they run (each a mechanism of its own, :data:`MECHANISMS`):

- ``fused-combine``: the attention in one launch (its chunk programs combine their partial
  softmaxes themselves, the last of a (batch, head) to finish), not a chunk and a combine kernel;
- ``split-k``: the product's autotuner may also cut K into parts (more programs in flight on a
  small weight; the last part of a strip to finish adds them up, so still one launch);
- ``gemv``: a product of one row runs on the CUDA cores, each lane summing its products in
  float32 (:mod:`hir.interpreter.triton_one_row`), not through tensor-core tiles of 16 rows
  that stage the weight in shared memory (the gated product keeps its tiles: there the two
  measured the same);
- ``norm-residual``: the import writes a one-row product with the RMSNorm before it or the
  residual add after it as one op, which runs the one-row kernel with the norm in its
  prologue or the add in its epilogue (:mod:`hir.interpreter.decode_fusions`): no elementwise
  launch between the products;
- ``kernel-pdl``: in the CUDA graph hir captures of a program planned with a decode kernel, the
  attention (with ``fused-combine``) and the one-row products launch as programmatic
  dependents (Hopper's launch of a kernel while the one before it drains), the products
  loading the first columns of their weight before they wait where it is an argument of the
  program that it never writes (:mod:`hir.interpreter.dependent_launch`). (Prefetching the
  whole weight strip into the L2 before the wait instead measured slower: it cost the large
  products more than the overlap gained.)
- ``inductor-pdl``: such a program compiles its regions with inductor's programmatic
  dependent launch (``triton.enable_pdl``, where this torch has it), so the elementwise
  kernels around the products overlap their neighbours.
- ``inductor-combo``: and with inductor's combo kernels (``combo_kernels``), so the
  independent elementwise kernels between two products (a Llama layer's RoPE of q and of k,
  its two cache writes, the cache's length count) launch as one kernel.
- ``tune-ahead``: the kernels a program plans are compiled (and the product's tiles timed) in
  a child process while the program's regions compile, so their first call loads them from
  Triton's cache (:mod:`hir.interpreter.decode_tuning`).

Each variant is an op of its own (``hir::attention``, ``hir::attention_fused``,
``hir::small_m_linear`` with the suffixes ``_splitk`` / ``_gemv``, ``hir::swiglu_small_m``), the flags
fixed when the program is planned. Elsewhere (CPU, no Triton, other shapes) the ops are
not used. ``HIR_DECODE_KERNELS``
(read when a program is planned) picks what is used: a comma-separated subset of
:data:`KERNELS` + :data:`MECHANISMS` (default: all), or ``none``.
"""

import importlib.util
import math
import os
import re
from collections.abc import Callable

import torch

from hir.dialect.context import HirError
from hir.interpreter import decode_tuning
from hir.interpreter.decode_ops import (
    ATTENTION,
    DTYPES,
    HEAD_DIMS,
    MAX_ROWS,
    SMALL_M_LINEAR,
    SWIGLU,
    SWIGLU_SMALL_M,
)

KERNELS = ("attention", "linear", "swiglu")
MECHANISMS = tuple("fused-combine split-k gemv norm-residual kernel-pdl inductor-pdl inductor-combo tune-ahead".split())
ENV = "HIR_DECODE_KERNELS"
MIN_CACHE = 128  # key positions from which the split-KV kernel is used
_VTENSOR = re.compile(r"vtensor<\[([^\]]*)\],(\w+)>")


def enabled(kernel: str) -> bool:
    """Whether ``kernel`` (one of :data:`KERNELS` or :data:`MECHANISMS`) is used, by
    ``HIR_DECODE_KERNELS``."""
    value = os.environ.get(ENV)
    if value is None:
        return True
    chosen = {part.strip() for part in value.split(",") if part.strip()}
    unknown = chosen - set(KERNELS) - set(MECHANISMS) - {"none"}
    if unknown:
        raise HirError(
            f"error: {ENV}={value!r}: unknown kernel(s) {', '.join(sorted(unknown))}; "
            f"expected a comma-separated subset of {','.join(KERNELS + MECHANISMS)}, or none"
        )
    return kernel in chosen


def available(device: torch.device) -> bool:
    """Whether the kernels can run on ``device``: CUDA, with Triton installed."""
    return device.type == "cuda" and torch.cuda.is_available() and importlib.util.find_spec("triton") is not None


def tensor_type(type_text: str) -> tuple[list, str] | None:
    """(shape, element type) of a ``!torch.vtensor`` type's text; None for another type or a
    dynamic size."""
    found = _VTENSOR.search(type_text)
    if found is None or "?" in found.group(1):
        return None
    return [int(d) for d in found.group(1).split(",") if d], found.group(2)


def attention_fits(types: list[str], constants: list) -> bool:
    """Whether an ``aten.scaled_dot_product_attention`` with operand types ``types`` (text)
    and plan-time ``constants`` (UNSET-like for run-time values) suits ``hir::attention``."""
    shapes = [tensor_type(t) for t in types[:4]]
    known = [s for s in shapes if s is not None]
    if len(known) < len(shapes):
        return False
    (q, q_type), (k, k_type), (v, v_type), (mask, mask_type) = known
    if len(q) != 4 or len(k) != 4 or len(v) != 4 or len(mask) != 4 or mask_type != "i1":
        return False
    if not (q_type == k_type == v_type and q_type in DTYPES and q[1] == k[1] == v[1] and k[2] == v[2]):
        return False
    if q[3] != k[3] or v[3] != q[3] or q[3] not in HEAD_DIMS or q[2] > MAX_ROWS or k[2] < MIN_CACHE:
        return False
    dropout, is_causal, _, enable_gqa = constants[4:8]
    return dropout == 0.0 and is_causal is False and enable_gqa is False


def swiglu_fits(types: list[str]) -> bool:
    """Whether a ``hir::swiglu`` with operand types ``types`` (text) suits
    ``hir::swiglu_small_m``: static shapes, at most :data:`MAX_ROWS` rows, two 2-D weights of
    one shape and the input's width, bf16/f16."""
    shapes = [tensor_type(t) for t in types[:3]]
    if len(shapes) != 3 or any(s is None for s in shapes):
        return False
    (x, x_type), (gate, gate_type), (up, up_type) = [s for s in shapes if s is not None]
    rows = math.prod(x[:-1]) if len(x) >= 2 else 0
    return (
        gate == up
        and len(gate) == 2
        and gate[1] == x[-1]
        and x_type == gate_type == up_type
        and x_type in DTYPES
        and 0 < rows <= MAX_ROWS
        and min(gate) > 0
    )


def substitute(overload, types: Callable[[], list[str]], constants: Callable[[], list], device: torch.device):
    """The op a kernel segment runs for torch op ``overload`` with operand types ``types()``
    (text) and plan-time ``constants()`` on ``device``: ``hir::attention`` or
    ``hir::swiglu_small_m`` where it fits (module docstring), else ``overload`` (the operands
    are looked at for SDPA and ``hir::swiglu`` only)."""
    if overload is SWIGLU:
        operand_types = types()
        if enabled("swiglu") and available(device) and swiglu_fits(operand_types):
            _tune_ahead_swiglu(operand_types, device)
            return SWIGLU_SMALL_M
        return overload
    if overload is not torch.ops.aten.scaled_dot_product_attention.default or not (
        enabled("attention") and available(device)
    ):
        return overload
    operand_types = types()
    if len(operand_types) == 8 and attention_fits(operand_types, constants()):
        fused = enabled("fused-combine")
        _tune_ahead_attention(operand_types, fused, device)
        return ATTENTION[fused]
    return overload


def small_m_linear_op():
    """The ``hir::small_m_linear`` variant ``HIR_DECODE_KERNELS`` picks (split-K, one-row GEMV)."""
    return SMALL_M_LINEAR[enabled("split-k"), enabled("gemv")]


def tune_ahead_linear(x_shape: tuple, dtype: torch.dtype, w_shape: tuple, device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::small_m_linear`` of an input ``x_shape``
    (``dtype``) and a weight ``w_shape`` on ``device`` tuned ahead (module docstring)."""
    if tune_ahead(device):
        rows, (n, k) = math.prod(x_shape[:-1]), w_shape
        decode_tuning.request(decode_tuning.linear_key(dtype, rows, n, k, enabled("split-k"), enabled("gemv"), device))


def _tune_ahead_attention(operand_types: list[str], fused: bool, device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::attention`` of SDPA operands typed
    ``operand_types`` tuned ahead (module docstring)."""
    q, k, _, mask = [tensor_type(t) for t in operand_types[:4]]
    if tune_ahead(device) and q is not None and k is not None and mask is not None:
        key = decode_tuning.attention_key(DTYPES[q[1]], tuple(q[0]), tuple(k[0]), tuple(mask[0]), fused, device)
        decode_tuning.request(key)


def _tune_ahead_swiglu(operand_types: list[str], device: torch.device) -> None:
    """With ``tune-ahead``: the planned ``hir::swiglu_small_m`` of operands typed
    ``operand_types`` tuned ahead (module docstring)."""
    x, gate = tensor_type(operand_types[0]), tensor_type(operand_types[1])
    if tune_ahead(device) and x is not None and gate is not None:
        (n, k), rows = gate[0], math.prod(x[0][:-1])
        decode_tuning.request(decode_tuning.swiglu_key(DTYPES[x[1]], rows, n, k, device))


def start_tuning(device: torch.device, dtype: torch.dtype) -> None:
    """With ``tune-ahead``, where a model of ``dtype`` on ``device`` may plan decode kernels:
    the tuning child started now, ahead of the plan (:func:`decode_tuning.start`)."""
    if dtype in DTYPES.values() and tune_ahead(device) and available(device):
        decode_tuning.start(device)


def tune_ahead(device: torch.device) -> bool:
    """Whether the decode kernels planned for ``device`` are tuned ahead (``tune-ahead``, a
    CUDA device here)."""
    return enabled("tune-ahead") and device.type == "cuda" and torch.cuda.is_available()


def is_decode_kernel(overload) -> bool:
    """Whether ``overload`` is one of the decode kernels' ops."""
    return overload in ATTENTION.values() or overload in SMALL_M_LINEAR.values() or overload is SWIGLU_SMALL_M


def planned(runtime) -> None:
    """Notes on ``runtime`` (a :class:`hir.interpreter.runtime.Runtime`) that its program
    plans a decode kernel: its regions compile with inductor's PDL (``inductor-pdl``) and combo
    kernels (``inductor-combo``), and its captured graphs launch the decode kernels as
    programmatic dependents (``kernel-pdl``)."""
    runtime.kernel_compile.pdl |= inductor_pdl(runtime.device)
    runtime.kernel_compile.combo |= enabled("inductor-combo") and available(runtime.device)
    runtime.dependent_launches |= runtime.device.type == "cuda" and enabled("kernel-pdl")


def inductor_pdl(device: torch.device) -> bool:
    """Whether a program with decode kernels on ``device`` compiles its regions with inductor's
    programmatic dependent launch (``inductor-pdl``; a torch whose inductor has it, Hopper or
    newer)."""
    if not (device.type == "cuda" and enabled("inductor-pdl") and available(device)):
        return False
    import torch._inductor.config as inductor_config  # inductor loads only when kernels compile (seconds to import)

    return hasattr(inductor_config.triton, "enable_pdl") and torch.cuda.get_device_capability(device)[0] >= 9


def linear_fits(
    x_shape: tuple, x_dtype: torch.dtype, w_shape: tuple, w_contiguous: bool, bias: bool, device: torch.device
) -> bool:
    """Whether ``hir.linear`` of an input ``x_shape`` (``x_dtype``) and weight ``w_shape``
    suits ``hir::small_m_linear`` on ``device``."""
    if (
        bias
        or len(x_shape) < 2
        or len(w_shape) != 2
        or not w_contiguous
        or x_dtype not in (torch.bfloat16, torch.float16)
    ):
        return False
    rows = 1
    for size in x_shape[:-1]:
        rows *= size
    return 0 < rows <= MAX_ROWS and min(w_shape) > 0 and enabled("linear") and available(device)
