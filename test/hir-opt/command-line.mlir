// mlir-opt's command line: pass flags applied in order (the same as the pipeline text),
// pass options on a flag, --allow-unregistered-dialect, --version.
// RUN: hir-opt --hir-lower --canonicalize %s > %t.flags
// RUN: hir-opt -p 'builtin.module(hir-lower,canonicalize)' %s > %t.pipeline
// RUN: diff %t.flags %t.pipeline
// RUN: FileCheck --check-prefix=LOWERED %s < %t.flags
// LOWERED: "hir.for"
// LOWERED: "hir.alias_select"

// RUN: hir-opt %s --hir-stream-lowering=chunks=2 --cse | FileCheck --check-prefix=CHUNKS %s
// CHUNKS: "hir.alias_chunk"{{.*}}chunks = 2

// RUN: not hir-opt %s --cse -p 'builtin.module(cse)' 2>&1 | FileCheck --check-prefix=BOTH %s
// BOTH: hir-opt: error: --pass-pipeline cannot be combined with pass flags (--cse)
// RUN: not hir-opt %s --hir-lowr 2>&1 | FileCheck --check-prefix=TYPO %s
// TYPO: hir-opt: error: unknown pass or option --hir-lowr; did you mean --hir-lower?
// TYPO-EMPTY:
// RUN: not hir-opt %s --bogus 2>&1 | FileCheck --check-prefix=UNKNOWN %s
// UNKNOWN: usage: hir-opt
// UNKNOWN: hir-opt: error: unrecognized arguments: --bogus

// Options go before or after the input, among pass flags.
// RUN: hir-opt --hir-lower %s --canonicalize -o %t.mixed
// RUN: diff %t.mixed %t.pipeline

// mlir-opt's other printing flags: generic form, elided elements, one thread (always).
// RUN: hir-opt %s --mlir-print-op-generic --mlir-disable-threading | FileCheck --check-prefix=GENERIC %s
// GENERIC: "func.func"() <{
// GENERIC: "memref.alloc"(%{{.*}})
// RUN: hir-opt %S/Inputs/elements.mlir --mlir-elide-elementsattrs-if-larger=2 | FileCheck --check-prefix=ELIDE %s
// ELIDE: dense_resource<__elided__>
// RUN: hir-opt %S/Inputs/elements.mlir | FileCheck --check-prefix=FULL %s
// FULL: dense<[1, 2, 3, 4]>
// RUN: hir-opt --show-dialects | FileCheck --check-prefix=DIALECTS %s
// DIALECTS: Available Dialects: {{.*}}arith, {{.*}}func, {{.*}}hir, {{.*}}memref, {{.*}}scf,

// RUN: not hir-opt %S/Inputs/unregistered.mlir 2>&1 | FileCheck --check-prefix=UNREG %s
// UNREG: unregistered.mlir:3:12: error: operation being parsed with an unregistered dialect. If this is intended, please use -allow-unregistered-dialect
// RUN: hir-opt --allow-unregistered-dialect %S/Inputs/unregistered.mlir | FileCheck --check-prefix=ALLOW %s
// ALLOW: "foo.bar"(%{{.*}}) {answer = 42 : i64} : (index) -> ()

// RUN: hir-opt --version | FileCheck --check-prefix=VERSION %s
// VERSION: hir-opt (hir) {{[0-9]+\.[0-9]+}}
// VERSION-NEXT: torch-mlir {{[0-9]+}}
// VERSION-NEXT: torch {{[0-9]+\.[0-9]+}}

func.func @main(%arg0: memref<?x32xf32>, %arg1: memref<32x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x32xf32>
  %alloc = memref.alloc(%dim) : memref<?x8xf32>
  "hir.matmul"(%arg0, %arg1, %alloc) {stream_axis = 0 : i64} : (memref<?x32xf32>, memref<32x8xf32>, memref<?x8xf32>) -> ()
  return %alloc : memref<?x8xf32>
}
