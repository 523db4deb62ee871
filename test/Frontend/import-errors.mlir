// RUN: env HIR_CASE=untraceable not hir-import %S/Inputs/bad_inputs.py 2>&1 | FileCheck %s --check-prefix=TRACE
// RUN: env HIR_CASE=indivisible not hir-import %S/Inputs/bad_inputs.py 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: env HIR_CASE=unknown not hir-import %S/Inputs/bad_inputs.py 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: env HIR_CASE=no-module not hir-import %S/Inputs/bad_inputs.py 2>&1 | FileCheck %s --check-prefix=NOMODULE
// RUN: not hir-import %S/Inputs/missing.py 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not hir-import %S/Inputs/mlp.py -o %t.nofolder/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not hir-import %S/Inputs/mlp.py --nope 2>&1 | FileCheck %s --check-prefix=USAGE
// RUN: echo keep > %t.keep.mlir && env HIR_CASE=unknown not hir-import %S/Inputs/bad_inputs.py -o %t.keep.mlir && FileCheck %s --input-file=%t.keep.mlir --check-prefix=KEEP
// Bad input to hir-import: one clear error line, exit status 1, no traceback.

// TRACE: error: torch.export cannot trace DataDependent: {{.*}}
// TRACE-NOT: Traceback
// TRACE-NOT: def forward
// DIVIDE: error: placement Shard(1) of 'weight': dimension 1 of extent 6 does not divide over 4 devices
// DIVIDE-NOT: Traceback
// UNKNOWN: error: placements name wieght, which are neither state entries nor inputs (input0, ...) nor outputs (output0, ...)
// UNKNOWN-NOT: Traceback
// NOMODULE: bad_inputs.py: error: defines no 'module'
// MISSING: missing.py: error: cannot load:
// OUTPUT: hir-import: error: -o {{.*}}out.mlir: the folder '{{.*}}' does not exist
// USAGE: hir-import: error: unrecognized arguments: --nope
// KEEP: keep
