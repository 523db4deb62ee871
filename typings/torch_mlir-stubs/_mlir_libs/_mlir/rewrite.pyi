from collections.abc import Callable, Sequence
import enum
from typing import overload

import torch_mlir._mlir_libs._mlir.ir

import torch_mlir._mlir_libs._mlir.ir


class GreedyRewriteStrictness(enum.Enum):
    ANY_OP = 0

    EXISTING_AND_NEW_OPS = 1

    EXISTING_OPS = 2

class GreedySimplifyRegionLevel(enum.Enum):
    DISABLED = 0

    NORMAL = 1

    AGGRESSIVE = 2

class DialectConversionFoldingMode(enum.Enum):
    NEVER = 0

    BEFORE_PATTERNS = 1

    AFTER_PATTERNS = 2

class PatternRewriter:
    @property
    def ip(self) -> torch_mlir._mlir_libs._mlir.ir.InsertionPoint: ...

    @overload
    def replace_op(self, op: torch_mlir._mlir_libs._mlir.ir._OperationBase, new_op: torch_mlir._mlir_libs._mlir.ir._OperationBase) -> None: ...

    @overload
    def replace_op(self, op: torch_mlir._mlir_libs._mlir.ir._OperationBase, values: Sequence[torch_mlir._mlir_libs._mlir.ir.Value]) -> None: ...

    def erase_op(self, op: torch_mlir._mlir_libs._mlir.ir._OperationBase) -> None: ...

class RewritePatternSet:
    def __init__(self, context: torch_mlir._mlir_libs._mlir.ir.Context | None = None) -> None: ...

    def add(self, root: object, fn: Callable, benefit: int = 1) -> None: ...

    def add_conversion(self, root: object, fn: Callable, type_converter: TypeConverter, benefit: int = 1) -> None: ...

    def freeze(self) -> FrozenRewritePatternSet: ...

class ConversionPatternRewriter(PatternRewriter):
    def convert_region_types(self, arg0: torch_mlir._mlir_libs._mlir.ir.Region, arg1: TypeConverter, /) -> None: ...

class ConversionTarget:
    def __init__(self, context: torch_mlir._mlir_libs._mlir.ir.Context | None = None) -> None: ...

    def add_legal_op(self, *ops) -> None: ...

    def add_illegal_op(self, *ops) -> None: ...

    def add_legal_dialect(self, *dialects) -> None: ...

    def add_illegal_dialect(self, *dialects) -> None: ...

class TypeConverter:
    def __init__(self) -> None: ...

    def add_conversion(self, convert: Callable) -> None: ...

    def convert_type(self, type: torch_mlir._mlir_libs._mlir.ir.Type) -> torch_mlir._mlir_libs._mlir.ir.Type | None: ...

class PDLResultList:
    @overload
    def append(self, arg: torch_mlir._mlir_libs._mlir.ir.Value, /) -> None: ...

    @overload
    def append(self, arg: torch_mlir._mlir_libs._mlir.ir.Operation, /) -> None: ...

    @overload
    def append(self, arg: torch_mlir._mlir_libs._mlir.ir.Type, /) -> None: ...

    @overload
    def append(self, arg: torch_mlir._mlir_libs._mlir.ir.Attribute, /) -> None: ...

class PDLModule:
    @overload
    def __init__(self, module: torch_mlir._mlir_libs._mlir.ir.Module) -> None: ...

    @overload
    def __init__(self, module: torch_mlir._mlir_libs._mlir.ir.Module) -> None: ...

    def freeze(self) -> FrozenRewritePatternSet: ...

    def register_rewrite_function(self, arg0: str, arg1: Callable, /) -> None: ...

    def register_constraint_function(self, arg0: str, arg1: Callable, /) -> None: ...

class GreedyRewriteConfig:
    def __init__(self) -> None: ...

    @property
    def max_iterations(self) -> int: ...

    @max_iterations.setter
    def max_iterations(self, arg: int, /) -> None: ...

    @property
    def max_num_rewrites(self) -> int: ...

    @max_num_rewrites.setter
    def max_num_rewrites(self, arg: int, /) -> None: ...

    @property
    def use_top_down_traversal(self) -> bool: ...

    @use_top_down_traversal.setter
    def use_top_down_traversal(self, arg: bool, /) -> None: ...

    @property
    def enable_folding(self) -> bool: ...

    @enable_folding.setter
    def enable_folding(self, arg: bool, /) -> None: ...

    @property
    def strictness(self) -> GreedyRewriteStrictness: ...

    @strictness.setter
    def strictness(self, arg: GreedyRewriteStrictness, /) -> None: ...

    @property
    def region_simplification_level(self) -> GreedySimplifyRegionLevel: ...

    @region_simplification_level.setter
    def region_simplification_level(self, arg: GreedySimplifyRegionLevel, /) -> None: ...

    @property
    def enable_constant_cse(self) -> bool: ...

    @enable_constant_cse.setter
    def enable_constant_cse(self, arg: bool, /) -> None: ...

class ConversionConfig:
    def __init__(self) -> None: ...

    @property
    def folding_mode(self) -> DialectConversionFoldingMode: ...

    @folding_mode.setter
    def folding_mode(self, arg: DialectConversionFoldingMode, /) -> None: ...

    @property
    def build_materializations(self) -> bool: ...

    @build_materializations.setter
    def build_materializations(self, arg: bool, /) -> None: ...

class FrozenRewritePatternSet:
    pass

@overload
def apply_patterns_and_fold_greedily(module: torch_mlir._mlir_libs._mlir.ir.Module, set: FrozenRewritePatternSet, config: GreedyRewriteConfig | None = None) -> None: ...

@overload
def apply_patterns_and_fold_greedily(op: torch_mlir._mlir_libs._mlir.ir._OperationBase, set: FrozenRewritePatternSet, config: GreedyRewriteConfig | None = None) -> None: ...

def walk_and_apply_patterns(op: torch_mlir._mlir_libs._mlir.ir._OperationBase, set: FrozenRewritePatternSet) -> None: ...

def apply_partial_conversion(op: torch_mlir._mlir_libs._mlir.ir._OperationBase, target: ConversionTarget, set: FrozenRewritePatternSet, config: ConversionConfig | None = None) -> None: ...

def apply_full_conversion(op: torch_mlir._mlir_libs._mlir.ir._OperationBase, target: ConversionTarget, set: FrozenRewritePatternSet, config: ConversionConfig | None = None) -> None: ...
