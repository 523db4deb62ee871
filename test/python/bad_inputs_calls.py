"""The first API cases of the bad-input suite (see bad_inputs_table.py for their shape): hir.parse,
hir.lower, Program, run and from_torch called the way a new user gets them wrong."""


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
        (
            "api-parse-bytes",
            lambda f: hir.parse(b"func.func @main() { return }"),
            ["hir.parse: expected MLIR text (a str), got bytes"],
        ),
        ("api-parse-syntax", lambda f: hir.parse(text(f, "syntax.mlir"), "syntax.mlir"), ["syntax.mlir:1:"]),
        (
            "api-parse-custom",
            lambda f: hir.parse(text(f, "custom.mlir"), "c.mlir"),
            ["c.mlir:2:3: error: 'hir.yield' is written in custom form"],
        ),
        (
            "api-parse-uneven",
            lambda f: parsed(f, "uneven.mlir"),
            ["uneven.mlir:1:17: error: argument #0 of 'func.func': axis 0 of extent 5"],
        ),
        (
            "api-parse-uneven-alloc",
            lambda f: parsed(f, "uneven_alloc.mlir"),
            ["uneven_alloc.mlir:2:8: error: result #0 of 'memref.alloc'"],
        ),
        ("api-parse-deep", lambda f: parsed(f, "deep.mlir"), ["deep.mlir:", "nesting deeper than 512 levels"]),
        ("api-parse-deep-parens", lambda f: parsed(f, "deep_parens.mlir"), ["nesting deeper than 512 levels"]),
        (
            "api-parse-two-axes",
            lambda f: parsed(f, "two_axes.mlir"),
            ["axis 0 of extent 6 does not split evenly over 4 devices"],
        ),
        (
            "api-lower-text",
            lambda f: hir.lower("func.func @main() { return }"),
            ["hir.lower: module must be an ir.Module (parse text with hir.parse(text)), got str"],
        ),
        ("api-lower-none", lambda f: hir.lower(None), ["hir.lower: module must be an ir.Module, got NoneType"]),
        ("api-lower-pipeline-type", lambda f: hir.lower(parsed(f), 3), ["hir.lower: pipeline must be pipeline text"]),
        ("api-lower-unknown-pass", lambda f: hir.lower(parsed(f), "hir-bogus"), ["hir-bogus"]),
        (
            "api-lower-nested",
            lambda f: hir.lower(parsed(f), "func.func(hir-lower)"),
            ["'hir-lower' is a module-level hir pass"],
        ),
        (
            "api-program-text",
            lambda f: Program("func.func @main() { return }"),
            ["Program: module must be an ir.Module (parse text with hir.parse(text)), got str"],
        ),
        (
            "api-program-torch-program",
            lambda f: Program(linear_program()),
            ["Program: module must be an ir.Module (an imported program's module is program.module), got TorchProgram"],
        ),
        (
            "api-run-text",
            lambda f: hir.run("func.func @main() { return }", []),
            ["module must be an ir.Module", "got str"],
        ),
        (
            "api-run-wide-mesh",
            lambda f: hir.run(parsed(f, "wide.mlir"), [torch.ones(4, 4)], device="cpu", source_name="wide.mlir"),
            [
                "wide.mlir:1:17: error: argument #0 of 'func.func' is "
                "placed on devices [0, 1, 2] but the run has 1 rank(s)"
            ],
        ),
        ("api-run-input-count", lambda f: hir.run(parsed(f), [ones], device="cpu"), ["@main takes 2 input(s), got 1"]),
        (
            "api-run-input-shape",
            lambda f: hir.run(parsed(f), [torch.ones(3, 4), 1], device="cpu"),
            ["argument #0 (memref<4x4xf32>) expects shape [4, 4], got [3, 4]"],
        ),
        (
            "api-run-input-dtype",
            lambda f: hir.run(parsed(f), [ones.double(), 1], device="cpu"),
            ["expects dtype torch.float32"],
        ),
        (
            "api-run-input-type",
            lambda f: hir.run(parsed(f), [[1.0], 1], device="cpu"),
            ["expects a torch.Tensor, got list"],
        ),
        (
            "api-run-scalar-type",
            lambda f: hir.run(parsed(f), [ones, 1.5], device="cpu"),
            ["argument #1 (index) expects a int, got float"],
        ),
        ("api-run-entry", lambda f: hir.run(parsed(f), [], entry="nope", device="cpu"), ["no function @nope"]),
        (
            "api-run-ambiguous-entry",
            lambda f: hir.run(parsed(f, "two_funcs.mlir"), [], device="cpu"),
            ["cannot pick the entry function", "entry=NAME"],
        ),
        ("api-run-device", lambda f: hir.run(parsed(f), [ones, 1], device="tpu"), ["device='tpu': not a device"]),
        (
            "api-run-num-streams",
            lambda f: hir.run(parsed(f), [ones, 1], device="cpu", num_streams=0),
            ["num_streams must be >= 1, got 0"],
        ),
        (
            "api-run-graph",
            lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph="yes"),
            ["graph must be True, False or 'auto', got 'yes'"],
        ),
        (
            "api-run-graph-cpu",
            lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph=True),
            ["--cuda-graph (graph=True): needs a CUDA device"],
        ),
        (
            "api-run-cache-size",
            lambda f: hir.run(parsed(f), [ones, 1], device="cpu", graph_cache_size=0),
            ["graph_cache_size must be >= 1"],
        ),
        (
            "api-local-arguments-shape",
            lambda f: local_arguments(parsed(f), [torch.ones(2, 2), 1], 0),
            ["argument #0 of @main: expected a global tensor of shape [4, 4]"],
        ),
        (
            "api-from-torch-int",
            lambda f: hir.from_torch(42, (torch.ones(2),)),
            ["hir.from_torch: module must be a torch.nn.Module, got int"],
        ),
        (
            "api-from-torch-function",
            lambda f: hir.from_torch(lambda x: x, (torch.ones(2),), mesh=[0]),
            ["module must be a torch.nn.Module, got function"],
        ),
        (
            "api-from-torch-int-argument",
            lambda f: hir.from_torch(IntArg(), (torch.ones(4), 3)),
            ["cannot import IntArg: argument #1 of the exported function is !torch.int"],
        ),
        (
            "api-from-torch-nonzero",
            lambda f: hir.from_torch(NonZero(), (torch.ones(4),)),
            ["cannot import NonZero", "depends on data (e.g. torch.nonzero)"],
        ),
        (
            "api-from-torch-wrong-shape",
            lambda f: hir.from_torch(Linear(), (torch.ones(3, 5),)),
            ["bad_inputs_calls.py:", ": error: torch.export cannot trace Linear", "[3, 5] X [4, 2]"],
        ),
        (
            "api-from-torch-placements",
            lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), mesh=[0, 1], placements=5),
            ["placements must be a dict"],
        ),
        (
            "api-from-torch-mesh",
            lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), mesh="ab", placements={}),
            ["the device mesh 'ab' is not a list of device ids"],
        ),
        (
            "api-from-torch-placements-without-mesh",
            lambda f: hir.from_torch(Linear(), (torch.ones(3, 4),), placements={"input0": None}),
            ["placements were given without a mesh"],
        ),
        (
            "api-torch-program-inputs",
            lambda f: linear_program().run(Linear().state_dict(), torch.ones(3, 4), torch.ones(3, 4), device="cpu"),
            ["the module takes 1 input(s), got 2"],
        ),
        (
            "api-torch-program-input-shape",
            lambda f: linear_program().run(Linear().state_dict(), torch.ones(3, 5), device="cpu"),
            [
                "bad_inputs_calls.py:",
                "error: input 0: expected a tensor of shape [3, 4] "
                "(the example input hir.from_torch imported), got [3, 5]",
            ],
        ),
        (
            "api-torch-program-input-type",
            lambda f: linear_program().arguments(Linear().state_dict(), [1.0]),
            ["error: input 0: expected a tensor of shape [3, 4]", "got list"],
        ),
        (
            "api-torch-program-state",
            lambda f: linear_program().run({}, torch.ones(3, 4), device="cpu"),
            ["the state dict lacks fc.weight"],
        ),
    ]
