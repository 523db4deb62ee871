"""Passes about buffer lifetimes: ``hir-insert-deallocations`` (free each intermediate after
its last use) and ``hir-hoist-parameter-work`` (work that reads only parameters runs once,
its buffers cached)."""
