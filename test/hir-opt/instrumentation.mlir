// IR printing around passes, timing, the pass list and the IRDL dump.
// RUN: hir-opt %s --pass-pipeline='builtin.module(canonicalize,cse)' --mlir-print-ir-before-all --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck --check-prefix=PRINT %s
// PRINT: // -----// IR Dump Before canonicalize //----- //
// PRINT: // -----// IR Dump After canonicalize //----- //
// PRINT: // -----// IR Dump Before cse //----- //
// PRINT: // -----// IR Dump After cse //----- //

// RUN: hir-opt %s --pass-pipeline='builtin.module(canonicalize)' --mlir-timing 2>&1 >/dev/null | FileCheck --check-prefix=TIME %s
// TIME: Execution time report
// TIME: Total Execution Time:
// TIME: canonicalize

// The same through the environment (nvFuser's NVFUSER_DUMP), also for hir.lower from Python.
// RUN: env HIR_DUMP=ir-after-all hir-opt %s --pass-pipeline='builtin.module(cse)' 2>&1 >/dev/null | FileCheck --check-prefix=ENV %s
// ENV: // -----// IR Dump After cse //----- //
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

func.func @f() {
  return
}
