"""Torch-backed interpreter of hir modules."""
