"""A ``TorchDispatchMode`` counting the aten ops dispatched while it is active (the eager
op-count tests of issue 34: copies, clones, allocations per step)."""

import collections

from torch.utils._python_dispatch import TorchDispatchMode


class DispatchCounts(TorchDispatchMode):
    """How often each aten op (by overload packet name: ``copy_``, ``clone``) is dispatched."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    def of(self, names) -> dict:
        """The counts of ``names``."""
        return {name: self.seen[name] for name in names}
