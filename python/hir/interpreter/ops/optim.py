"""Handlers of the optim group: a param group's update by torch's own optimizer functions
(``torch.optim.adam.adam``: the fused, foreach or single-tensor implementation, as the op's
``kernel`` says), on the buffers of the op's lists, in place.

Nothing is read back from a device: on CUDA the update runs in torch's ``capturable`` form
(``lr`` a float32 tensor on the device, the bias corrections computed there from the step
counts; the fused kernel reads ``lr`` from device memory), so a CUDA graph captures the op
and replays it with the ``lr`` of each call. On the CPU (host memory: no device to sync with,
no graph) ``lr`` is read as the number torch's CPU kernels take, eager's path bit for bit."""

import torch
from torch.optim.adam import adam
from torch_mlir import ir

from hir.dialect import AdamUpdateOp
from hir.dialect.base import get_str
from hir.dialect.optim import ADAM_CONSTANTS
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls


@register_impls
class OptimImpls:
    @impl(
        AdamUpdateOp, local=False
    )  # elementwise: every rank updates the parts it holds (its lists are unranked views)
    def adam_update(self, c: Compiler, op: ir.OpView) -> Step | None:
        slots = c.uses(op)
        count = (len(slots) - 1) // 5
        params, grads, exp_avgs, exp_avg_sqs, steps = (slots[i * count : (i + 1) * count] for i in range(5))
        lr_slot = slots[5 * count]
        kernel = get_str(op, "kernel")
        decoupled = get_str(op, "kind") == "adamw"
        beta1, beta2, eps, weight_decay = (ir.FloatAttr(op.attributes[k]).value for k in ADAM_CONSTANTS)
        on_cpu = c.runtime.device.type == "cpu"

        def adam_step(env: list) -> None:
            tensors = [env[s] for s in params]
            lr = env[lr_slot]
            with torch.no_grad():
                adam(
                    tensors,
                    [_laid_out_like(env[g], p) for g, p in zip(grads, tensors)],
                    [env[s] for s in exp_avgs],
                    [env[s] for s in exp_avg_sqs],
                    [],
                    [env[s] for s in steps],
                    foreach=kernel == "foreach",
                    fused=kernel == "fused",
                    capturable=not on_cpu,
                    decoupled_weight_decay=decoupled,
                    amsgrad=False,
                    beta1=beta1,
                    beta2=beta2,
                    lr=lr.item() if on_cpu else lr.to(torch.float32),
                    weight_decay=weight_decay,
                    eps=eps,
                    maximize=False,
                )

        return adam_step


def _laid_out_like(grad: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """``grad`` with ``param``'s strides, as autograd lays out an eager ``.grad``: the fused
    kernel reads the tensors of a parameter as one flat array each (a transposed gradient
    would be read wrongly, silently); a copy only where a program's gradient is a strided view."""
    if grad.stride() == param.stride():
        return grad
    return torch.empty_like(param).copy_(grad)
