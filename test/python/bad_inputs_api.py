"""More API cases of the bad-input suite (see bad_inputs_table.py): the builder's checks and
the weights of imported programs (save / load). Same form: ``(id, call(folder), fragments)``;
each call must raise HirError holding every fragment and naming the caller's line."""


def builder_cases():
    from hir.builder import Builder

    def b():
        return Builder()

    def two(shape_a, shape_b):
        builder = b()
        return builder, builder.input(shape_a), builder.input(shape_b)

    def matmul_4x8():
        builder, x, y = two([4, 8], [4, 8])
        return builder.matmul(x, y)

    def add_mismatch():
        builder, x, y = two([4, 8], [3, 8])
        return builder.add(x, y)

    def sum_axis():
        builder, x, _ = two([4, 8], [4, 8])
        return builder.sum(x, [3])

    def communicate_kind():
        builder, x, y = two([4, 8], [4, 8])
        return builder.communicate("bogus", x, y, [0, 1])

    def reshape_size():
        builder, x, _ = two([4, 8], [4, 8])
        return builder.reshape(x, [5, 7])

    def select_axis():
        builder, x, _ = two([4, 8], [4, 8])
        return builder.alias_select(x, builder.index(0), 5)

    def bad_kind():
        builder, x, y = two([4, 8], [4, 8])
        builder.output(builder.binary("pow", x, y))
        return builder.finish()

    return [
        ("builder-matmul-shapes", lambda f: matmul_4x8(), ["error: contraction mismatch: a is [4, 8], b is [4, 8]"]),
        (
            "builder-add-shapes",
            lambda f: add_mismatch(),
            ["error: operands: shapes [4, 8] and [3, 8] do not broadcast"],
        ),
        ("builder-dtype", lambda f: b().input([4], "f31"), ["error: dtype must be one of f32", "got 'f31'"]),
        ("builder-sum-axis", lambda f: sum_axis(), ["error: sum: axis 3 is out of range for rank 2"]),
        (
            "builder-communicate-kind",
            lambda f: communicate_kind(),
            ["communicate: kind must be one of allgather", "got 'bogus'"],
        ),
        (
            "builder-reshape",
            lambda f: reshape_size(),
            ["reshape needs a static buffer of the same size: [4, 8] to [5, 7]"],
        ),
        ("builder-select-axis", lambda f: select_axis(), ["axis 5 is out of range for rank 2"]),
        ("builder-binary-kind", lambda f: bad_kind(), ["error: 'hir.binary' op", "pow"]),
    ]


def weights_cases():
    import torch
    from safetensors.torch import save_file

    import hir

    x = torch.ones(3, 4)
    imported = []

    def program():
        if not imported:
            imported.append(hir.from_torch(torch.nn.Linear(4, 2), (x,)))
        return imported[0]

    def saved(folder):
        """Saved outside ``folder`` (the suite checks that failing calls leave it as it was)."""
        import pathlib
        import tempfile

        out = pathlib.Path(tempfile.mkdtemp(prefix="hir-bad-weights-"))
        program().save(out / "lin.mlir")
        return out / "lin.mlir"

    def wrong_file(folder):
        path = saved(folder)
        save_file({"weight": torch.ones(2, 4), "bias": torch.ones(3)}, path.parent / "lin.safetensors")
        return hir.load(path)

    def run_without_file(folder):
        path = saved(folder)
        (path.parent / "lin.safetensors").unlink()
        return hir.run(hir.parse(path.read_text(), str(path)), [x], device="cpu", source_name=str(path))

    return [
        ("weights-load-missing", lambda f: hir.load(f / "nope.mlir"), ["nope.mlir: error: cannot read"]),
        ("weights-load-not-path", lambda f: hir.load(42), ["hir.load: path must be a file name, got int"]),
        ("weights-load-no-main", lambda f: hir.load(f / "two_funcs.mlir"), ["the module has no @main"]),
        ("weights-load-shape", wrong_file, ["lin.safetensors: error: tensor 'bias' has shape [3]", "of shape [2]"]),
        ("weights-run-no-file", run_without_file, ["lin.safetensors: error: cannot read the weights: no such file"]),
        (
            "weights-save-not-path",
            lambda f: program().save(None),
            ["TorchProgram.save: path must be a file name, got NoneType"],
        ),
        (
            "weights-save-missing-folder",
            lambda f: program().save(f / "nodir" / "p.mlir"),
            ["TorchProgram.save:", "does not exist"],
        ),
        (
            "weights-save-onto-program",
            lambda f: program().save(f / "p.mlir", weights=str(f / "p.mlir")),
            ["would overwrite the program file"],
        ),
        (
            "weights-save-state-shape",
            lambda f: program().save(f / "p.mlir", {"weight": torch.ones(2, 5), "bias": torch.ones(2)}),
            ["state entry 'weight': expected a tensor of shape [2, 4], got [2, 5]"],
        ),
        (
            "weights-save-state-missing",
            lambda f: program().save(f / "p.mlir", {"weight": torch.ones(2, 4)}),
            ["the state dict lacks bias"],
        ),
    ]
