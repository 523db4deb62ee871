"""``torch.ops.hir.flash_attention`` and ``torch.ops.hir.flash_attention_backward``: SDPA's
flash kernel (forward and backward, no dropout) with a schema of defined tensors only.

ATen's ``_scaled_dot_product_flash_attention`` returns ``cum_seq_q`` / ``cum_seq_k`` as
undefined tensors (for nested inputs only) and its backward takes them back, with the
sequence lengths and the dropout's philox state: a traced training step carries those
undefined tensors from forward to backward, which the FX importer cannot import.
:func:`hir.frontend.fx_rewrites.flash_attention_ops` replaces a dropout-free pair with these
ops, which take and return only what a dense attention's gradient needs (``query``, ``key``,
``value``, the output and its row-wise ``logsumexp``).

On CUDA they run ATen's flash kernels; on the CPU, ATen's CPU flash kernels
(``_scaled_dot_product_flash_attention_for_cpu`` and its backward), so a program holding them
runs (and is tested) anywhere.
"""

import torch

_LIBRARY = torch.library.Library("hir", "FRAGMENT")
_LIBRARY.define(
    "flash_attention(Tensor query, Tensor key, Tensor value, bool "
    "is_causal, *, float? scale=None) -> (Tensor output, Tensor logsumexp)"
)
_LIBRARY.define(
    "flash_attention_backward(Tensor grad_out, Tensor query, Tensor "
    "key, Tensor value, Tensor out, Tensor logsumexp, bool is_causal, "
    "*, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)"
)
aten = torch.ops.aten


def _forward_cuda(query, key, value, is_causal, scale=None):
    out = aten._scaled_dot_product_flash_attention.default(query, key, value, 0.0, is_causal, False, scale=scale)
    return out[0], out[1]


def _backward_cuda(grad_out, query, key, value, out, logsumexp, is_causal, scale=None):
    # no dropout: the philox state is not read (torch passes what the forward returned)
    seed = torch.zeros(2, dtype=torch.uint64, device=query.device)
    offset = torch.zeros((), dtype=torch.uint64, device=query.device)
    return aten._scaled_dot_product_flash_attention_backward.default(
        grad_out,
        query,
        key,
        value,
        out,
        logsumexp,
        None,
        None,
        query.shape[2],
        key.shape[2],
        0.0,
        is_causal,
        seed,
        offset,
        scale=scale,
    )


def _forward_cpu(query, key, value, is_causal, scale=None):
    return aten._scaled_dot_product_flash_attention_for_cpu.default(query, key, value, 0.0, is_causal, scale=scale)


def _backward_cpu(grad_out, query, key, value, out, logsumexp, is_causal, scale=None):
    return aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad_out, query, key, value, out, logsumexp, 0.0, is_causal, scale=scale
    )


def _forward_fake(query, key, value, is_causal, scale=None):
    """As ATen's meta of the flash forward: the output laid out as ``query`` (strides too: a
    compiled region checks them), the float32 ``[batch, heads, rows]`` logsumexp."""
    return torch.empty_like(query), query.new_empty(query.shape[:-1], dtype=torch.float32)


def _backward_fake(grad_out, query, key, value, out, logsumexp, is_causal, scale=None):
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)


_LIBRARY.impl("flash_attention", _forward_cuda, "CUDA")
_LIBRARY.impl("flash_attention_backward", _backward_cuda, "CUDA")
_LIBRARY.impl("flash_attention", _forward_cpu, "CPU")
_LIBRARY.impl("flash_attention_backward", _backward_cpu, "CPU")
torch.library.register_fake("hir::flash_attention", _forward_fake, lib=_LIBRARY)
torch.library.register_fake("hir::flash_attention_backward", _backward_fake, lib=_LIBRARY)
