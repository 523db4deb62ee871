"""Rewrite patterns of hir passes on MLIR's drivers (``torch_mlir.rewrite``).

A pattern is a function ``(op, rewriter) -> bool`` rooted on one op kind (by its
``OPERATION_NAME``): a falsy return means it matched and rewrote ``op``. New ops are built at
``rewriter.ip`` (before the root) or at insertion points the pattern names; ops are erased
with ``rewriter.erase_op`` so the greedy driver hears of it. A pass collects its patterns with
a ``populate_*_patterns(patterns, ...)`` function (MLIR's convention), so patterns of several
passes and of a test can share one :class:`PatternSet` and one driver run.

:class:`PatternSet` guards every pattern: MLIR's drivers call them from C++, and a Python
exception must not unwind through those frames (the drivers' cleanups would not run). The
first exception (a :class:`~hir.passes.base.PassFailure` or a bug) is kept, every pattern
then reports "no match", and the driver call raises it once the driver returned.

Drivers, each chosen on purpose by the pass that calls it:

- :meth:`PatternSet.walk`: ``walk_and_apply_patterns``, one post-order visit of every op, no
  folding and no dead-code removal: the IR is exactly what the patterns write. A pattern
  may erase only its root (and ops nested in it), and may not touch ops after it.
- :meth:`PatternSet.apply_greedily` with :func:`exact_greedy_config`: MLIR's worklist
  driver without folding, constant CSE or region simplification, visiting ops top-down (in
  program order), so patterns see ops in the order a forward scan would. It repeats until
  nothing matches and erases ops left unused (which MLIR's greedy driver always does); a
  pattern may erase any op through the rewriter.
"""

from typing import Callable, Optional, Union

from torch_mlir import ir, rewrite

Pattern = Callable[[ir.OpView, rewrite.PatternRewriter], bool]


def exact_greedy_config() -> rewrite.GreedyRewriteConfig:
    """The greedy driver as a plain worklist: top-down, no folding, no constant CSE, no
    region simplification (dead ops still go: the driver always erases them)."""
    config = rewrite.GreedyRewriteConfig()
    config.use_top_down_traversal = True
    config.enable_folding = False
    config.enable_constant_cse = False
    config.region_simplification_level = rewrite.GreedySimplifyRegionLevel.DISABLED
    return config


class PatternSet:
    """A ``RewritePatternSet`` of guarded Python patterns, applied once by a driver."""

    def __init__(self, context: Optional[ir.Context] = None):
        self._set = rewrite.RewritePatternSet(context)
        self._patterns: list[Pattern] = []  # referenced while MLIR may call them
        self.roots: list[str] = []  # the op name each pattern is rooted on, in order
        self._raised: Optional[BaseException] = None

    def add(self, root: Union[str, type], pattern: Pattern, benefit: int = 1) -> None:
        """Add ``pattern`` rooted on ops named ``root`` (an op name or an op class with
        ``OPERATION_NAME``)."""
        name = root if isinstance(root, str) else root.OPERATION_NAME

        def guarded(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
            if self._raised is not None:
                return True
            try:
                return pattern(op, rewriter)
            except BaseException as err:  # noqa: B036  raised again after the driver returned
                self._raised = err
                return True

        self._patterns.append(guarded)
        self.roots.append(name)
        self._set.add(name, guarded, benefit)

    def walk(self, op: Union[ir.Module, ir.Operation]) -> None:
        """Apply the patterns with the walk driver (see the module docstring)."""
        target = op.operation if isinstance(op, ir.Module) else op
        rewrite.walk_and_apply_patterns(target, self._set.freeze())
        self._raise()

    def apply_greedily(self, op: Union[ir.Module, ir.Operation], config: rewrite.GreedyRewriteConfig) -> None:
        """Apply the patterns with the greedy driver configured by ``config`` (stated by the
        caller: :func:`exact_greedy_config`, or folding on to mix with upstream folders)."""
        try:
            rewrite.apply_patterns_and_fold_greedily(op, self._set.freeze(), config)
        except RuntimeError:
            if self._raised is None:  # "failed to converge"; a pattern's error comes first
                raise
        self._raise()

    def _raise(self) -> None:
        if self._raised is not None:
            raised, self._raised = self._raised, None
            raise raised
