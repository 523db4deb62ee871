"""Rewrite patterns of hir passes on MLIR's drivers (``torch_mlir.rewrite``).

A pattern is a function ``(op, rewriter) -> bool`` rooted on one op kind (by its
``OPERATION_NAME``): a falsy return means it matched and rewrote ``op``. New ops are built at
``rewriter.ip`` (before the root) or at insertion points the pattern names; ops are erased
with ``rewriter.erase_op`` so the driver hears of it. A conversion pattern is a function
``(op, adaptor, converter, rewriter) -> bool`` (MLIR's dialect conversion). A pass collects
its patterns with a ``populate_*_patterns(patterns, ...)`` function (MLIR's convention), so
patterns of several passes and of a test can share one set and one driver run.

:class:`GuardedRewritePatternSet` is MLIR's ``RewritePatternSet`` with every Python pattern
guarded: MLIR's drivers call them from C++, and a Python exception must not unwind through
those frames (the drivers' cleanups would not run: a dialect conversion would be left half
applied, its rollback never run). The first exception (a
:class:`~hir.passes.base.PassFailure` raised with ``raise fail(op, ...)``, or a bug) is
kept, every pattern then reports "no match", and the driver call raises it once the driver
returned with the IR consistent. The set also keeps every callback and type converter
referenced while MLIR may call it.

Drivers, each chosen on purpose by the pass that calls it:

- :meth:`GuardedRewritePatternSet.walk`: ``walk_and_apply_patterns``, one post-order visit
  of every op, no folding and no dead-code removal: the IR is exactly what the patterns
  write. A pattern may erase only its root (and ops nested in it), and may not touch ops
  after it.
- :meth:`GuardedRewritePatternSet.apply_greedily` with :func:`exact_greedy_config`: MLIR's
  worklist driver without folding, constant CSE or region simplification, visiting ops
  top-down (in program order), so patterns see ops in the order a forward scan would. It
  repeats until nothing matches and erases ops left unused (which MLIR's greedy driver
  always does); a pattern may erase any op through the rewriter.
- :meth:`GuardedRewritePatternSet.apply_partial_conversion` with
  :func:`exact_conversion_config`: MLIR's dialect conversion of the conversion patterns
  (``add_conversion``) under a ``ConversionTarget``, never folding.
"""

from collections.abc import Callable

from torch_mlir import ir, rewrite

Pattern = Callable[[ir.OpView, rewrite.PatternRewriter], bool]
ConversionPattern = Callable[[ir.OpView, ir.OpAdaptor, rewrite.TypeConverter, rewrite.ConversionPatternRewriter], bool]


def exact_greedy_config() -> rewrite.GreedyRewriteConfig:
    """The greedy driver as a plain worklist: top-down, no folding, no constant CSE, no
    region simplification (dead ops still go: the driver always erases them)."""
    config = rewrite.GreedyRewriteConfig()
    config.use_top_down_traversal = True
    config.enable_folding = False
    config.enable_constant_cse = False
    config.region_simplification_level = rewrite.GreedySimplifyRegionLevel.DISABLED
    return config


def exact_conversion_config() -> rewrite.ConversionConfig:
    """A dialect conversion that never folds: the IR is what the patterns build."""
    config = rewrite.ConversionConfig()
    config.folding_mode = rewrite.DialectConversionFoldingMode.NEVER
    return config


def _same_type(type_: ir.Type) -> ir.Type:
    return type_


def same_types() -> rewrite.TypeConverter:
    """A ``TypeConverter`` that keeps every type (its callback is a module-level function,
    so it outlives every conversion: MLIR does not own it)."""
    converter = rewrite.TypeConverter()
    converter.add_conversion(_same_type)
    return converter


def replace_without_attribute(op: ir.Operation, name: str, rewriter: rewrite.PatternRewriter) -> ir.Operation:
    """Rewrite ``op`` through ``rewriter`` as itself without the attribute ``name``: a copy
    built at the rewriter's insertion point (before ``op``) drops it, then replaces ``op``
    (the Python rewriter has no in-place modification). The copy keeps the location and
    the regions; it is returned."""
    copy = op.clone(ip=rewriter.ip)
    del copy.attributes[name]
    rewriter.replace_op(op, copy)
    return copy


class GuardedRewritePatternSet:
    """A ``RewritePatternSet`` of guarded Python patterns (see the module docstring)."""

    def __init__(self, context: ir.Context | None = None):
        self._set = rewrite.RewritePatternSet(context)
        self._referenced: list[object] = []  # callbacks and converters MLIR may call: kept alive
        self.roots: list[str] = []  # the op name each pattern is rooted on, in order
        self._raised: BaseException | None = None

    def add(self, root: str | type, pattern: Pattern, benefit: int = 1) -> None:
        """Add ``pattern`` rooted on ops named ``root`` (an op name or an op class with
        ``OPERATION_NAME``), for :meth:`walk` and :meth:`apply_greedily`."""
        self._set.add(self._root(root), self._guard(pattern), benefit)

    def add_conversion(
        self, root: str | type, pattern: ConversionPattern, converter: rewrite.TypeConverter, benefit: int = 1
    ) -> None:
        """Add the conversion ``pattern`` rooted on ops named ``root``, converting types
        with ``converter``, for :meth:`apply_partial_conversion`."""
        self._referenced.append(converter)  # the pattern holds it, but does not own it
        self._set.add_conversion(self._root(root), self._guard(pattern), converter, benefit)

    def walk(self, op: ir.Module | ir.Operation) -> None:
        """Apply the patterns with the walk driver (see the module docstring)."""
        target = op.operation if isinstance(op, ir.Module) else op
        self._drive(lambda: rewrite.walk_and_apply_patterns(target, self._set.freeze()))

    def apply_greedily(self, op: ir.Module | ir.Operation, config: rewrite.GreedyRewriteConfig) -> None:
        """Apply the patterns with the greedy driver configured by ``config`` (stated by the
        caller: :func:`exact_greedy_config`, or folding on to mix with upstream folders)."""
        self._drive(lambda: rewrite.apply_patterns_and_fold_greedily(op, self._set.freeze(), config))

    def apply_partial_conversion(
        self,
        op: ir.Module | ir.Operation,
        target: rewrite.ConversionTarget,
        config: rewrite.ConversionConfig | None = None,
    ) -> None:
        """Apply the conversion patterns with MLIR's partial dialect conversion to
        ``target`` (``config``: :func:`exact_conversion_config` unless given)."""
        operation = op.operation if isinstance(op, ir.Module) else op
        self._drive(
            lambda: rewrite.apply_partial_conversion(
                operation, target, self._set.freeze(), config or exact_conversion_config()
            )
        )

    def _root(self, root: str | type) -> str:
        name = root if isinstance(root, str) else root.OPERATION_NAME
        self.roots.append(name)
        return name

    def _guard(self, pattern: Callable) -> Callable:
        def guarded(op: ir.OpView, *rest: object) -> object:
            if self._raised is not None:
                return True  # the pass failed already: match nothing more
            try:
                return pattern(op, *rest)
            except BaseException as err:  # noqa: B036  raised again after the driver returned
                self._raised = err
                return True

        guarded.__name__ = getattr(pattern, "__name__", "pattern")
        self._referenced.append(guarded)
        return guarded

    def _drive(self, driver: Callable[[], None]) -> None:
        try:
            driver()
        except (RuntimeError, ir.MLIRError):
            # A conversion that a failing pattern left illegal, a greedy run that did not
            # converge: a pattern's own error comes first.
            if self._raised is None:
                raise
        if self._raised is not None:
            raised, self._raised = self._raised, None
            raise raised
