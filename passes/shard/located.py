"""Located failures from rewrite patterns: a pattern callback runs inside MLIR's driver, which
a Python exception must not unwind. :class:`FirstFailure` keeps the first
:class:`~hir.passes.base.PassFailure` a callback raised; every callback then declines to
match, and the pass re-raises the failure (``file:line:col: error: ...``) once the driver
has returned."""

from typing import Callable, Optional

from torch_mlir import ir

from hir.passes.base import PassFailure


class FirstFailure:
    def __init__(self) -> None:
        self.failure: Optional[PassFailure] = None

    def run(self, rewrite: Callable[[], None]) -> bool:
        """Run ``rewrite()`` unless a failure is kept already; True when it (or an earlier
        callback) failed: the callback then declines to match."""
        if self.failure is None:
            try:
                rewrite()
            except PassFailure as err:
                self.failure = err
        return self.failure is not None

    def pattern(self, rewrite: Callable[[ir.Operation], None]) -> Callable:
        """A ``(op, rewriter)`` pattern callback running ``rewrite(op)``."""
        return lambda op, rewriter: self.run(lambda: rewrite(op.operation))

    def check(self) -> None:
        """Raise the failure kept, if any."""
        if self.failure is not None:
            raise self.failure
