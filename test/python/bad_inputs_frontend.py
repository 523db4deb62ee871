"""More API cases of the bad-input suite (see bad_inputs_table.py): the frontend's newer paths
(the functionalized export of HF-style modules, meshes and placements, imported programs'
state dicts), the public entries' options, and ``hir.from_shard``. Same form:
``(id, call(folder), fragments)``; each call must raise HirError holding every fragment."""

import dataclasses


def frontend_cases():
    import torch
    from torch.distributed.tensor import Shard

    import hir

    @dataclasses.dataclass
    class Output:  # what HF models return: a dataclass of tensors (ModelOutput)
        last_hidden_state: torch.Tensor
        extra: torch.Tensor | None = None

    class TinyLM(torch.nn.Module):
        """HF-style: token ids through an embedding, a non-persistent position buffer, an
        optional ``attention_mask`` keyword, a dataclass result."""

        def __init__(self, vocab: int = 8, width: int = 4) -> None:
            super().__init__()
            self.wte = torch.nn.Embedding(vocab, width)
            self.wpe = torch.nn.Embedding(4, width)
            self.register_buffer("position_ids", torch.arange(4), persistent=False)
            self.fc = torch.nn.Linear(width, width)

        def forward(self, input_ids, attention_mask=None):
            h = self.wte(input_ids) + self.wpe(self.position_ids[: input_ids.shape[-1]])
            if attention_mask is not None:
                h = h * attention_mask[..., None]
            return Output(self.fc(h))

    class Returns(torch.nn.Module):
        def __init__(self, value) -> None:
            super().__init__()
            self.value = value

        def forward(self, x):
            return self.value

    class Raises(torch.nn.Module):
        def forward(self, x):
            raise KeyError("a bug in the user's forward")

    class Branch(torch.nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    class Complex(torch.nn.Module):
        def forward(self, x):
            return torch.view_as_complex(x)

    ids = torch.tensor([[1, 2, 3, 4]])
    x = torch.ones(3, 4)
    imported = []

    def lm():
        """One import of TinyLM shared by the cases that misuse the imported program."""
        if not imported:
            imported.append(hir.from_torch(TinyLM(), (ids,)))
        return imported[0]

    def state(**changes):
        out = TinyLM().state_dict()
        out.update(changes)
        return {k: v for k, v in out.items() if v is not None}

    def linear(**options):
        return hir.from_torch(torch.nn.Linear(4, 2), (x,), **options)

    shard_module = "module {\n  shard.grid @g(shape = 2)\n}\n"
    return [
        # the functionalized export of HF-style modules
        (
            "fe-hf-float-ids",
            lambda f: hir.from_torch(TinyLM(), (ids.float(),)),
            ["bad_inputs_frontend.py:", ": error: torch.export cannot trace TinyLM", "RuntimeError", "Long, Int"],
        ),
        (
            "fe-hf-missing-ids",
            lambda f: hir.from_torch(TinyLM(), ()),
            ["torch.export cannot trace TinyLM", "missing 1 required positional argument: 'input_ids'"],
        ),
        (
            "fe-hf-too-many-args",
            lambda f: hir.from_torch(TinyLM(), (ids, ids, ids)),
            ["torch.export cannot trace TinyLM", "TypeError"],
        ),
        (
            "fe-hf-run-id-out-of-range",
            lambda f: lm().run(state(), ids + 100, device="cpu"),
            ["error: 'torch.aten.embedding' failed: IndexError: index out of range"],
        ),
        (
            "fe-hf-run-float-ids",
            lambda f: lm().run(state(), ids.float(), device="cpu"),
            [
                "bad_inputs_frontend.py:",
                "error: input 0: expected dtype torch.int64 (the "
                "example input hir.from_torch imported), got torch.float32",
            ],
        ),
        (
            "fe-hf-run-other-config",
            lambda f: lm().run(TinyLM(width=8).state_dict(), ids, device="cpu"),
            [
                "bad_inputs_frontend.py:",
                "error: state entry 'wte.weight': expected a tensor of shape [8, 4], got [8, 8]",
            ],
        ),
        (
            "fe-hf-run-half-state",
            lambda f: lm().run(state(**{"fc.weight": torch.ones(4, 4).half()}), ids, device="cpu"),
            ["state entry 'fc.weight': expected dtype torch.float32, got torch.float16"],
        ),
        (
            "fe-hf-run-state-not-tensor",
            lambda f: lm().run(state(**{"fc.bias": [0.0] * 4}), ids, device="cpu"),
            ["state entry 'fc.bias': expected a tensor of shape [4], got list"],
        ),
        (
            "fe-hf-run-state-missing",
            lambda f: lm().run(state(**{"wpe.weight": None}), ids, device="cpu"),
            ["the state dict lacks wpe.weight"],
        ),
        (
            "fe-hf-run-state-list",
            lambda f: lm().run([state()], ids, device="cpu"),
            ["error: the state dict must be a dict of tensors (module.state_dict()), got list"],
        ),
        (
            "fe-hf-run-unknown-option",
            lambda f: lm().run(state(), ids, device="cpu", stream=2),
            ["hir.run: unknown option(s) stream", "num_streams"],
        ),
        # export errors
        (
            "fe-returns-object",
            lambda f: hir.from_torch(Returns(object()), (x,)),
            [
                "bad_inputs_frontend.py:",
                ": error: the module returns a object at 'output'; hir programs return tensors",
            ],
        ),
        (
            "fe-forward-raises",
            lambda f: hir.from_torch(Raises(), (x,)),
            ["torch.export cannot trace Raises: KeyError", "a bug in the user's forward"],
        ),
        (
            "fe-data-dependent-branch",
            lambda f: hir.from_torch(Branch(), (x,)),
            ["torch.export cannot trace Branch", "data-dependent"],
        ),
        (
            "fe-none-argument",
            lambda f: hir.from_torch(Branch(), (None,)),
            ["torch.export cannot trace Branch", "NoneType"],
        ),
        (
            "fe-complex",
            lambda f: hir.from_torch(Complex(), (torch.ones(3, 2),)),
            ["cannot import Complex", "complex<f32>"],
        ),
        ("fe-unknown-option", lambda f: linear(dynamc={}), ["hir.from_torch: unknown option(s) dynamc"]),
        (
            "fe-dynamic-not-dict",
            lambda f: linear(dynamic=True),
            ["hir.from_torch: dynamic must be a dict like {'input0': {0: 'batch', 1: ('seq', 2, 4096)}}, got bool"],
        ),
        # meshes and placements
        (
            "fe-mesh-none-entry",
            lambda f: linear(mesh=[None, 1], placements={}),
            ["the device mesh [None, 1] is not a list of device ids"],
        ),
        (
            "fe-mesh-scalar",
            lambda f: linear(mesh=2, placements={}),
            ["the device mesh 2 is not a list of device ids", "[0, 1, ...]"],
        ),
        (
            "fe-mesh-floats",
            lambda f: linear(mesh=[0.5, 1.5], placements={}),
            ["the device mesh [0.5, 1.5] is not a list of device ids (integers)"],
        ),
        (
            "fe-mesh-ragged",
            lambda f: linear(mesh=[[0, 1], [2]], placements={}),
            ["the device mesh [[0, 1], [2]] is not a list of device ids"],
        ),
        ("fe-mesh-empty", lambda f: linear(mesh=[], placements={}), ["the device mesh [] is empty"]),
        ("fe-mesh-duplicate", lambda f: linear(mesh=[0, 0], placements={}), ["must list distinct non-negative ranks"]),
        (
            "fe-placement-output-range",
            lambda f: linear(mesh=[0, 1], placements={"output7": Shard(0)}),
            ["placements name output7", "the module has 1 input(s) and 1 output(s)"],
        ),
        (
            "fe-placement-key-int",
            lambda f: linear(mesh=[0, 1], placements={0: Shard(0)}),
            ["placements name 0, which are neither"],
        ),
        (
            "fe-placement-dim-range",
            lambda f: linear(mesh=[0, 1], placements={"weight": Shard(5)}),
            ["placement Shard(5) of 'weight' is out of range for its shape [2, 4]"],
        ),
        (
            "fe-placement-uneven",
            lambda f: linear(mesh=[0, 1, 2], placements={"weight": Shard(0)}),
            ["dimension 0 of extent 2 does not divide over 3 devices"],
        ),
        (
            "fe-placement-text",
            lambda f: linear(mesh=[0, 1], placements={"weight": "row"}),
            ["tensor-parallel plan entry 'weight': style \"row\" is not supported", '"colwise"'],
        ),
        (
            "fe-placement-too-many",
            lambda f: linear(mesh=[0, 1], placements={"weight": (Shard(0), Shard(1))}),
            ["has 2 mesh dimension(s); the mesh [0, 1] has 1"],
        ),
        (
            "fe-placement-2d-single",
            lambda f: linear(mesh=[[0, 1], [2, 3]], placements={"weight": Shard(0)}),
            ["has 1 mesh dimension(s)", "of shape [2, 2] has 2"],
        ),
        # the public entries' options
        ("fe-run-unknown-option", lambda f: hir.run(lm().module, [], bogus=1), ["hir.run: unknown option(s) bogus"]),
        (
            "fe-run-inputs-none",
            lambda f: hir.run(lm().module, None),
            ["hir.run: inputs must be a list", "got NoneType"],
        ),
        ("fe-run-inputs-tensor", lambda f: hir.run(lm().module, ids), ["hir.run: inputs must be a list", "got Tensor"]),
        (
            "fe-lower-unknown-option",
            lambda f: hir.lower(hir.parse("func.func @main() { return }"), print_after=True),
            ["hir.lower: unknown option(s) print_after", "print_after_all"],
        ),
        (
            "fe-lower-out",
            lambda f: hir.lower(hir.parse("func.func @main() { return }"), print_after_all=True, out=5),
            ["hir.lower: out must be a text stream"],
        ),
        ("fe-from-shard-text", lambda f: hir.from_shard(shard_module), ["module must be an ir.Module", "got str"]),
        (
            "fe-from-shard-backend",
            lambda f: hir.from_shard(hir.parse(shard_module), backend="nccl}),bogus("),
            ["hir.from_shard: backend must be one of", "got 'nccl}),bogus('"],
        ),
        (
            "fe-from-shard-no-grid",
            lambda f: hir.from_shard(hir.parse("func.func @main() { return }")),
            ["the module has no shard.grid: nothing to convert"],
        ),
    ]
