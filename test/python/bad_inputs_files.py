"""The files of the bad-input suite (see bad_inputs_table.py): every CLI case runs in a folder
holding these, by name."""

SHARD2 = "#hir.shard<array<i64: 0, 1>, 0 : i64>"
SHARD3 = "#hir.shard<array<i64: 0, 1, 2>, 0 : i64>"
REPL2 = "#hir.shard<array<i64: 0, 1>, -1 : i64>"

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
    return (
        f"func.func @main() {{\n%c0 = arith.constant 0 : index\n"
        f"%c1 = arith.constant 1 : index\n{loops}{ends}return\n}}\n"
    )


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
    "deep_parens.mlir": "func.func @main() {\n  %0 = arith.constant "
    + "(" * 10000
    + "1"
    + ")" * 10000
    + " : index\n  return\n}\n",
    "deep_types.mlir": "func.func @main(%a: " + "memref<" * 10000 + "f32" + ">" * 10000 + ") {\n  return\n}\n",
    "uneven.mlir": _shard_arg("5x4", SHARD2),
    "uneven_alloc.mlir": (
        "func.func @main() {\n  %o = memref.alloc() : memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>\n"
        "  return\n}\n"
    ),
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
    "reshard.mlir": f"""func.func @main(%a: memref<4x4xf32, {SHARD2}>) -> memref<4x4xf32, {REPL2}> {{
  %o = memref.alloc() : memref<4x4xf32, {REPL2}>
  "hir.set"(%a, %o) : (memref<4x4xf32, {SHARD2}>, memref<4x4xf32, {REPL2}>) -> ()
  return %o : memref<4x4xf32, {REPL2}>
}}
""",
    "two_funcs.mlir": "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n",
    "runtime.mlir": "func.func @main(%n: index) -> memref<?xf32> {\n  %o = "
    "memref.alloc(%n) : memref<?xf32>\n  return %o : memref<?xf32>\n}\n",
    "dyn.mlir": "func.func @main(%a: memref<?x4xf32>) -> memref<?x4xf32> {\n  return %a : memref<?x4xf32>\n}\n",
    "flag.mlir": "func.func @main(%f: i1) {\n  return\n}\n",
    "bad_view.mlir": """func.func @main(%a: memref<5x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = "hir.alias_chunk"(%a, %c0) {axis = 0 : i64, chunks = 2 : i64}
      : (memref<5x4xf32>, index) -> memref<2x4xf32, strided<[4, 1], offset: ?>>
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

FILES["weighted.mlir"] = """module attributes {hir.weights = "none.safetensors"} {
  func.func @main(%w: memref<4xf32> {hir.parameter, hir.weight = "w"}, %x: memref<4xf32>) {
    return
  }
}
"""
FILES["split.mlir"] = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b( {\n"
FILES["expect.mlir"] = "// expected-error@+1 {{this message is not the one}}\n" + FILES["uneven.mlir"]
