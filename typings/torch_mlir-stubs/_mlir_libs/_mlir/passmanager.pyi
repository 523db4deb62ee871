from collections.abc import Callable
import enum
from typing import overload

import torch_mlir.ir

class PassDisplayMode(enum.Enum):
    LIST = 0

    PIPELINE = 1

class ExternalPass:
    def signal_pass_failure(self) -> None: ...

class PassManager:
    def __init__(self, anchor_op: str = "any", context: torch_mlir.ir.Context | None = None) -> None: ...
    def enable_ir_printing(
        self,
        print_before_all: bool = False,
        print_after_all: bool = True,
        print_module_scope: bool = False,
        print_after_change: bool = False,
        print_after_failure: bool = False,
        large_elements_limit: int | None = None,
        large_resource_limit: int | None = None,
        enable_debug_info: bool = False,
        print_generic_op_form: bool = False,
        tree_printing_dir_path: str | None = None,
    ) -> None: ...
    def enable_verifier(self, enable: bool) -> None: ...
    def enable_timing(self) -> None: ...
    def enable_statistics(self, displayMode: PassDisplayMode = PassDisplayMode.PIPELINE) -> None: ...
    @staticmethod
    def parse(pipeline: str, context: torch_mlir.ir.Context | None = None) -> PassManager: ...
    @overload
    def add(self, pipeline: str) -> None: ...
    @overload
    def add(
        self,
        run: Callable,
        name: str | None = None,
        argument: str | None = "",
        description: str | None = "",
        op_name: str | None = "",
    ) -> None: ...
    def run(self, operation: torch_mlir.ir._OperationBase) -> None: ...
    def __str__(self) -> str: ...
