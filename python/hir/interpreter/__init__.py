"""Torch-backed interpreter of hir modules (nvFuser's HostIrEvaluator).

    program = hir.interpreter.compile(module, device="cpu", num_streams=4)
    outputs = program([x, y, preallocated_out])     # compiled once, run many times
    outputs = hir.interpreter.run(module, inputs)    # compile + run

SPMD: every rank of a torch.distributed run executes the same program on its local shards;
ops on buffers of meshes that exclude the rank are skipped. Modules: ``plan`` (compiler and
run loop), ``program`` (entry, inputs, outputs), ``arith`` / ``memory`` / ``compute`` /
``control`` / ``streams`` / ``comm`` / ``tensors`` / ``aten`` (op handlers; ``aten``
runs torch-mlir ``torch`` dialect ops in kernel segments), ``distributed`` (process groups),
``launch`` (``hir-run --nproc``).
"""

from hir.interpreter.program import Program, compile, run

__all__ = ["Program", "compile", "run"]
