"""The ``cuda`` backend's small all-reduce: one kernel on symmetric memory
(``torch.ops.symm_mem.one_shot_all_reduce_copy_out``) instead of an NCCL call.

The kernel copies this rank's part into its symmetric buffer, waits at a signal-pad barrier
until every peer has written, sums every peer's buffer over NVLink loads into the output, and
meets the peers at a second barrier (nobody overwrites its buffer while a peer still reads
it). For the messages of a decode step (one token's hidden state: a few KB) this is one
short kernel where NCCL's ring costs several of its protocol steps, and it is what
``torch.compile`` does only when a group enables symmetric memory by hand.

Which all-reduce runs it (else the process group, as ``nccl`` would): a sum of float32 /
bfloat16 / float16, its output held by every member, a static local shape of at most
:data:`ONE_SHOT_MAX_BYTES`, the op directly in a function body (an op in a loop body may run
on several pool streams at once, and would share its one buffer). The buffer is made and
rendezvoused when the plan is compiled (every rank compiles the same ops in the same order),
so no rendezvous ever runs inside a CUDA-graph capture, and one buffer per op is reused by
every run.
"""

import math
from collections.abc import Callable

import torch
from torch_mlir.dialects import func

from hir.dialect.base import DYNAMIC, get_str
from hir.interpreter.backends.symmetric import enable_symmetric_memory
from hir.interpreter.backends.work import StreamWork

ONE_SHOT_MAX_BYTES = 1 << 20  # beyond ~1 MiB every rank reading every peer's whole part loses to NCCL's ring
ONE_SHOT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

registrations = 0  # process-wide count of one-shot buffers made (tests check one per op)


def _word_aligned(t: torch.Tensor) -> bool:
    """Whether the kernel can read or write ``t`` in place: contiguous, on a 4-byte boundary."""
    return t.is_contiguous() and t.data_ptr() % 4 == 0


def _in_function_body(op) -> bool:
    parent = op.operation.parent
    return parent is not None and parent.name == func.FuncOp.OPERATION_NAME


def one_shot_shape(o) -> list[int] | None:
    """The local output shape of all-reduce ``o`` (``collective.CommOp``) when it runs as one
    one-shot kernel, else None."""
    spec = o.out_spec
    if get_str(o.op, "reduction") != "sum" or spec.dtype not in ONE_SHOT_DTYPES or not spec.held or o.in_spec.uneven:
        return None
    shape = spec.local_static()
    if DYNAMIC in shape or not _in_function_body(o.op):
        return None
    size = math.prod(shape) * spec.dtype.itemsize
    return shape if 0 < size <= ONE_SHOT_MAX_BYTES and size % 4 == 0 else None  # the kernel moves >= 4-byte words


def allreduce(o) -> Callable[[list], StreamWork] | None:
    """``issue(env)`` running all-reduce ``o`` as one one-shot kernel on the current stream,
    or None (the process group runs it)."""
    global registrations
    import torch.distributed._symmetric_memory as symm_mem  # CUDA symmetric memory loads only where a run uses it

    shape = one_shot_shape(o)
    if shape is None:
        return None
    axis, inp, out = o.attr("axis"), o.inp, o.out
    enable_symmetric_memory(o.group)
    numel = math.prod(shape)
    buffer = symm_mem.empty(numel, dtype=o.out_spec.dtype, device=o.c.runtime.device)
    symm_mem.rendezvous(buffer, o.group.group_name)
    registrations += 1
    name = o.group.group_name
    kernel = torch.ops.symm_mem.one_shot_all_reduce_copy_out

    def issue(env: list) -> StreamWork:
        x, target = env[inp], env[out]
        # this rank's part: the reduced axis holds one local block (else sum the blocks here)
        part = x.select(axis, 0) if x.shape[axis] == 1 else torch.sum(x, axis)
        direct = _word_aligned(target)
        flat = target.view(-1) if direct else torch.empty(numel, dtype=target.dtype, device=target.device)
        kernel(
            buffer,
            (part if _word_aligned(part) else part.clone(memory_format=torch.contiguous_format)).view(-1),
            "sum",
            name,
            flat,
        )
        if not direct:
            target.copy_(flat.view(target.shape))
        return StreamWork()

    return issue
