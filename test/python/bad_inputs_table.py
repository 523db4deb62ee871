"""The bad-input table of test_bad_inputs.py: what a new user gets wrong, and what hir must say.

Each CLI case is ``(id, tool, argv, env, rc, fragments)``: the tool's ``main(argv)`` run in the
folder of :data:`FILES` with ``env`` added must return ``rc``, print every fragment on stderr
and no traceback, and leave every file of the folder as it was. Each API case is
``(id, call, fragments)``: ``call(folder)`` must raise :class:`hir.HirError` whose message holds
every fragment and names the caller's line (the table's line that called into hir)."""

SHARD2 = "#hir.shard<array<i64: 0, 1>, 0 : i64>"
SHARD3 = "#hir.shard<array<i64: 0, 1, 2>, 0 : i64>"

ADD = """func.func @main(%a: memref<4x4xf32>, %n: index) -> memref<4x4xf32> {
  %o = memref.alloc() : memref<4x4xf32>
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  return %o : memref<4x4xf32>
}
"""


def _shard_arg(shape: str, space: str) -> str:
    return f"""func.func @main(%a: memref<{shape}xf32, {space}>) {{
  return
}}
"""


def _nest(levels: int) -> str:
    loops = "".join(f'"hir.for"(%c0, %c1, %c1) ({{\n^bb0(%i{k}: index):\n' for k in range(levels))
    ends = '"hir.yield"() : () -> ()\n}) : (index, index, index) -> ()\n' * levels
    return (f"func.func @main() {{\n%c0 = arith.constant 0 : index\n"
            f"%c1 = arith.constant 1 : index\n{loops}{ends}return\n}}\n")


FILES = {
    "p.mlir": ADD,
    "out.mlir": "// an existing output\n",
    "out.pt": "an existing output\n",
    "x.pt": None,  # torch.save(torch.ones(4, 4)), written by the test
    "text.pt": "not a torch file\n",
    "text.npy": "not a npy file\n",
    "syntax.mlir": "func.func @main( {\n",
    "custom.mlir": "func.func @main() {\n  hir.yield\n  return\n}\n",
    "custom_first.mlir": "func.func @main() { hir.yield }\n",
    "custom_value.mlir": "func.func @main(%a: memref<2xf32> {hir.parameter}) {\n  "
                         "%s = hir.get_current_stream : !hir.stream\n  return\n}\n",
    "unknown_op.mlir": 'func.func @main() {\n  "hir.bogus"() : () -> ()\n  return\n}\n',
    "undef.mlir": "func.func @main() -> index {\n  return %x : index\n}\n",
    "badtype.mlir": "func.func @main(%a: memref<4xbogus>) {\n  return\n}\n",
    "empty.mlir": "",
    "nonutf8.mlir": None,  # bytes, written by the test
    "deep.mlir": _nest(600),
    "deep_parens.mlir": "func.func @main() {\n  %0 = arith.constant " + "(" * 10000 + "1" + ")" * 10000 + " : index\n  return\n}\n",
    "deep_types.mlir": "func.func @main(%a: " + "memref<" * 10000 + "f32" + ">" * 10000 + ") {\n  return\n}\n",
    "uneven.mlir": _shard_arg("5x4", SHARD2),
    "uneven_alloc.mlir": 'func.func @main() {\n  %o = memref.alloc() : memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>\n  return\n}\n',
    "empty_mesh.mlir": _shard_arg("4x4", "#hir.shard<array<i64>, 0 : i64>"),
    "dup_mesh.mlir": _shard_arg("4x4", "#hir.shard<array<i64: 0, 0>, 0 : i64>"),
    "neg_mesh.mlir": _shard_arg("4x4", "#hir.shard<array<i64: -1, 0>, 0 : i64>"),
    "axis_range.mlir": _shard_arg("4x4", "#hir.shard<array<i64: 0, 1>, 2 : i64>"),
    "axis_neg.mlir": _shard_arg("4x4", "#hir.shard<array<i64: 0, 1>, -2 : i64>"),
    "two_axes.mlir": _shard_arg("6x4", "#hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>"),
    "splits_count.mlir": _shard_arg("4x4", "#hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0>>"),
    "mesh_1d_dense.mlir": _shard_arg("4x4", "#hir.shard<dense<[0, 1]> : tensor<2xi64>, array<i64: 0>>"),
    "space.mlir": _shard_arg("4x4", "3"),
    "wide.mlir": f"""func.func @main(%a: memref<12x4xf32, {SHARD3}>) -> memref<12x4xf32, {SHARD3}> {{
  return %a : memref<12x4xf32, {SHARD3}>
}}
""",
    "reshard.mlir": f"""func.func @main(%a: memref<4x4xf32, {SHARD2}>) -> memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {{
  %o = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.set"(%a, %o) : (memref<4x4xf32, {SHARD2}>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %o : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}}
""",
    "two_funcs.mlir": "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n",
    "runtime.mlir": "func.func @main(%n: index) -> memref<?xf32> {\n  %o = "
                    "memref.alloc(%n) : memref<?xf32>\n  return %o : memref<?xf32>\n}\n",
    "dyn.mlir": "func.func @main(%a: memref<?x4xf32>) -> memref<?x4xf32> {\n  return %a : memref<?x4xf32>\n}\n",
    "flag.mlir": "func.func @main(%f: i1) {\n  return\n}\n",
    "bad_view.mlir": """func.func @main(%a: memref<5x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = "hir.alias_chunk"(%a, %c0) {axis = 0 : i64, chunks = 2 : i64} : (memref<5x4xf32>, index) -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  return
}
""",
    "m.py": "import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args = (torch.ones(3, 4),)\n",
    "raises.py": "raise RuntimeError('boom in the user file')\n",
    "syntax.py": "def broken(:\n",
    "nomodule.py": "example_args = ()\n",
    "noargs.py": "import torch\nmodule = torch.nn.Linear(4, 2)\n",
    "notmodule.py": "import torch\nmodule = 42\nexample_args = (torch.ones(2),)\n",
    "intarg.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x, n):\n"
                 "        return x * n\nmodule = M()\nexample_args = (torch.ones(4), 3)\n",
    "nonzero.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n      "
                  "  return torch.nonzero(x)\nmodule = M()\nexample_args = (torch.ones(4),)\n",
    "wrongshape.py": "import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args = (torch.ones(3, 5),)\n",
    "badplacements.py": "import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args "
                        "= (torch.ones(3, 4),)\nmesh = [0, 1]\nplacements = 5\n",
    "badmesh.py": "import torch\nmodule = torch.nn.Linear(4, 2)\nexample_args "
                  "= (torch.ones(3, 4),)\nmesh = 'ab'\nplacements = {}\n",
    "unknown_placement.py": "import torch\nfrom torch.distributed.tensor import Shard\nmodule = torch.nn.Linear(4, "
                            "2)\nexample_args = (torch.ones(3, 4),)\nmesh = [0, 1]\nplacements = {'nope': Shard(0)}\n",
}

