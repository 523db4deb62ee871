"""Torch-backed interpreter of hir modules (nvFuser's HostIrEvaluator).

    program = hir.interpreter.compile(module, device="cpu", num_streams=4)
    outputs = program([x, y, preallocated_out])     # compiled once, run many times
    outputs = hir.interpreter.run(module, inputs)    # compile + run
    local = hir.interpreter.local_arguments(module, global_tensors, rank)  # this rank's shards

SPMD: every rank of a torch.distributed run executes the same program on its local shards;
ops on buffers of meshes that exclude the rank are skipped. Modules: ``plan`` (compiler and
run loop), ``registry`` (handlers by op class / name prefix), ``program`` (entry, inputs,
outputs, stream pool size), ``runtime`` (device, streams, process group, memory tracking),
``ops/<group>`` (the handlers of each op group), ``backends/`` (process groups, work tokens,
symmetric memory, peer buffers, copy engines), ``buffers`` / ``inputs`` / ``formatting`` /
``graph`` (CUDA graph capture).
"""

from hir.interpreter.program import Program, compile, local_arguments, run

__all__ = ["Program", "compile", "local_arguments", "run"]
