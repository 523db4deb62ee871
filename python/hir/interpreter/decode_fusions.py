"""A one-row product and its neighbours as one op, and that op's CUDA kernel at decode.

At batch 1 a decoder layer's products each read a weight once, and between them inductor
runs the layer's RMSNorms and residual adds as kernels of their own (a launch and a few us
each, reading and writing a row of a few KB). The import
(:mod:`hir.frontend.fx_fusions`) writes such a product and its neighbours as one op (each
``CompositeImplicitAutograd``: elsewhere it is its torch ops, which a compiled region compiles
as before):

- ``hir::rms_norm_linear(x, norm_weight, weight, eps)``: ``linear(rms_norm(x), weight)``;
- ``hir::rms_norm_swiglu(x, norm_weight, w_gate, w_up, eps)``: ``hir::swiglu(rms_norm(x), ...)``;
- ``hir::linear_residual(x, weight, residual)``: ``residual + linear(x, weight)``;

where ``rms_norm(x) = norm_weight * (x.float() * rsqrt(mean(x.float()**2, -1) + eps)).to(x.dtype)``
(Llama's ``RMSNorm``). Where one of them has a single bf16/f16 row on CUDA with Triton, a plan
runs it as ``hir::<name>_gemv``: the one-row kernel with the norm in its prologue, the gated
product or the residual in its epilogue (:func:`hir.interpreter.triton_one_row.one_row_linear`), one launch.
``HIR_DECODE_KERNELS``' mechanism ``norm-residual`` (:mod:`hir.interpreter.decode_kernels`)
turns both the import's rewrite and the kernels on.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from hir.interpreter import decode_kernels, decode_ops, decode_tuning, dependent_launch

_LIBRARY = torch.library.Library("hir", "FRAGMENT")
_LIBRARY.define("rms_norm_linear(Tensor x, Tensor norm_weight, Tensor weight, float eps) -> Tensor")
_LIBRARY.define("rms_norm_swiglu(Tensor x, Tensor norm_weight, Tensor w_gate, Tensor w_up, float eps) -> Tensor")
_LIBRARY.define("linear_residual(Tensor x, Tensor weight, Tensor residual) -> Tensor")


def rms_norm(x: torch.Tensor, norm_weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama's ``RMSNorm`` of ``x``, op for op as its module computes it."""
    full = x.to(torch.float32)
    return norm_weight * (full * torch.rsqrt(full.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


@torch.library.impl(_LIBRARY, "rms_norm_linear", "CompositeImplicitAutograd")
def _rms_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return F.linear(rms_norm(x, norm_weight, eps), weight)


@torch.library.impl(_LIBRARY, "rms_norm_swiglu", "CompositeImplicitAutograd")
def _rms_norm_swiglu(
    x: torch.Tensor, norm_weight: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, eps: float
) -> torch.Tensor:
    return decode_ops.SWIGLU(rms_norm(x, norm_weight, eps), w_gate, w_up)


@torch.library.impl(_LIBRARY, "linear_residual", "CompositeImplicitAutograd")
def _linear_residual(x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return residual + F.linear(x, weight)


RMS_NORM_LINEAR = torch.ops.hir.rms_norm_linear.default
RMS_NORM_SWIGLU = torch.ops.hir.rms_norm_swiglu.default
LINEAR_RESIDUAL = torch.ops.hir.linear_residual.default


def _one_row(x: torch.Tensor, *weights: torch.Tensor) -> bool:
    """Whether the kernel takes ``x`` and ``weights``: one contiguous bf16/f16 row on CUDA,
    row-major ``[N, K]`` weights of its dtype and width, one shape and layout, within int32
    offsets."""
    first = weights[0]
    return (
        x.is_cuda
        and x.dtype in decode_ops.DTYPES.values()
        and x.numel() == x.shape[-1]
        and x.is_contiguous()
        and all(w.dtype == x.dtype and w.dim() == 2 and w.shape[1] == x.shape[-1] and w.stride(1) == 1 for w in weights)
        and all(w.shape == first.shape and w.stride() == first.stride() for w in weights)
        and decode_ops.int32_offsets(x, *weights)
    )


def _norm_fits(x: torch.Tensor, norm_weight: torch.Tensor) -> bool:
    return norm_weight.dtype == x.dtype and norm_weight.shape == x.shape[-1:] and norm_weight.is_contiguous()


def _variant(composite) -> str:
    """The name the tuning keys give ``composite``'s kernel."""
    return composite.name().removeprefix("hir::")


def _launch(composite, x: torch.Tensor, *weights: torch.Tensor) -> dict:
    """The one-row kernel's launch options for ``composite`` on ``x`` and ``weights`` (as a
    programmatic dependent in a capture: :mod:`hir.interpreter.dependent_launch`), once the
    tuning child (if any) has tuned it."""
    if decode_tuning.waiting():
        n, k = weights[0].shape
        decode_tuning.wait(decode_tuning.fused_key(x.dtype, n, k, _variant(composite), x.device))
    pdl, first = dependent_launch.launch(x.device, *weights)
    return {"pdl": pdl, "weight_first": first}


@torch.library.custom_op("hir::rms_norm_linear_gemv", mutates_args=())
def _rms_norm_linear_gemv(x: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``hir::rms_norm_linear`` through the one-row kernel where it fits."""
    if _one_row(x, weight) and _norm_fits(x, norm_weight):
        from hir.interpreter.triton_one_row import one_row_linear  # triton loads only when a CUDA kernel runs

        launch = _launch(RMS_NORM_LINEAR, x, weight)
        return one_row_linear(x, weight, norm_weight=norm_weight, eps=eps, **launch)
    return _rms_norm_linear(x, norm_weight, weight, eps).contiguous()


@_rms_norm_linear_gemv.register_fake
def _rms_norm_linear_fake(x, norm_weight, weight, eps):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


@torch.library.custom_op("hir::rms_norm_swiglu_gemv", mutates_args=())
def _rms_norm_swiglu_gemv(
    x: torch.Tensor, norm_weight: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, eps: float
) -> torch.Tensor:
    """``hir::rms_norm_swiglu`` through the one-row kernel where it fits."""
    if _one_row(x, w_gate, w_up) and _norm_fits(x, norm_weight):
        from hir.interpreter.triton_one_row import one_row_linear  # triton loads only when a CUDA kernel runs

        launch = _launch(RMS_NORM_SWIGLU, x, w_gate, w_up)
        return one_row_linear(x, w_gate, norm_weight=norm_weight, eps=eps, w_up=w_up, **launch)
    return _rms_norm_swiglu(x, norm_weight, w_gate, w_up, eps).contiguous()


@_rms_norm_swiglu_gemv.register_fake
def _rms_norm_swiglu_fake(x, norm_weight, w_gate, w_up, eps):
    return x.new_empty(*x.shape[:-1], w_gate.shape[0])


@torch.library.custom_op("hir::linear_residual_gemv", mutates_args=())
def _linear_residual_gemv(x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """``hir::linear_residual`` through the one-row kernel where it fits."""
    out_shape = (*x.shape[:-1], weight.shape[0])
    if (
        _one_row(x, weight)
        and residual.dtype == x.dtype
        and tuple(residual.shape) == out_shape
        and residual.is_contiguous()
    ):
        from hir.interpreter.triton_one_row import one_row_linear  # triton loads only when a CUDA kernel runs

        launch = _launch(LINEAR_RESIDUAL, x, weight)
        return one_row_linear(x, weight, residual=residual, **launch)
    return _linear_residual(x, weight, residual).contiguous()


@_linear_residual_gemv.register_fake
def _linear_residual_fake(x, weight, residual):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


# composite -> (its kernel op, the operand index of its product's weight)
_KERNELS = {
    RMS_NORM_LINEAR: (torch.ops.hir.rms_norm_linear_gemv.default, 2),
    RMS_NORM_SWIGLU: (torch.ops.hir.rms_norm_swiglu_gemv.default, 2),
    LINEAR_RESIDUAL: (torch.ops.hir.linear_residual_gemv.default, 1),
}


def fits(overload, types: list[str]) -> bool:
    """Whether ``overload`` (one of the three composite ops) with operand types ``types`` (text)
    suits its kernel: static shapes, one row, bf16/f16 throughout, ``[N, K]`` weights of the
    row's width (one shape for the gated product's two), a ``[K]`` norm weight, a residual of
    the result's shape."""
    _, weight_index = _KERNELS[overload]
    shapes = [decode_kernels.tensor_type(t) for t in types if "vtensor" in t]
    if any(s is None for s in shapes) or len(shapes) < 2:
        return False
    known = [s for s in shapes if s is not None]
    x, x_type = known[0]
    if not x or math.prod(x[:-1]) != 1 or x_type not in decode_ops.DTYPES:
        return False
    if any(t != x_type for _, t in known):
        return False
    weights = known[weight_index : weight_index + (2 if overload is RMS_NORM_SWIGLU else 1)]
    if any(len(w) != 2 or w[1] != x[-1] or w != weights[0][0] or min(w) <= 0 for w, _ in weights):
        return False
    if overload is LINEAR_RESIDUAL:
        return known[2][0] == [*x[:-1], weights[0][0][0]]
    return known[1][0] == [x[-1]]


def substitute(overload, types: Callable[[], list[str]], device: torch.device):
    """The op a kernel segment runs for torch op ``overload`` with operand types ``types()``
    (text) on ``device``: a composite's kernel op where ``norm-residual`` is on and it fits
    (:func:`fits`), else ``overload``."""
    if overload not in _KERNELS or not (decode_kernels.enabled("norm-residual") and decode_kernels.available(device)):
        return overload
    operand_types = types()
    if not fits(overload, operand_types):
        return overload
    kernel, weight_index = _KERNELS[overload]
    if decode_kernels.tune_ahead(device):
        x, weight = (decode_kernels.tensor_type(operand_types[i]) for i in (0, weight_index))
        assert x is not None and weight is not None  # (fits read both)
        n, k = weight[0]
        decode_tuning.request(decode_tuning.fused_key(decode_ops.DTYPES[x[1]], n, k, _variant(overload), device))
    return kernel


def is_decode_kernel(overload) -> bool:
    """Whether ``overload`` is one of the fused kernels' ops."""
    return any(overload is kernel for kernel, _ in _KERNELS.values())
