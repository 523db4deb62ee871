"""The bad-input table of test_bad_inputs.py: what a new user gets wrong, and what hir must say.

Each CLI case is ``(id, tool, argv, env, rc, fragments)``: the tool's ``main(argv)`` run in the
folder of :data:`FILES` with ``env`` added must return ``rc``, print every fragment on stderr
and no traceback, and leave every file of the folder as it was. Each API case is
``(id, call, fragments)``: ``call(folder)`` must raise :class:`hir.HirError` whose message holds
every fragment and names the caller's line (the table's line that called into hir)."""

from bad_inputs_run import RUN

OPT = [
    ("opt-missing-file", ["nope.mlir"], {}, 1, ["nope.mlir: error: cannot read"]),
    ("opt-syntax", ["syntax.mlir"], {}, 1, ["syntax.mlir:1:"]),
    ("opt-custom-form", ["custom.mlir"], {}, 1, ["custom.mlir:2:3: error: 'hir.yield' is written in custom form"]),
    (
        "opt-custom-form-first-line",
        ["custom_first.mlir"],
        {},
        1,
        ["custom_first.mlir:1:21: error: 'hir.yield' is written in custom form"],
    ),
    (
        "opt-custom-form-after-value",
        ["custom_value.mlir"],
        {},
        1,
        ["custom_value.mlir:2:8: error: 'hir.get_current_stream' is written in custom form"],
    ),
    ("opt-unknown-op", ["unknown_op.mlir"], {}, 1, ["unknown_op.mlir:2:3: error:", "hir.bogus"]),
    ("opt-undefined-value", ["undef.mlir"], {}, 1, ["undef.mlir:2:10: error: use of undeclared SSA value"]),
    ("opt-bad-type", ["badtype.mlir"], {}, 1, ["badtype.mlir:1:"]),
    ("opt-non-utf8", ["nonutf8.mlir"], {}, 1, ["nonutf8.mlir:2:13: error: unexpected character"]),
    ("opt-deep-regions", ["deep.mlir"], {}, 1, ["deep.mlir:", "nesting deeper than 512 levels"]),
    ("opt-deep-parens", ["deep_parens.mlir"], {}, 1, ["deep_parens.mlir:2:", "nesting deeper than 512 levels"]),
    ("opt-deep-types", ["deep_types.mlir"], {}, 1, ["deep_types.mlir:1:", "nesting deeper than 512 levels"]),
    ("opt-deep-regions-o", ["deep.mlir", "-o", "out.mlir"], {}, 1, ["nesting deeper than"]),
    (
        "opt-uneven-shard",
        ["uneven.mlir"],
        {},
        1,
        [
            "uneven.mlir:1:17: error: argument #0 of 'func.func': "
            "axis 0 of extent 5 does not split evenly over 2 devices"
        ],
    ),
    (
        "opt-uneven-alloc",
        ["uneven_alloc.mlir"],
        {},
        1,
        ["uneven_alloc.mlir:2:8: error: result #0 of 'memref.alloc': axis 1 of extent 3"],
    ),
    ("opt-empty-mesh", ["empty_mesh.mlir"], {}, 1, ["empty_mesh.mlir:1:17: error:", "the device mesh is empty"]),
    (
        "opt-duplicate-device",
        ["dup_mesh.mlir"],
        {},
        1,
        ["dup_mesh.mlir:1:17: error:", "distinct non-negative device ids"],
    ),
    (
        "opt-negative-device",
        ["neg_mesh.mlir"],
        {},
        1,
        ["neg_mesh.mlir:1:17: error:", "distinct non-negative device ids"],
    ),
    (
        "opt-shard-axis-range",
        ["axis_range.mlir"],
        {},
        1,
        ["axis_range.mlir:1:17: error:", "shard axis 2 is out of range for rank 2"],
    ),
    (
        "opt-shard-axis-negative",
        ["axis_neg.mlir"],
        {},
        1,
        ["axis_neg.mlir:1:17: error:", "shard axis -2 is out of range"],
    ),
    (
        "opt-two-mesh-axes",
        ["two_axes.mlir"],
        {},
        1,
        ["two_axes.mlir:1:17: error:", "axis 0 of extent 6 does not split evenly over 4 devices"],
    ),
    (
        "opt-splits-count",
        ["splits_count.mlir"],
        {},
        1,
        ["splits_count.mlir:1:17: error:", "needs 2 splits (one per mesh axis)"],
    ),
    ("opt-1d-dense-mesh", ["mesh_1d_dense.mlir"], {}, 1, ["mesh_1d_dense.mlir:1:17: error:", "write a 1-D mesh as"]),
    ("opt-memory-space", ["space.mlir"], {}, 1, ["space.mlir:1:17: error:", "hir buffers use #hir.shard"]),
    ("opt-bad-view", ["bad_view.mlir"], {}, 1, ["bad_view.mlir:3:8: error:", "does not divide into 2 chunks"]),
    ("opt-unknown-pass", ["p.mlir", "-p", "builtin.module(hir-bogus)"], {}, 1, ["hir-opt: error:", "hir-bogus"]),
    (
        "opt-nested-hir-pass",
        ["p.mlir", "-p", "builtin.module(func.func(hir-lower))"],
        {},
        1,
        ["'hir-lower' is a module-level hir pass", "not nested in 'func.func(...)'"],
    ),
    (
        "opt-nested-hir-pipeline",
        ["p.mlir", "-p", "func.func(hir-stream-lowering)"],
        {},
        1,
        ["'hir-stream-lowering' is a module-level hir pass"],
    ),
    (
        "opt-bad-pass-option",
        ["p.mlir", "-p", "builtin.module(hir-stream-lowering{bogus=1})"],
        {},
        1,
        ["hir-opt: error:", "bogus"],
    ),
    (
        "opt-unclosed-option",
        ["p.mlir", "-p", "builtin.module(hir-stream-lowering{num-streams=2)"],
        {},
        1,
        ["hir-opt: error:"],
    ),
    (
        "opt-pipeline-options",
        ["p.mlir", "-p", "builtin.module(hir-lower{x=1})"],
        {},
        1,
        ["pipeline 'hir-lower' takes no options"],
    ),
    ("opt-unbalanced-pipeline", ["p.mlir", "-p", "builtin.module(canonicalize"], {}, 1, ["hir-opt: error:"]),
    ("opt-upstream-typo", ["p.mlir", "-p", "builtin.module(canonicalise)"], {}, 1, ["hir-opt: error:", "canonicalise"]),
    (
        "opt-disable-bogus",
        ["p.mlir", "-p", "builtin.module(cse)"],
        {"HIR_DISABLE_PASSES": "bogus"},
        1,
        ["$HIR_DISABLE_PASSES: no hir pass named bogus"],
    ),
    (
        "opt-disable-typo",
        ["p.mlir", "-p", "hir-lower"],
        {"HIR_DISABLE_PASSES": "hir-stream-lowering,hir-fuse-loop"},
        1,
        ["$HIR_DISABLE_PASSES: no hir pass named hir-fuse-loop"],
    ),
    (
        "opt-dump-bogus",
        ["p.mlir", "-p", "builtin.module(cse)"],
        {"HIR_DUMP": "everything"},
        1,
        ["HIR_DUMP: unknown option(s) everything"],
    ),
    (
        "opt-out-missing-folder",
        ["p.mlir", "-o", "nodir/out.mlir"],
        {},
        1,
        ["-o nodir/out.mlir", "'nodir' does not exist"],
    ),
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

IMPORT = [
    ("import-missing-file", ["nope.py"], {}, 1, ["nope.py: error: cannot load"]),
    ("import-syntax", ["syntax.py"], {}, 1, ["syntax.py: error: cannot load"]),
    ("import-raises", ["raises.py"], {}, 1, ["raises.py: error: loading raised RuntimeError: boom in the user file"]),
    ("import-no-module", ["nomodule.py"], {}, 1, ["nomodule.py: error: defines no 'module'"]),
    ("import-no-args", ["noargs.py"], {}, 1, ["noargs.py: error: defines no 'example_args'"]),
    ("import-other-name", ["m.py", "--module", "net"], {}, 1, ["m.py: error: defines no 'net'"]),
    ("import-not-a-module", ["notmodule.py"], {}, 1, ["module must be a torch.nn.Module, got int"]),
    (
        "import-int-argument",
        ["intarg.py"],
        {},
        1,
        ["intarg.py: error: cannot import M: argument #1 of the exported function is !torch.int"],
    ),
    (
        "import-data-dependent",
        ["nonzero.py"],
        {},
        1,
        ["nonzero.py: error: cannot import M:", "depends on data (e.g. torch.nonzero)"],
    ),
    (
        "import-wrong-shape",
        ["wrongshape.py"],
        {},
        1,
        ["wrongshape.py: error: torch.export cannot trace Linear", "[3, 5] X [4, 2]"],
    ),
    ("import-placements-type", ["badplacements.py"], {}, 1, ["placements must be a dict"]),
    ("import-mesh-type", ["badmesh.py"], {}, 1, ["the device mesh 'ab' is not a list of device ids"]),
    ("import-unknown-placement", ["unknown_placement.py"], {}, 1, ["placements name nope"]),
    ("import-out-is-source", ["m.py", "-o", "m.py"], {}, 1, ["-o m.py: is also an input of this run"]),
    ("import-out-missing-folder", ["m.py", "-o", "nodir/x.mlir"], {}, 1, ["'nodir' does not exist"]),
    ("import-unknown-flag", ["m.py", "--bogus"], {}, 1, ["unrecognized arguments: --bogus"]),
    (
        "import-weights-contradiction",
        ["m.py", "-o", "new.mlir", "--weights", "w.safetensors", "--no-weights"],
        {},
        1,
        ["--weights and --no-weights contradict each other"],
    ),
    (
        "import-weights-is-source",
        ["m.py", "-o", "new.mlir", "--weights", "m.py"],
        {},
        1,
        ["--weights m.py: is also an input of this run"],
    ),
    (
        "import-weights-is-output",
        ["m.py", "-o", "new.mlir", "--weights", "new.mlir"],
        {},
        1,
        ["--weights new.mlir: is also the -o file"],
    ),
    (
        "import-weights-missing-folder",
        ["m.py", "--weights", "nodir/w.safetensors"],
        {},
        1,
        ["--weights nodir/w.safetensors", "'nodir' does not exist"],
    ),
]

DEMO = [
    ("demo-rows-zero", ["--rows", "0"], {}, 1, ["argument --rows: must be >= 1"]),
    ("demo-rows-text", ["--rows", "many"], {}, 1, ["argument --rows"]),
    ("demo-device-bogus", ["--device", "tpu"], {}, 1, ["--device tpu: not a device"]),
    ("demo-rows-huge", ["--rows", "100000000000"], {}, 1, ["hir-demo: error: --rows 100000000000 on cpu:"]),
]

CLI_CASES = (
    [(id_, "hir-opt", *rest) for id_, *rest in OPT]
    + [(id_, "hir-run", *rest) for id_, *rest in RUN]
    + [(id_, "hir-import", *rest) for id_, *rest in IMPORT]
    + [(id_, "hir-demo", *rest) for id_, *rest in DEMO]
)
