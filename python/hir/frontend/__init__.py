"""Frontends: programs from PyTorch (``from_torch``)."""

from hir.frontend.torch_import import TorchProgram, from_torch

__all__ = ["TorchProgram", "from_torch"]
