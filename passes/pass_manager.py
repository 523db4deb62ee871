"""One MLIR ``PassManager`` per pipeline run. hir passes are Python passes added with
``PassManager.add(callable, name=, argument=, description=)``; upstream elements
(``canonicalize``, ``func.func(cse)``) are added as pipeline text to the same manager. IR
printing, timing, statistics and verify-each are the PassManager's own (mlir-opt's
``--mlir-print-ir-before/after-all``, ``--mlir-timing``, ``--mlir-pass-statistics``,
``--verify-each``); they print to the process's file descriptor 2, which a run captures
when it must hand the text to another stream.

A Python pass reports an error the MLIR way: the :class:`PassFailure` it raises is emitted
as an error diagnostic at its location and the pass signals failure, so the PassManager
stops and ``run`` raises :class:`HirError` with ``file:line:col: error: ...`` lines. Any
other exception (a bug) is kept, the pass signals failure, and the exception is raised
again once the PassManager returned: no Python exception unwinds through MLIR's C++ frames
(their cleanups would not run).
"""

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from hir.dialect.context import HirError, format_diagnostic
from hir.dialect.gc_stress import collect
from hir.outputs import captured_fd2
from hir.passes.base import ModulePass, PassFailure


@dataclass
class Element:
    """One pipeline element: an hir pass instance, or upstream pipeline text."""

    text: str
    hir_pass: ModulePass | None = None


# ``placements``: hir.from_torch lists which placement strategy placed each op (the frontend
# reads it through dumping(), as the PassManager reads the others).
DUMP_OPTIONS = ("ir-before-all", "ir-after-all", "timing", "statistics", "placements")


def dumping(name: str) -> bool:
    """Whether ``HIR_DUMP`` (comma-separated :data:`DUMP_OPTIONS`) asks for ``name``."""
    requested = {n.strip() for n in os.environ.get("HIR_DUMP", "").split(",") if n.strip()}
    unknown = requested - set(DUMP_OPTIONS)
    if unknown:
        raise ValueError(f"HIR_DUMP: unknown option(s) {', '.join(sorted(unknown))} (known: {', '.join(DUMP_OPTIONS)})")
    return name in requested


@dataclass
class Instrumentation:
    """What the PassManager reports (mlir-opt's --mlir-print-ir-*, --mlir-timing,
    --mlir-pass-statistics) and whether it verifies after every pass. ``HIR_DUMP`` (like
    nvFuser's NVFUSER_DUMP) switches the reports on for every pipeline run, e.g.
    ``HIR_DUMP=ir-after-all,timing``; names: ir-before-all, ir-after-all, timing, statistics."""

    print_before_all: bool = field(default_factory=lambda: dumping("ir-before-all"))
    print_after_all: bool = field(default_factory=lambda: dumping("ir-after-all"))
    # mlir-opt's --mlir-print-ir-after=PASS (pass arguments), --mlir-print-ir-after-change
    # and --mlir-elide-elementsattrs-if-larger=N.
    print_after: tuple[str, ...] = ()
    print_after_change: bool = False
    large_elements_limit: int | None = None
    timing: bool = field(default_factory=lambda: dumping("timing"))
    statistics: bool = field(default_factory=lambda: dumping("statistics"))
    # mlir-opt's --verify-each: verify after every pass (False: once, at the end; the
    # Python verifiers of a large module cost about as much as a pass).
    verify_each: bool = True
    out: TextIO = field(default_factory=lambda: sys.stderr)

    def reports(self) -> bool:
        """Whether the PassManager will print anything."""
        return self.print_before_all or self.print_after_all or bool(self.print_after) or self.timing or self.statistics

    def keeps_dump(self, header: str) -> bool:
        """Whether the IR dump under ``header`` (``// -----// IR Dump After Name: argument{...}``)
        was asked for: the PassManager prints after every pass when only some were named."""
        m = _DUMP_HEADER.match(header)
        return not (m and m["when"] == "After" and not self.print_after_all and m["argument"] not in self.print_after)


