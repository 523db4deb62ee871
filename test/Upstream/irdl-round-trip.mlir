// Upstream MLIR reads hir IR through the checked-in IRDL file (dialect/hir.irdl.mlir):
// torch-mlir-opt (the mlir-opt of the pinned wheel) parses every test/Dialect round-trip file,
// verifies it against the IRDL constraints and prints it; hir-opt then reads that output back
// with hir's own verifiers and the file's own CHECK lines match.
//
// Region-free files verify in full upstream:
// RUN: torch-mlir-opt --irdl-file=%hir_irdl %S/../Dialect/comm.mlir | hir-opt | FileCheck %S/../Dialect/comm.mlir
// RUN: torch-mlir-opt --irdl-file=%hir_irdl %S/../Dialect/compute.mlir | hir-opt | FileCheck %S/../Dialect/compute.mlir
// RUN: torch-mlir-opt --irdl-file=%hir_irdl %S/../Dialect/p2p.mlir | hir-opt | FileCheck %S/../Dialect/p2p.mlir
// RUN: torch-mlir-opt --irdl-file=%hir_irdl %S/../Dialect/streams.mlir | hir-opt | FileCheck %S/../Dialect/streams.mlir
//
// Upstream passes run on hir IR (canonicalize folds the arith constants, the hir ops stay):
// RUN: torch-mlir-opt --irdl-file=%hir_irdl --canonicalize %S/../Dialect/streams.mlir | hir-opt | FileCheck %S/../Dialect/streams.mlir
//
// IRDL cannot declare traits, so upstream does not know that hir.yield terminates an hir.for
// body ("block with no terminator"): files with loops parse with the verifier off upstream, and
// hir-opt verifies what comes back.
// RUN: not torch-mlir-opt --irdl-file=%hir_irdl %S/../Dialect/control.mlir 2>&1 | FileCheck --check-prefix=TERMINATOR %s
// TERMINATOR: error: block with no terminator, has "hir.yield"
// RUN: torch-mlir-opt --irdl-file=%hir_irdl --mlir-very-unsafe-disable-verifier-on-parsing %S/../Dialect/control.mlir | hir-opt | FileCheck %S/../Dialect/control.mlir
// RUN: torch-mlir-opt --irdl-file=%hir_irdl --mlir-very-unsafe-disable-verifier-on-parsing %S/../Dialect/views.mlir | hir-opt | FileCheck %S/../Dialect/views.mlir
//
// A lowered program (stream loops, slices, streams, deallocations) survives the same trip:
// RUN: hir-opt %S/../Transforms/stream-lowering.mlir --split-input-file -p 'builtin.module(hir-lower)' > %t.lowered.mlir
// RUN: torch-mlir-opt --irdl-file=%hir_irdl --mlir-very-unsafe-disable-verifier-on-parsing --split-input-file %t.lowered.mlir | hir-opt --split-input-file | FileCheck --check-prefix=LOWERED %s
// LOWERED: "hir.for"
// LOWERED: "hir.get_stream"
// LOWERED: "hir.set_current_stream"
// LOWERED: "hir.alias_select"
// LOWERED: "hir.yield"
//
// The IRDL constraints are checked upstream (a non-index stream index is refused), the Python
// verifiers are not (an allgather with a misplaced split passes upstream, hir-opt refuses it):
// RUN: not torch-mlir-opt --irdl-file=%hir_irdl %S/Inputs/irdl-invalid.mlir 2>&1 | FileCheck --check-prefix=IRDL %s
// IRDL: error: expected base type 'builtin.index' but got 'builtin.integer'
// RUN: torch-mlir-opt --irdl-file=%hir_irdl %S/Inputs/python-verifier-only.mlir | not hir-opt 2>&1 | FileCheck --check-prefix=PYTHON %s
// PYTHON: error: 'hir.allgather' op attribute 'backend' is "mpi"
