# lit configuration for hir: FileCheck tests of hir-opt (Dialect/, Transforms/) and hir-run
# (Interpreter/). The tools come from the installed package (see README).
import os
import shutil
import sys

import lit.formats

config.name = "hir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py", "lit_zygote.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

# HIR_GC_STRESS and MALLOC_PERTURB_: scripts/check --gc-stress reaches the tools too.
for var in ("PATH", "PYTHONPATH", "HOME", "TMPDIR", "HIR_GC_STRESS", "MALLOC_PERTURB_"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# The tools next to this interpreter first (the package under test's; and a version
# manager's shim, such as pyenv's, costs each of the ~500 RUN-line calls ~0.08 CPU-s).
config.environment["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), config.environment.get("PATH", "")])
# Interpreter tests run on CPU so results do not depend on the machine.
config.environment["HIR_DEVICE"] = "cpu"
# One intra-op thread per tool process (and rank): the programs are tiny, and lit shares the
# cores with pytest's workers (scripts/check), where idle OpenMP threads spin for work.
config.environment["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")

for tool in ("hir-opt", "hir-run", "hir-import", "filecheck", "torchrun", "torch-mlir-opt"):
    if shutil.which(tool) is None:
        lit_config.fatal(f"'{tool}' is not on PATH: install the package first (see README)")
config.substitutions.append(("FileCheck", "filecheck"))

# hir-run and hir-import through a fork server that imported torch once, hir-opt through one
# that imported hir-opt's modules (test/lit_zygote.py; HIR_LIT_ZYGOTE=0: the installed
# scripts); started once, by the process that loads this file.
sys.path.insert(0, os.path.dirname(__file__))
import lit_zygote  # noqa: E402

if "HIR_LIT_ZYGOTE_BIN" not in os.environ:
    os.environ["HIR_LIT_ZYGOTE_BIN"] = lit_zygote.start(dict(config.environment)) or ""
if os.environ["HIR_LIT_ZYGOTE_BIN"]:
    config.environment["PATH"] = os.environ["HIR_LIT_ZYGOTE_BIN"] + os.pathsep + config.environment["PATH"]

# The IRDL file of the installed hir package (test/Upstream: upstream mlir-opt reading hir IR).
import importlib.util  # noqa: E402

_dialect = importlib.util.find_spec("hir.dialect")
config.substitutions.append(("%hir_irdl", os.path.join(_dialect.submodule_search_locations[0], "hir.irdl.mlir")))
