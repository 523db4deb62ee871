# lit configuration for hir: FileCheck tests of hir-opt (Dialect/, Transforms/) and hir-run
# (Interpreter/). The tools come from the installed package (see README).
import os
import shutil

import lit.formats

config.name = "hir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

# HIR_GC_STRESS and MALLOC_PERTURB_: scripts/check --gc-stress reaches the tools too.
for var in ("PATH", "PYTHONPATH", "HOME", "TMPDIR", "HIR_GC_STRESS", "MALLOC_PERTURB_"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Interpreter tests run on CPU so results do not depend on the machine.
config.environment["HIR_DEVICE"] = "cpu"

for tool in ("hir-opt", "hir-run", "hir-import", "filecheck", "torchrun", "torch-mlir-opt"):
    if shutil.which(tool) is None:
        lit_config.fatal(f"'{tool}' is not on PATH: install the package first (see README)")
config.substitutions.append(("FileCheck", "filecheck"))

# The IRDL file of the installed hir package (test/Upstream: upstream mlir-opt reading hir IR).
import importlib.util  # noqa: E402

_dialect = importlib.util.find_spec("hir.dialect")
config.substitutions.append(("%hir_irdl", os.path.join(_dialect.submodule_search_locations[0], "hir.irdl.mlir")))
