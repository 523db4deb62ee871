"""Frontends: programs from PyTorch (``from_torch``) and from MLIR's shard dialect annotations
(``shard``: ``add_grid``, ``shard_value``, ``result``)."""

from hir.frontend.torch_import import TorchProgram, from_torch

__all__ = ["TorchProgram", "from_torch"]
