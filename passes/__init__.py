"""hir passes: registered by name in :data:`REGISTRY` (see ``base.py``), run by
:func:`run_pipeline` from textual pipelines that mix in upstream MLIR passes, all on one MLIR
PassManager (:func:`build_pass_manager`)."""

# Importing a pass module registers its pass.
from hir.passes import _all  # noqa: F401
from hir.passes.base import REGISTRY, FunctionPass, ModulePass, PassFailure, disabled, is_disabled, register_pass
from hir.passes.communication._resharding import compute_resharding_reason
from hir.passes.pass_manager import Element, Instrumentation, PassManagerRun, build_pass_manager
from hir.passes.pipeline import PIPELINES, lower, overlap_pipeline, parse_pipeline, run_pipeline

__all__ = [
    "REGISTRY",
    "PIPELINES",
    "FunctionPass",
    "ModulePass",
    "Element",
    "PassManagerRun",
    "build_pass_manager",
    "compute_resharding_reason",
    "PassFailure",
    "Instrumentation",
    "disabled",
    "is_disabled",
    "lower",
    "overlap_pipeline",
    "parse_pipeline",
    "register_pass",
    "run_pipeline",
]
