"""Python pattern callbacks under MLIR's rewrite drivers (``torch_mlir.rewrite``).

A Python exception raised in a pattern unwinds through the C++ driver: a dialect conversion
is then left half applied (its rollback never runs: the new ops are in place, the root is
not erased) and the next driver run on the same IR may crash. So a pattern refuses an op by
raising :class:`~hir.passes.base.PassFailure` (``raise fail(op, ...)``) inside
:class:`PatternGuard`: the guard records the first exception, answers "no match" to the
driver (and to every later callback), and :meth:`PatternGuard.finish` raises it once the
driver has returned with the IR consistent.

    guard = PatternGuard()
    patterns = rewrite.RewritePatternSet(module.context)
    patterns.add(SetOp.OPERATION_NAME, guard(lower_set))
    rewrite.walk_and_apply_patterns(module.operation, patterns.freeze())
    return guard.finish()           # whether any pattern matched; raises a recorded failure

The guard also keeps its callbacks referenced until it goes away (a pattern set may not own
them), and counts matches so that ``run`` can tell the pipeline whether the module changed.
"""

from typing import Callable, Optional

PatternFn = Callable[..., object]


class PatternGuard:
    """Wraps pattern callbacks (greedy, walk or conversion signatures alike: the op first)."""

    def __init__(self) -> None:
        self.error: Optional[BaseException] = None
        self.matched = 0
        self._callbacks: list[PatternFn] = []

    def __call__(self, pattern: PatternFn) -> PatternFn:
        def guarded(*args: object) -> object:
            if self.error is not None:
                return True  # the pass failed already: match nothing more
            try:
                unmatched = pattern(*args)
            except Exception as error:  # re-raised by finish(), outside the C++ driver
                self.error = error
                return True
            if not unmatched:
                self.matched += 1
            return unmatched

        guarded.__name__ = getattr(pattern, "__name__", "pattern")
        self._callbacks.append(guarded)
        return guarded

    def finish(self) -> bool:
        """Raise the first exception a pattern raised; else whether any pattern matched."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.matched > 0
