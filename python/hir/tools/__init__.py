"""Command-line tools: hir-opt, hir-run (and its --nproc launcher), hir-demo, hir-import (PyTorch modules to hir)."""