NOT_FOUND = "cannot read"

OPT = [
    ("opt-missing-file", ["nope.mlir"], {}, 1, ["nope.mlir: error: cannot read"]),
    ("opt-syntax", ["syntax.mlir"], {}, 1, ["syntax.mlir:1:"]),
    ("opt-custom-form", ["custom.mlir"], {}, 1, ["custom.mlir:2:3: error: 'hir.yield' is written in custom form"]),
    ("opt-custom-form-first-line", ["custom_first.mlir"], {}, 1, ["custom_first.mlir:1:21: error: 'hir.yield' is written in custom form"]),
    ("opt-custom-form-after-value", ["custom_value.mlir"], {}, 1, ["custom_value.mlir:2:8: error: 'hir.get_current_stream' is written in custom form"]),
    ("opt-unknown-op", ["unknown_op.mlir"], {}, 1, ["unknown_op.mlir:2:3: error:", "hir.bogus"]),
    ("opt-undefined-value", ["undef.mlir"], {}, 1, ["undef.mlir:2:10: error: use of undeclared SSA value"]),
    ("opt-bad-type", ["badtype.mlir"], {}, 1, ["badtype.mlir:1:"]),
    ("opt-non-utf8", ["nonutf8.mlir"], {}, 1, ["nonutf8.mlir:2:13: error: unexpected character"]),
    ("opt-deep-regions", ["deep.mlir"], {}, 1, ["deep.mlir:", "nesting deeper than 512 levels"]),
    ("opt-deep-parens", ["deep_parens.mlir"], {}, 1, ["deep_parens.mlir:2:", "nesting deeper than 512 levels"]),
    ("opt-deep-types", ["deep_types.mlir"], {}, 1, ["deep_types.mlir:1:", "nesting deeper than 512 levels"]),
    ("opt-deep-regions-o", ["deep.mlir", "-o", "out.mlir"], {}, 1, ["nesting deeper than"]),
    ("opt-uneven-shard", ["uneven.mlir"], {}, 1, ["uneven.mlir:1:17: error: argument #0 of 'func.func': "
                                                  "axis 0 of extent 5 does not split evenly over 2 devices"]),
    ("opt-uneven-alloc", ["uneven_alloc.mlir"], {}, 1, ["uneven_alloc.mlir:2:8: error: result #0 of 'memref.alloc': axis 1 of extent 3"]),
    ("opt-empty-mesh", ["empty_mesh.mlir"], {}, 1, ["empty_mesh.mlir:1:17: error:", "the device mesh is empty"]),
    ("opt-duplicate-device", ["dup_mesh.mlir"], {}, 1, ["dup_mesh.mlir:1:17: error:", "distinct non-negative device ids"]),
    ("opt-negative-device", ["neg_mesh.mlir"], {}, 1, ["neg_mesh.mlir:1:17: error:", "distinct non-negative device ids"]),
    ("opt-shard-axis-range", ["axis_range.mlir"], {}, 1, ["axis_range.mlir:1:17: error:", "shard axis 2 is out of range for rank 2"]),
    ("opt-shard-axis-negative", ["axis_neg.mlir"], {}, 1, ["axis_neg.mlir:1:17: error:", "shard axis -2 is out of range"]),
    ("opt-two-mesh-axes", ["two_axes.mlir"], {}, 1, ["two_axes.mlir:1:17: error:", "axis 0 of extent 6 does not split evenly over 4 devices"]),
    ("opt-splits-count", ["splits_count.mlir"], {}, 1, ["splits_count.mlir:1:17: error:", "needs 2 splits (one per mesh axis)"]),
    ("opt-1d-dense-mesh", ["mesh_1d_dense.mlir"], {}, 1, ["mesh_1d_dense.mlir:1:17: error:", "write a 1-D mesh as"]),
    ("opt-memory-space", ["space.mlir"], {}, 1, ["space.mlir:1:17: error:", "hir buffers use #hir.shard"]),
    ("opt-bad-view", ["bad_view.mlir"], {}, 1, ["bad_view.mlir:3:8: error:", "does not divide into 2 chunks"]),
    ("opt-unknown-pass", ["p.mlir", "-p", "builtin.module(hir-bogus)"], {}, 1, ["hir-opt: error:", "hir-bogus"]),
    ("opt-nested-hir-pass", ["p.mlir", "-p", "builtin.module(func.func(hir-lower))"], {}, 1, ["'hir-lower' is a module-level hir pass", "not nested in 'func.func(...)'"]),
    ("opt-nested-hir-pipeline", ["p.mlir", "-p", "func.func(hir-stream-lowering)"], {}, 1, ["'hir-stream-lowering' is a module-level hir pass"]),
    ("opt-bad-pass-option", ["p.mlir", "-p", "builtin.module(hir-stream-lowering{bogus=1})"], {}, 1, ["hir-opt: error:", "bogus"]),
    ("opt-unclosed-option", ["p.mlir", "-p", "builtin.module(hir-stream-lowering{num-streams=2)"], {}, 1, ["hir-opt: error:"]),
    ("opt-pipeline-options", ["p.mlir", "-p", "builtin.module(hir-lower{x=1})"], {}, 1, ["pipeline 'hir-lower' takes no options"]),
    ("opt-unbalanced-pipeline", ["p.mlir", "-p", "builtin.module(canonicalize"], {}, 1, ["hir-opt: error:"]),
    ("opt-upstream-typo", ["p.mlir", "-p", "builtin.module(canonicalise)"], {}, 1, ["hir-opt: error:", "canonicalise"]),
    ("opt-disable-bogus", ["p.mlir", "-p", "builtin.module(cse)"], {"HIR_DISABLE_PASSES": "bogus"}, 1, ["$HIR_DISABLE_PASSES: no hir pass named bogus"]),
    ("opt-disable-typo", ["p.mlir", "-p", "hir-lower"], {"HIR_DISABLE_PASSES": "hir-stream-lowering,hir-fuse-loop"}, 1, ["$HIR_DISABLE_PASSES: no hir pass named hir-fuse-loop"]),
    ("opt-dump-bogus", ["p.mlir", "-p", "builtin.module(cse)"], {"HIR_DUMP": "everything"}, 1, ["HIR_DUMP: unknown option(s) everything"]),
    ("opt-out-missing-folder", ["p.mlir", "-o", "nodir/out.mlir"], {}, 1, ["-o nodir/out.mlir", "'nodir' does not exist"]),
    ("opt-out-is-folder", ["p.mlir", "-o", "sub"], {}, 1, ["-o sub: is a folder"]),
    ("opt-out-is-input", ["p.mlir", "-o", "p.mlir"], {}, 1, ["-o p.mlir: is also an input of this run"]),
    ("opt-out-is-input-dotted", ["p.mlir", "-o", "./sub/../p.mlir"], {}, 1, ["is also an input of this run"]),
    ("opt-failure-keeps-output", ["syntax.mlir", "-o", "out.mlir"], {}, 1, ["syntax.mlir:1:"]),
    ("opt-verify-each-value", ["p.mlir", "--verify-each", "maybe"], {}, 1, ["argument --verify-each"]),
    ("opt-unknown-flag", ["p.mlir", "--bogus"], {}, 1, ["unrecognized arguments: --bogus"]),
    ("opt-two-inputs", ["p.mlir", "out.mlir"], {}, 1, ["unrecognized arguments: out.mlir"]),
    ("opt-split-error-chunk", ["split.mlir", "--split-input-file"], {}, 1, ["split.mlir:5:"]),
    ("opt-verify-diagnostics-mismatch", ["expect.mlir", "--verify-diagnostics"], {}, 1, ["expect.mlir:"]),
]
FILES["weighted.mlir"] = """module attributes {hir.weights = "none.safetensors"} {
  func.func @main(%w: memref<4xf32> {hir.parameter, hir.weight = "w"}, %x: memref<4xf32>) {
    return
  }
}
"""
FILES["split.mlir"] = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b( {\n"
FILES["expect.mlir"] = "// expected-error@+1 {{this message is not the one}}\n" + FILES["uneven.mlir"]

RUN = [
    ("run-missing-file", ["nope.mlir"], {}, 1, ["nope.mlir: error: cannot read"]),
    ("run-syntax", ["syntax.mlir"], {}, 1, ["syntax.mlir:1:"]),
    ("run-non-utf8", ["nonutf8.mlir"], {}, 1, ["nonutf8.mlir:2:13: error: unexpected character"]),
    ("run-deep", ["deep.mlir"], {}, 1, ["deep.mlir:", "nesting deeper than 512 levels"]),
    ("run-uneven-shard", ["uneven.mlir"], {}, 1, ["uneven.mlir:1:17: error: argument #0 of 'func.func': axis 0 of extent 5 does not split evenly"]),
    ("run-mesh-wider-than-world", ["wide.mlir", "ones"], {}, 1, ["wide.mlir:1:17: error: argument #0 of 'func.func' is "
                                                                 "placed on devices [0, 1, 2] but the run has 1 rank(s)"]),
    ("run-float-for-index", ["p.mlir", "random", "1.5"], {}, 1, ["argument #1 (index)", "'1.5' is not an integer"]),
    ("run-text-for-index", ["p.mlir", "random", "abc"], {}, 1, ["argument #1 (index)", "'abc' is not an integer"]),
    ("run-generator-for-index", ["p.mlir", "random", "zeros"], {}, 1, ["argument #1 (index) is a scalar"]),
    ("run-bad-flag-value", ["flag.mlir", "maybe"], {}, 1, ["argument #0 (i1)", "'maybe' is not a flag"]),
    ("run-too-many-inputs", ["p.mlir", "random", "1", "ones"], {}, 1, ["@main"]),
    ("run-wrong-shape", ["p.mlir", "random:3x4", "1"], {}, 1, ["p.mlir:1:1: error: @main argument #0 (memref<4x4xf32>): shape [3, 4] does not fit"]),
    ("run-negative-shape", ["dyn.mlir", "random:-1x4"], {}, 1, ["argument #0"]),
    ("run-dynamic-without-shape", ["dyn.mlir", "random"], {}, 1, ["argument #0", "dynamic"]),
    ("run-huge-random", ["dyn.mlir", "random:100000000000x4"], {}, 1, ["argument #0 (memref<?x4xf32>): cannot create 'random:100000000000x4'"]),
    ("run-huge-zeros", ["dyn.mlir", "zeros:100000000000x4"], {}, 1, ["argument #0 (memref<?x4xf32>): cannot create 'zeros:100000000000x4'"]),
    ("run-bad-generator", ["p.mlir", "gaussian", "1"], {}, 1, ["argument #0", "gaussian"]),
    ("run-missing-pt", ["p.mlir", "missing.pt", "1"], {}, 1, ["argument #0", "missing.pt"]),
    ("run-text-as-pt", ["p.mlir", "text.pt", "1"], {}, 1, ["argument #0", "'text.pt' is not a tensor file", "torch.save (FILE.pt) or numpy.save (FILE.npy)"]),
    ("run-text-as-npy", ["p.mlir", "text.npy", "1"], {}, 1, ["argument #0", "'text.npy' is not a .npy file"]),
    ("run-bad-assignment", ["p.mlir", "7=ones"], {}, 1, ["7"]),
    ("run-runtime-negative-alloc", ["runtime.mlir", "0=-1"], {}, 1, ["runtime.mlir:2:", "negative"]),
    ("run-runtime-failure-keeps-save", ["runtime.mlir", "0=-1", "--save", "out.pt"], {}, 1, ["runtime.mlir:2:"]),
    ("run-entry-missing", ["p.mlir", "--entry", "nope"], {}, 1, ["no function @nope"]),
    ("run-entry-ambiguous", ["two_funcs.mlir"], {}, 1, ["cannot pick the entry function", "hir-run --entry NAME"]),
    ("run-resharding-unlowered", ["reshard.mlir", "ones"], {"HIR_LAUNCHED": "1", "WORLD_SIZE": "2", "RANK": "0"}, 1,
     ["reshard.mlir:3:3: error: 'hir.set' is resharding (reads "
      "operand #0 split along axis 0, the output needs it replicated)", "hir-run --lower"]),
    ("run-save-is-program", ["p.mlir", "random", "1", "--save", "p.mlir"], {}, 1, ["--save p.mlir: is also an input of this run"]),
    ("run-trace-is-program", ["p.mlir", "random", "1", "--trace", "p.mlir"], {}, 1, ["--trace p.mlir: is also an input of this run"]),
    ("run-save-is-input", ["p.mlir", "x.pt", "1", "--save", "x.pt"], {}, 1, ["--save x.pt: is also an input of this run (x.pt)"]),
    ("run-save-is-assigned-input", ["p.mlir", "0=x.pt", "1", "--save", "x.pt"], {}, 1, ["--save x.pt: is also an input of this run"]),
    ("run-save-missing-folder", ["p.mlir", "random", "1", "--save", "nodir/o.pt"], {}, 1, ["--save nodir/o.pt", "'nodir' does not exist"]),
    ("run-save-folder", ["p.mlir", "random", "1", "--save", "sub"], {}, 1, ["--save sub: is a folder"]),
    ("run-trace-folder", ["p.mlir", "random", "1", "--trace", "sub"], {}, 1, ["--trace sub: is a folder"]),
    ("run-nproc-huge", ["p.mlir", "--nproc", "1000000"], {}, 1, ["--nproc 1000000: more ranks than this run may start", "--max-nproc N raises the limit"]),
    ("run-nproc-over-max", ["p.mlir", "--nproc", "3", "--max-nproc", "2"], {}, 1, ["--nproc 3: more ranks than this run may start (at most 2: --max-nproc 2)"]),
    ("run-nproc-zero", ["p.mlir", "--nproc", "0"], {}, 1, ["argument --nproc: must be >= 1"]),
    ("run-nproc-text", ["p.mlir", "--nproc", "two"], {}, 1, ["argument --nproc"]),
    ("run-max-nproc-zero", ["p.mlir", "--max-nproc", "0"], {}, 1, ["argument --max-nproc: must be >= 1"]),
    ("run-timeout-alone", ["p.mlir", "--timeout", "5"], {}, 1, ["--timeout applies to --nproc runs only"]),
    ("run-timeout-zero", ["p.mlir", "--timeout", "0", "--nproc", "1"], {}, 1, ["argument --timeout: must be > 0"]),
    ("run-num-streams-zero", ["p.mlir", "--num-streams", "0"], {}, 1, ["argument --num-streams: must be >= 1"]),
    ("run-warmup-negative", ["p.mlir", "--warmup", "-1"], {}, 1, ["argument --warmup: must be >= 0"]),
    ("run-device-bogus", ["p.mlir", "--device", "foo"], {}, 1, ["--device foo: not a device"]),
    ("run-device-mps", ["p.mlir", "--device", "mps"], {}, 1, ["--device mps: not a device"]),
    ("run-env-device-bogus", ["p.mlir"], {"HIR_DEVICE": "bogus"}, 1, ["$HIR_DEVICE bogus: not a device"]),
    ("run-backend-bogus", ["p.mlir", "--backend", "mpi"], {}, 1, ["argument --backend"]),
    ("run-lower-bogus", ["p.mlir", "--lower=hir-bogus"], {}, 1, ["--lower=hir-bogus", "hir-bogus"]),
    ("run-lower-nested", ["p.mlir", "--lower=func.func(hir-lower)"], {}, 1, ["'hir-lower' is a module-level hir pass"]),
    ("run-lower-disable-bogus", ["p.mlir", "random", "1", "--lower"], {"HIR_DISABLE_PASSES": "nope"}, 1, ["$HIR_DISABLE_PASSES: no hir pass named nope"]),
    ("run-cuda-graph-cpu", ["p.mlir", "random", "1", "--cuda-graph"], {}, 1, ["--cuda-graph (graph=True): needs a CUDA device"]),
    ("run-graph-flags-both", ["p.mlir", "--cuda-graph", "--no-cuda-graph"], {}, 1, ["not allowed with argument"]),
    ("run-unknown-flag", ["p.mlir", "--bogus"], {}, 1, ["unrecognized arguments: --bogus"]),
    ("run-no-file", [], {}, 1, ["the following arguments are required: file"]),
    ("run-seed-text", ["p.mlir", "--seed", "x"], {}, 1, ["argument --seed"]),
    ("run-dist-timeout-text", ["p.mlir", "random", "1"], {"HIR_DIST_TIMEOUT": "abc", "WORLD_SIZE": "2", "RANK": "0"}, 1, ["$HIR_DIST_TIMEOUT='abc': expected a number of seconds > 0"]),
    ("run-dist-timeout-zero", ["p.mlir", "random", "1"], {"HIR_DIST_TIMEOUT": "0", "WORLD_SIZE": "2", "RANK": "0"}, 1, ["$HIR_DIST_TIMEOUT='0'"]),
    ("run-bad-view-chunks", ["bad_view.mlir", "ones"], {}, 1, ["bad_view.mlir:3:8: error:", "does not divide into 2 chunks"]),
    ("run-lower-without-equals", ["--lower", "hir-lower", "p.mlir"], {}, 1, ["hir-run: error: 'hir-lower' is a pass pipeline, not a file", "--lower=hir-lower"]),
    ("run-lower-text-without-equals", ["--lower", "builtin.module(hir-stream-lowering,cse)", "p.mlir"], {}, 1, ["is a pass pipeline, not a file", "--lower=builtin.module(hir-stream-lowering,cse)"]),
    ("run-dist-timeout-before-ranks", ["p.mlir", "--nproc", "2"], {"HIR_DIST_TIMEOUT": "abc"}, 1, ["hir-run: error: $HIR_DIST_TIMEOUT='abc': expected a number of seconds > 0"]),
    ("run-weights-no-keys", ["p.mlir", "random", "1", "--weights", "x.pt"], {}, 1, ["hir-run: error: --weights x.pt: @main reads no weights"]),
    ("run-weights-file-missing", ["weighted.mlir", "ones"], {}, 1, ["none.safetensors: error: cannot read the weights: no such file"]),
    ("run-weights-not-safetensors", ["weighted.mlir", "ones", "--weights", "text.pt"], {}, 1, ["text.pt: error: cannot read the weights as a safetensors file"]),
    ("run-weights-extra-input", ["weighted.mlir", "ones", "ones"], {}, 1, ["input 'ones' is for argument #2, but the entry function takes 2 (1 besides the 1 its weights file gives)"]),
]

IMPORT = [
    ("import-missing-file", ["nope.py"], {}, 1, ["nope.py: error: cannot load"]),
    ("import-syntax", ["syntax.py"], {}, 1, ["syntax.py: error: cannot load"]),
    ("import-raises", ["raises.py"], {}, 1, ["raises.py: error: loading raised RuntimeError: boom in the user file"]),
    ("import-no-module", ["nomodule.py"], {}, 1, ["nomodule.py: error: defines no 'module'"]),
    ("import-no-args", ["noargs.py"], {}, 1, ["noargs.py: error: defines no 'example_args'"]),
    ("import-other-name", ["m.py", "--module", "net"], {}, 1, ["m.py: error: defines no 'net'"]),
    ("import-not-a-module", ["notmodule.py"], {}, 1, ["module must be a torch.nn.Module, got int"]),
    ("import-int-argument", ["intarg.py"], {}, 1, ["intarg.py: error: cannot import M: argument #1 of the exported function is !torch.int"]),
    ("import-data-dependent", ["nonzero.py"], {}, 1, ["nonzero.py: error: cannot import M:", "depends on data (e.g. torch.nonzero)"]),
    ("import-wrong-shape", ["wrongshape.py"], {}, 1, ["wrongshape.py: error: torch.export cannot trace Linear", "[3, 5] X [4, 2]"]),
    ("import-placements-type", ["badplacements.py"], {}, 1, ["placements must be a dict"]),
    ("import-mesh-type", ["badmesh.py"], {}, 1, ["the device mesh 'ab' is not a list of device ids"]),
    ("import-unknown-placement", ["unknown_placement.py"], {}, 1, ["placements name nope"]),
    ("import-out-is-source", ["m.py", "-o", "m.py"], {}, 1, ["-o m.py: is also an input of this run"]),
    ("import-out-missing-folder", ["m.py", "-o", "nodir/x.mlir"], {}, 1, ["'nodir' does not exist"]),
    ("import-unknown-flag", ["m.py", "--bogus"], {}, 1, ["unrecognized arguments: --bogus"]),
    ("import-weights-contradiction", ["m.py", "-o", "new.mlir", "--weights", "w.safetensors", "--no-weights"], {}, 1, ["--weights and --no-weights contradict each other"]),
    ("import-weights-is-source", ["m.py", "-o", "new.mlir", "--weights", "m.py"], {}, 1, ["--weights m.py: is also an input of this run"]),
    ("import-weights-is-output", ["m.py", "-o", "new.mlir", "--weights", "new.mlir"], {}, 1, ["--weights new.mlir: is also the -o file"]),
    ("import-weights-missing-folder", ["m.py", "--weights", "nodir/w.safetensors"], {}, 1, ["--weights nodir/w.safetensors", "'nodir' does not exist"]),
]

DEMO = [
    ("demo-rows-zero", ["--rows", "0"], {}, 1, ["argument --rows: must be >= 1"]),
    ("demo-rows-text", ["--rows", "many"], {}, 1, ["argument --rows"]),
    ("demo-device-bogus", ["--device", "tpu"], {}, 1, ["--device tpu: not a device"]),
    ("demo-rows-huge", ["--rows", "100000000000"], {}, 1, ["hir-demo: error: --rows 100000000000 on cpu:"]),
]

CLI_CASES = [(id_, "hir-opt", *rest) for id_, *rest in OPT] + [(id_, "hir-run", *rest) for id_, *rest in RUN] + \
    [(id_, "hir-import", *rest) for id_, *rest in IMPORT] + [(id_, "hir-demo", *rest) for id_, *rest in DEMO]


def _api_cases():
    """``(id, call(folder), fragments)``; imports stay inside the calls (torch is heavy)."""
    import torch

    import hir
    from hir.interpreter import Program, local_arguments

    def text(folder, name):
        return (folder / name).read_text()

    def parsed(folder, name="p.mlir"):
        return hir.parse(text(folder, name), name)

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    class IntArg(torch.nn.Module):
        def forward(self, x, n):
            return x * n

    class NonZero(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x)

    imported = []

    def linear_program():
        """One import of Linear shared by the cases that misuse the imported program."""
        if not imported:
            imported.append(hir.from_torch(Linear(), (torch.ones(3, 4),)))
        return imported[0]

    ones = torch.ones(4, 4)
    return [
        ("api-parse-not-text", lambda f: hir.parse(42), ["hir.parse: expected MLIR text (a str), got int"]),
        ("api-parse-bytes", lambda f: hir.parse(b"func.func @main() { return }"), ["hir.parse: expected MLIR text (a str), got bytes"]),
        ("api-parse-syntax", lambda f: hir.parse(text(f, "syntax.mlir"), "syntax.mlir"), ["syntax.mlir:1:"]),
        ("api-parse-custom", lambda f: hir.parse(text(f, "custom.mlir"), "c.mlir"), ["c.mlir:2:3: error: 'hir.yield' is written in custom form"]),
        ("api-parse-uneven", lambda f: parsed(f, "uneven.mlir"), ["uneven.mlir:1:17: error: argument #0 of 'func.func': axis 0 of extent 5"]),
        ("api-parse-uneven-alloc", lambda f: parsed(f, "uneven_alloc.mlir"), ["uneven_alloc.mlir:2:8: error: result #0 of 'memref.alloc'"]),
        ("api-parse-deep", lambda f: parsed(f, "deep.mlir"), ["deep.mlir:", "nesting deeper than 512 levels"]),
        ("api-parse-deep-parens", lambda f: parsed(f, "deep_parens.mlir"), ["nesting deeper than 512 levels"]),
        ("api-parse-two-axes", lambda f: parsed(f, "two_axes.mlir"), ["axis 0 of extent 6 does not split evenly over 4 devices"]),
        ("api-lower-text", lambda f: hir.lower("func.func @main() { return }"), ["hir.lower: module must be an ir.Module (parse text with hir.parse(text)), got str"]),
        ("api-lower-none", lambda f: hir.lower(None), ["hir.lower: module must be an ir.Module, got NoneType"]),
        ("api-lower-pipeline-type", lambda f: hir.lower(parsed(f), 3), ["hir.lower: pipeline must be pipeline text"]),
        ("api-lower-unknown-pass", lambda f: hir.lower(parsed(f), "hir-bogus"), ["hir-bogus"]),
        ("api-lower-nested", lambda f: hir.lower(parsed(f), "func.func(hir-lower)"), ["'hir-lower' is a module-level hir pass"]),
        ("api-program-text", lambda f: Program("func.func @main() { return }"), ["Program: module must be an ir.Module (parse text with hir.parse(text)), got str"]),
        ("api-program-torch-program", lambda f: Program(linear_program()), ["Program: module must be an ir.Module (an imported program's module is program.module), got TorchProgram"]),
        ("api-run-text", lambda f: hir.run("func.func @main() { return }", []), ["module must be an ir.Module", "got str"]),
        ("api-run-wide-mesh", lambda f: hir.run(parsed(f, "wide.mlir"), [torch.ones(4, 4)], device="cpu", source_name="wide.mlir"), ["wide.mlir:1:17: error: argument #0 of 'func.func' is "
                                                                                                                                     "placed on devices [0, 1, 2] but the run has 1 rank(s)"]),
        ("api-run-input-count", lambda f: hir.run(parsed(f), [ones], device="cpu"), ["@main takes 2 input(s), got 1"]),
        ("api-run-input-shape", lambda f: hir.run(parsed(f), [torch.ones(3, 4), 1], device="cpu"), ["argument #0 (memref<4x4xf32>) expects shape [4, 4], got [3, 4]"]),
        ("api-run-input-dtype", lambda f: hir.run(parsed(f), [ones.double(), 1], device="cpu"), ["expects dtype torch.float32"]),
        ("api-run-input-type", lambda f: hir.run(parsed(f), [[1.0], 1], device="cpu"), ["expects a torch.Tensor, got list"]),
        ("api-run-scalar-type", lambda f: hir.run(parsed(f), [ones, 1.5], device="cpu"), ["argument #1 (index) expects a int, got float"]),
        ("api-run-entry", lambda f: hir.run(parsed(f), [], entry="nope", device="cpu"), ["no function @nope"]),
        ("api-run-ambiguous-entry", lambda f: hir.run(parsed(f, "two_funcs.mlir"), [], device="cpu"), ["cannot pick the entry function", "entry=NAME"]),
        ("api-run-device", lambda f: hir.run(parsed(f), [ones, 1], device="tpu"), ["device='tpu': not a device"]),
        ("api-run-num-streams", lambda f: hir.run(parsed(f), [ones, 1], device="cpu", num_streams=0), ["num_streams must be >= 1, got 0"]),
        ("api-run-graph", lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph="yes"), ["graph must be True, False or 'auto', got 'yes'"]),
        ("api-run-graph-cpu", lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph=True), ["--cuda-graph (graph=True): needs a CUDA device"]),
        ("api-run-cache-size", lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph_cache_size=0), ["graph_cache_size must be >= 1"]),
        ("api-local-arguments-shape", lambda f: local_arguments(parsed(f), [torch.ones(2, 2), 1], 0), ["argument #0 of @main: expected a global tensor of shape [4, 4]"]),
        ("api-from-torch-int", lambda f: hir.from_torch(42, (torch.ones(2),)), ["hir.from_torch: module must be a torch.nn.Module, got int"]),
        ("api-from-torch-function", lambda f: hir.from_torch(lambda x: x, (torch.ones(2),), mesh=[0]), ["module must be a torch.nn.Module, got function"]),
        ("api-from-torch-int-argument", lambda f: hir.from_torch(IntArg(), (torch.ones(4), 3)), ["cannot import IntArg: argument #1 of the exported function is !torch.int"]),
        ("api-from-torch-nonzero", lambda f: hir.from_torch(NonZero(), (torch.ones(4),)), ["cannot import NonZero", "depends on data (e.g. torch.nonzero)"]),
        ("api-from-torch-wrong-shape", lambda f: hir.from_torch(Linear(), (torch.ones(3, 5),)), ["bad_inputs_table.py:", ": error: torch.export cannot trace Linear", "[3, 5] X [4, 2]"]),
        ("api-from-torch-placements", lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), mesh=[0, 1], placements=5), ["placements must be a dict"]),
        ("api-from-torch-mesh", lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), mesh="ab", placements={}), ["the device mesh 'ab' is not a list of device ids"]),
        ("api-from-torch-placements-without-mesh", lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), placements={"input0": None}), ["placements were given without a mesh"]),
        ("api-torch-program-inputs", lambda f: linear_program().run(Linear().state_dict(), torch.ones(3, 4), torch.ones(3, 4), device="cpu"), ["the module takes 1 input(s), got 2"]),
        ("api-torch-program-input-shape", lambda f: linear_program().run(Linear().state_dict(), torch.ones(3, 5), device="cpu"),
         ["bad_inputs_table.py:", "error: input 0: expected a tensor of shape [3, 4] "
                                  "(the example input hir.from_torch imported), got [3, 5]"]),
        ("api-torch-program-input-type", lambda f: linear_program().arguments(Linear().state_dict(), [1.0]),
         ["error: input 0: expected a tensor of shape [3, 4]", "got list"]),
        ("api-torch-program-state", lambda f: linear_program().run({}, torch.ones(3, 4), device="cpu"), ["the state dict lacks fc.weight"]),
    ]
