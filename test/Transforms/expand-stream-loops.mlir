// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-expand-stream-loops)' | FileCheck %s

// A join of the pool streams (hir-p2p-pipeline's) leaves the stream form as the plain loop it
// is: the same body, the mark gone.
// CHECK-LABEL: func.func @join
// CHECK:      "hir.for"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: ^bb0(%[[S:.*]]: index):
// CHECK-NEXT:   %[[STREAM:.*]] = "hir.get_stream"(%[[S]])
// CHECK-NEXT:   "hir.synchronize"(%[[STREAM]])
// CHECK-NEXT:   "hir.yield"() : () -> ()
// CHECK-NEXT: }) : (index, index, index) -> ()
// CHECK-NOT:  hir.joins_pool_streams
func.func @join() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 2 : index
  "hir.for"(%c0, %n, %c1) ({
  ^bb0(%s: index):
    %stream = "hir.get_stream"(%s) : (index) -> !hir.stream
    "hir.synchronize"(%stream) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {hir.joins_pool_streams} : (index, index, index) -> ()
  return
}
