"""Import ``torch_mlir.ir`` without importing numpy.

``torch_mlir.ir`` imports numpy at module level (~40% of a cold ``hir-opt``) only to define
four attribute builders (``F64/I32/I64/IndexElementsAttr`` from Python lists) whose bodies call
``np.array``; when numpy is missing it skips them. :func:`import_ir` imports ``torch_mlir.ir``
with numpy hidden and registers the same four builders with the numpy import moved into their
bodies, so a run that never builds such an attribute never loads numpy, and one that does
behaves exactly as upstream's.
"""

import sys
from types import ModuleType


def import_ir() -> ModuleType:
    """``torch_mlir.ir``, imported (once) without loading numpy."""
    if "torch_mlir.ir" in sys.modules or "numpy" in sys.modules:
        from torch_mlir import ir  # here: the import is what this function controls

        return ir
    sys.modules["numpy"] = None  # type: ignore[assignment]  # makes `import numpy` raise ImportError
    try:
        from torch_mlir import ir  # with numpy hidden (above)
    finally:
        del sys.modules["numpy"]
    _register_elements_builders(ir)
    return ir


def _register_elements_builders(ir: ModuleType) -> None:
    def builder(dtype_name: str, element_type):
        def build(x, context):
            import numpy as np  # numpy stays off hir's import path (dialect/_lazy_numpy.py)

            return ir.DenseElementsAttr.get(
                np.array(x, dtype=getattr(np, dtype_name)), type=element_type(context), context=context
            )

        return build

    for attr, dtype_name, element_type in (
        ("F64ElementsAttr", "float64", lambda c: ir.F64Type.get(context=c)),
        ("I32ElementsAttr", "int32", lambda c: ir.IntegerType.get_signless(32, context=c)),
        ("I64ElementsAttr", "int64", lambda c: ir.IntegerType.get_signless(64, context=c)),
        ("IndexElementsAttr", "int64", lambda c: ir.IndexType.get(context=c)),
    ):
        ir.register_attribute_builder(attr)(builder(dtype_name, element_type))
