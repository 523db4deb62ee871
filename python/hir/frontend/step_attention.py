"""How a training step's attention is traced: which SDPA kernels the export may choose, and
transformers' causal mask left out where eager PyTorch leaves it out.

Eager transformers calls SDPA with ``is_causal=True`` and no mask when the attention is plain
causal over the step's own tokens with no padding mask (``masking_utils._ignore_causal_mask_sdpa``),
which lets SDPA dispatch to a flash kernel (grouped-query heads included). Under
``torch.export`` it never skips: the exported program could meet other shapes. A training
step's program is exported for one batch signature and never runs another (another signature
imports another program), so the skip is as right there as in eager: without it the step
carries a materialized ``[batch, 1, seq, seq]`` mask, SDPA takes the memory-efficient kernel
with the key and value heads repeated, and its backward costs several times flash's.
A padding mask that is an input of the step is a traced tensor: transformers keeps the mask
for it either way. :func:`hir.train_step` leaves the mask out on one device; a step placed on
several keeps it.
"""

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def attention_backends(device: torch.device) -> Any:
    """The attention kernels a step on ``device`` may be traced with. On CUDA, SDPA's cuDNN
    form passes its forward's undefined tensors (``cum_seq_q``, ``cum_seq_k``) to its
    backward as tensor arguments, which the FX importer cannot represent; the flash form does
    too, but the export rewrites it into ops without them
    (:mod:`hir.frontend.flash_rewrite`); where flash does not apply, the memory-efficient
    kernel, then the math form."""
    if torch.device(device).type != "cuda":
        return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


@contextlib.contextmanager
def causal_masks_as_eager() -> Iterator[None]:
    """While tracing a step of fixed shapes: transformers decides whether to skip its causal
    mask as it does in eager mode (see the module docstring). Without transformers loaded,
    nothing to do."""
    import sys

    masking = sys.modules.get("transformers.masking_utils")
    original = getattr(masking, "is_torchdynamo_exporting", None)
    if masking is None or original is None:
        yield
        return
    setattr(masking, "is_torchdynamo_exporting", lambda: False)  # noqa: B010 (a module's attribute unknown to the checker)
    try:
        yield
    finally:
        setattr(masking, "is_torchdynamo_exporting", original)  # noqa: B010
