// IR printing around passes, timing and statistics come from the one MLIR PassManager that
// runs the pipeline (MLIR's own headers and report), for hir passes and upstream ones alike;
// then the pass list and the IRDL dump.
// RUN: hir-opt %s --pass-pipeline='builtin.module(canonicalize,cse)' --mlir-print-ir-before-all --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck --check-prefix=PRINT %s
// PRINT: // -----// IR Dump Before CanonicalizerPass: canonicalize{{.*}} //----- //
// PRINT: // -----// IR Dump After CanonicalizerPass: canonicalize{{.*}} //----- //
// PRINT: // -----// IR Dump Before CSEPass: cse //----- //
// PRINT: // -----// IR Dump After CSEPass: cse //----- //

// An hir pass (a Python pass in the same PassManager) beside a nested upstream pipeline.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-stream-lowering,func.func(cse))' --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck --check-prefix=HIRPRINT %s
// HIRPRINT:      // -----// IR Dump After StreamLowering: hir-stream-lowering //----- //
// HIRPRINT-NEXT: module {
// HIRPRINT:      "hir.for"
// HIRPRINT:      // -----// IR Dump After CSEPass: cse //----- //
// HIRPRINT-NEXT: func.func @f

// --mlir-print-ir-after=PASS prints after the named passes only (hir or upstream), with
// the timing report still whole; --mlir-print-ir-after-change skips passes that changed nothing.
// RUN: hir-opt %s --hir-stream-lowering --canonicalize --cse --mlir-print-ir-after=cse,hir-stream-lowering --mlir-timing 2>&1 >/dev/null | FileCheck --check-prefix=AFTER %s
// AFTER-NOT:  IR Dump After CanonicalizerPass
// AFTER:      // -----// IR Dump After StreamLowering: hir-stream-lowering //----- //
// AFTER-NOT:  IR Dump After CanonicalizerPass
// AFTER:      // -----// IR Dump After CSEPass: cse //----- //
// AFTER:      Total Execution Time:
// RUN: hir-opt %s --hir-stream-lowering --cse --mlir-print-ir-after-all --mlir-print-ir-after-change --mlir-timing 2>&1 >/dev/null | FileCheck --check-prefix=CHANGE %s
// CHANGE:     IR Dump After StreamLowering
// CHANGE-NOT: IR Dump After CSEPass
// CHANGE:     Total Execution Time:
// RUN: hir-opt %s --hir-stream-lowering --cse --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck --check-prefix=NOCHANGE %s
// NOCHANGE:   IR Dump After CSEPass

// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-stream-lowering,canonicalize)' --mlir-timing 2>&1 >/dev/null | FileCheck --check-prefix=TIME %s
// TIME:      ... Execution time report ...
// TIME:      Total Execution Time:
// TIME:      ----Wall Time----  ----Name----
// TIME-NEXT: StreamLowering
// TIME-NEXT: CanonicalizerPass

// RUN: hir-opt %s --pass-pipeline='builtin.module(cse)' --mlir-pass-statistics 2>&1 >/dev/null | FileCheck --check-prefix=STATS %s
// STATS: ... Pass statistics report ...

// The same through the environment (nvFuser's NVFUSER_DUMP), also for hir.lower from Python.
// RUN: env HIR_DUMP=ir-after-all hir-opt %s --pass-pipeline='builtin.module(cse)' 2>&1 >/dev/null | FileCheck --check-prefix=ENV %s
// ENV: // -----// IR Dump After CSEPass: cse //----- //
// RUN: env HIR_DUMP=timing,statistics hir-opt %s --pass-pipeline='builtin.module(hir-fuse-loops)' 2>&1 >/dev/null | FileCheck --check-prefix=ENVTIME %s
// ENVTIME: ... Pass statistics report ...
// ENVTIME: ... Execution time report ...
// ENVTIME: FuseLoops
// RUN: env HIR_DUMP=bogus not hir-opt %s --pass-pipeline='builtin.module(cse)' 2>&1 | FileCheck --check-prefix=BADENV %s
// BADENV: HIR_DUMP: unknown option(s) bogus

// RUN: hir-opt --list-passes | FileCheck --check-prefix=LIST %s
// LIST: Available Passes:
// LIST: {{^}}  --hir-stream-lowering   {{ *}}-   Lower stream-parallel ops
// LIST-NEXT: {{^}}      chunks=<int>     {{ *}}- default: 0
// LIST: Available Pass Pipelines:
// LIST: {{^}}  --hir-lower    {{ *}}-   hir-insert-reshardings,
// RUN: hir-opt --list-passes | FileCheck --check-prefix=NOPY %s
// NOPY-NOT: Optional
// NOPY-NOT: (int)
// NOPY-NOT: bool

// RUN: hir-opt --emit-irdl | FileCheck --check-prefix=IRDL %s
// IRDL: irdl.dialect @hir
// IRDL: irdl.type @stream
// IRDL: irdl.attribute @shard
// IRDL: irdl.operation @alias_select
// IRDL: irdl.operation @allgather

// RUN: hir-opt %s --mlir-print-debuginfo | FileCheck --check-prefix=LOC %s
// LOC: loc(

func.func @f(%arg0: memref<4xf32>) -> memref<4xf32> {
  %out = memref.alloc() : memref<4xf32>
  "hir.set"(%arg0, %out) {stream_axis = 0 : i64} : (memref<4xf32>, memref<4xf32>) -> ()
  return %out : memref<4xf32>
}
