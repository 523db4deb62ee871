"""Frontends: ways into hir from other IRs (``shard``: MLIR's shard dialect annotations)."""
