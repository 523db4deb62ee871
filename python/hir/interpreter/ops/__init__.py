"""Interpreter op handlers, one module per op group: the dialect's groups (``streams``,
``views``, ``control``, ``comm``, ``p2p``, ``compute``, ``optim``) and the upstream ones hir programs
use (``memory`` for memref, ``arith``, ``func``, ``scf``, ``tensors`` for tensor values in kernel segments,
``linalg`` / ``linalg_tensor`` for linalg ops on memrefs / tensors, ``aten`` for torch-mlir's ``torch``
dialect ops in them). Importing this package registers them all (see :mod:`hir.interpreter.registry`)."""

from hir.interpreter.ops import (  # noqa: F401
    arith,
    aten,
    comm,
    compute,
    control,
    func,
    linalg,
    linalg_tensor,
    memory,
    optim,
    p2p,
    scf,
    streams,
    tensors,
    views,
)
