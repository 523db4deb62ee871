// hir ops exist in generic form only. MLIR's parser reports a custom-form op of a dialect
// defined at run time without any diagnostic; hir-opt and hir-run locate it themselves.
// RUN: not hir-opt %s 2>&1 | FileCheck %s
// RUN: not hir-run %s 2>&1 | FileCheck %s
// CHECK: custom-syntax.mlir:10:8: error: 'hir.get_current_stream' is written in custom form; hir ops parse in MLIR's generic form only: "hir.get_current_stream"(operands)
// CHECK-NOT: Traceback

func.func @main() {
  // The generic form would be: %s = "hir.get_current_stream"() : () -> !hir.stream
  %s = hir.get_current_stream : !hir.stream
  return
}