class PassManagerRun:
    """A pipeline's elements on one MLIR PassManager (:attr:`pass_manager`, which callers
    may instrument further before :meth:`run`). Runs once: the PassManager is released at
    the end of :meth:`run`, which is when MLIR prints its timing and statistics reports."""

    def __init__(self, elements: list[Element], instrumentation: Instrumentation, context: ir.Context):
        self.elements = elements
        self.instrumentation = instrumentation
        self.pass_manager: PassManager | None = PassManager("builtin.module", context)
        self._module: ir.Module | None = None
        self._raised: BaseException | None = None  # a Python pass's exception other than PassFailure
        self._finished = -1  # index of the last hir pass that returned
        for index, element in enumerate(elements):
            if element.hir_pass is None:
                self.pass_manager.add(element.text)
            else:
                hir_pass = element.hir_pass
                self.pass_manager.add(
                    self._python_pass(index, hir_pass),
                    name=type(hir_pass).__name__,
                    argument=hir_pass.name,
                    description=hir_pass.description,
                )
        inst = instrumentation
        if inst.print_before_all or inst.print_after_all or inst.print_after:
            self.pass_manager.enable_ir_printing(
                print_before_all=inst.print_before_all,
                print_after_all=inst.print_after_all or bool(inst.print_after),
                print_after_change=inst.print_after_change,
                large_elements_limit=inst.large_elements_limit,
            )
        if inst.timing:
            self.pass_manager.enable_timing()
        if inst.statistics:
            self.pass_manager.enable_statistics()
        self.pass_manager.enable_verifier(inst.verify_each)

    def _python_pass(self, index: int, hir_pass: ModulePass) -> Callable:
        def run(op: ir.Operation, pass_) -> None:
            module = self._module if self._module is not None and op == self._module.operation else op.opview
            try:
                hir_pass.run(module)
            except PassFailure as failure:
                (failure.location or ir.Location.unknown(op.context)).emit_error(failure.message)
                pass_.signal_pass_failure()
            except BaseException as err:  # noqa: B036  re-raised after the PassManager returned
                self._raised = err
                pass_.signal_pass_failure()
            else:
                self._finished = index
            finally:
                collect()  # under GC stress: a handle the pass kept to an erased op fails here

        return run

    def run(self, module: ir.Module, source_name: str | None = None) -> None:
        """Run the pipeline on ``module`` in place. Errors raise :class:`HirError`
        (``file:line:col: error: ...``, texts parsed from a string reported against
        ``source_name``); a Python pass's own exception is raised as it was."""
        if self.pass_manager is None:
            raise RuntimeError("a PassManagerRun runs once")
        errors: list[str] = []

        def on_diagnostic(diag: "ir.Diagnostic") -> bool:
            if diag.severity != ir.DiagnosticSeverity.ERROR:
                return False  # warnings and remarks go on to the context's other handlers
            errors.append(_format(diag, source_name))
            return True

        failure: ir.MLIRError | None = None
        handler = module.context.attach_diagnostic_handler(on_diagnostic)
        self._module = module
        try:
            with _reports_to(self.instrumentation):
                try:
                    self.pass_manager.run(module.operation)
                except ir.MLIRError as err:
                    failure = err
                finally:
                    self.pass_manager = None  # destroyed here: MLIR prints timing and statistics
        finally:
            self._module = None
            handler.detach()
        if self._raised is not None:
            raised, self._raised = self._raised, None
            raise raised
        if failure is None:
            return
        reported = errors or [_format(d, source_name) for d in failure.error_diagnostics]
        if not reported:
            where = source_name or "<input>"
            raise HirError(
                f"{where}: error: upstream '{self._silent_label()}' failed without a "
                "diagnostic (one of its passes signalled failure and said nothing)"
            )
        raise HirError("\n".join(reported))

    def _silent_label(self) -> str:
        """The upstream elements that ran after the last hir pass that returned, up to the
        next hir pass: one of them failed without a diagnostic."""
        texts = []
        for element in self.elements[self._finished + 1 :]:
            if element.hir_pass is not None:
                if texts:
                    break
                continue
            texts.append(element.text)
        return ",".join(texts)


def build_pass_manager(
    elements: list[Element], instrumentation: Instrumentation | None = None, context: ir.Context | None = None
) -> PassManagerRun:
    """One PassManager for ``elements`` (see :func:`hir.passes.parse_pipeline`), instrumented
    as ``instrumentation`` says, in ``context`` (default: the current one)."""
    context = context or ir.Context.current
    if context is None:
        raise HirError("error: build_pass_manager: no MLIR context (pass one, or call it inside `with ir.Context():`)")
    return PassManagerRun(elements, instrumentation or Instrumentation(), context)


@contextmanager
def _reports_to(inst: Instrumentation) -> Iterator[None]:
    """Hand what the PassManager prints (to descriptor 2) to ``inst.out``."""
    if not inst.reports():
        yield
        return
    try:
        with captured_fd2() as captured:
            yield
    finally:
        inst.out.write(_asked_dumps(captured[0], inst) if inst.print_after else captured[0])
        inst.out.flush()


_DUMP_HEADER = re.compile(r"// -----// IR Dump (?P<when>Before|After) [^:]*: (?P<argument>[\w.-]+)")


def _asked_dumps(text: str, inst: Instrumentation) -> str:
    """``text`` without the IR dumps ``inst`` did not ask for (each runs from its header to
    the next header or report, whose banners start with "===")."""
    kept, keeping = [], True
    for line in text.splitlines(keepends=True):
        if line.startswith("// -----// IR Dump "):
            keeping = inst.keeps_dump(line)
        elif line.startswith("==="):
            keeping = True
        if keeping:
            kept.append(line)
    return "".join(kept)


def _format(diag: "ir.Diagnostic | ir.DiagnosticInfo", source_name: str | None) -> str:
    """``file:line:col: error: ...``; a diagnostic without a location (a pass failure
    about the pipeline, not an op) is reported against the input."""
    text = format_diagnostic(diag, source_name)
    unknown = "loc(unknown): "
    return f"{source_name or '<input>'}: {text[len(unknown) :]}" if text.startswith(unknown) else text
