// Round trip of every stream op (streams group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @streams
func.func @streams(%i: index) {
  // CHECK: %[[U:.*]] = "hir.get_current_stream"() : () -> !hir.stream
  %user = "hir.get_current_stream"() : () -> !hir.stream
  // CHECK: %[[S:.*]] = "hir.get_stream"(%{{.*}}) : (index) -> !hir.stream
  %s = "hir.get_stream"(%i) : (index) -> !hir.stream
  // CHECK: "hir.set_current_stream"(%[[S]]) : (!hir.stream) -> ()
  "hir.set_current_stream"(%s) : (!hir.stream) -> ()
  // CHECK: "hir.synchronize"(%[[U]]) : (!hir.stream) -> ()
  "hir.synchronize"(%user) : (!hir.stream) -> ()
  return
}
