"""``hir.compile(module, example_args)`` as ``torch.compile`` users hold it: new input shapes
compile (the changed dims dynamic from the second signature on, a bound on programs), the
results have the module's structure, replaced parameters are bound again, and a backward
through the results raises instead of leaving the parameters' gradients unset."""

import dataclasses
import warnings

import pytest
import torch

import hir


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()


def sequence_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Linear(16, 8)).eval()


def dynamic_axes(program) -> list:
    return [sorted(dims) for dims in program.dynamic_dims]


def test_new_shapes_compile_and_changed_dims_go_dynamic():
    model = sequence_model()
    fn = hir.compile(model, (torch.randn(2, 4, 16),), device="cpu")
    with torch.no_grad():
        for (batch, seq), programs in [((2, 4), 1), ((3, 4), 2), ((5, 4), 2), ((3, 7), 3), ((6, 9), 3), ((2, 4), 3)]:
            x = torch.randn(batch, seq, 16)
            torch.testing.assert_close(fn(x), model(x))
            assert len(fn.programs) == programs, (batch, seq)
    assert [dynamic_axes(p) for p in fn.programs] == [[[]], [[0]], [[0, 1]]]
    assert "memref<?x?x16xf32>" in str(fn.programs[2].module)


def test_dims_that_change_alike_are_one_dim():
    class Masked(torch.nn.Module):
        def forward(self, x, mask):
            return x * mask[..., None]

    fn = hir.compile(Masked(), (torch.randn(2, 4, 3), torch.ones(2, 4)), device="cpu")
    for batch in (2, 5, 7):
        x, mask = torch.randn(batch, 4, 3), torch.rand(batch, 4)
        torch.testing.assert_close(fn(x, mask), x * mask[..., None])
    (static, dynamic) = fn.programs
    assert dynamic.dynamic_dims[0][0][0] == dynamic.dynamic_dims[1][0][0]  # one symbol for both batches


def test_keyword_inputs_by_keyword_and_new_shapes():
    class Masked(torch.nn.Module):
        def forward(self, x, mask=None):
            return x * mask[..., None]

    fn = hir.compile(Masked(), (torch.randn(2, 4, 3),), example_kwargs={"mask": torch.ones(2, 4)}, device="cpu")
    for batch, seq in [(2, 4), (3, 4), (5, 6)]:
        x, mask = torch.randn(batch, seq, 3), torch.rand(batch, seq)
        torch.testing.assert_close(fn(x, mask=mask), x * mask[..., None])
        torch.testing.assert_close(fn(x, mask), x * mask[..., None])
    assert len(fn.programs) == 3 and all(p.keyword_inputs == ["mask"] for p in fn.programs)
    torch.testing.assert_close(fn(x=x, mask=mask), x * mask[..., None])  # positional parameters by keyword too
    assert len(fn.programs) == 3
    with pytest.raises(
        hir.HirError,
        match=r"hir.compile\(Masked\): got an unexpected keyword argument 'attention_mask' "
        r"\(the module's forward\(x, mask=None\)\)",
    ):
        fn(x, attention_mask=mask)
    with pytest.raises(hir.HirError, match=r"hir.compile\(Masked\): multiple values for argument 'x'"):
        fn(x, x=x)


def test_keyword_inputs_wherever_positional_ones_work():
    """A positional parameter by keyword (``fn(input=x)``); keyword tensors on a module
    compiled without them (a program taking them); a keyword constant other than the example's
    is refused by name."""
    model = mlp()
    fn = hir.compile(model, (torch.randn(8, 16),), device="cpu")
    with torch.no_grad():
        x = torch.randn(8, 16)
        torch.testing.assert_close(fn(input=x), model(x))
        assert len(fn.programs) == 1

    class Masked(torch.nn.Module):
        def forward(self, x, *, mask=None, scale=1.0):
            return x * scale if mask is None else x * mask[..., None] * scale

    masked = hir.compile(Masked(), (torch.randn(2, 4, 3),), example_kwargs={"scale": 2.0}, device="cpu")
    x, mask = torch.randn(2, 4, 3), torch.rand(2, 4)
    torch.testing.assert_close(masked(x), x * 2.0)
    torch.testing.assert_close(masked(x, mask=mask), x * mask[..., None] * 2.0)
    torch.testing.assert_close(masked(x=x, mask=mask, scale=2.0), x * mask[..., None] * 2.0)
    assert [p.keyword_inputs for p in masked.programs] == [[], ["mask"]]
    with pytest.raises(
        hir.HirError,
        match=r"scale=3.0: a keyword that is not a tensor is a constant of the compiled program "
        r"\(example_kwargs: scale=2.0\)",
    ):
        masked(x, scale=3.0)


def test_llama_keyword_inputs():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    llama = transformers.LlamaForCausalLM(config).eval()
    ids, mask = torch.randint(0, 64, (2, 5)), torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    fn = hir.compile(llama, (ids,), device="cpu")
    with torch.no_grad():
        torch.testing.assert_close(fn(input_ids=ids).logits, llama(ids).logits)
        torch.testing.assert_close(fn(ids, attention_mask=mask).logits, llama(ids, attention_mask=mask).logits)
        masked = hir.compile(llama, (ids,), example_kwargs={"attention_mask": mask}, device="cpu")
        torch.testing.assert_close(masked(ids, attention_mask=mask).logits, llama(ids, attention_mask=mask).logits)


def test_compiled_program_takes_keyword_inputs():
    class Masked(torch.nn.Module):
        def forward(self, x, mask=None):
            return x * mask[..., None]

    x, mask = torch.randn(2, 4, 3), torch.rand(2, 4)
    program = hir.from_torch(Masked(), (x,), example_kwargs={"mask": mask})
    fn = program.compile({}, device="cpu")
    torch.testing.assert_close(fn(x, mask=mask), x * mask[..., None])
    torch.testing.assert_close(fn.run(x, mask=mask)[0], x * mask[..., None])
    torch.testing.assert_close(hir.compile(program, {}, device="cpu")(x, mask), x * mask[..., None])
    with pytest.raises(hir.HirError, match=r"the module's keyword inputs are \['mask'\]; got \['attention_mask'\]"):
        fn(x, attention_mask=mask)


def test_sizes_one_and_new_dtypes_get_programs_of_their_own_up_to_the_limit():
    model = mlp()
    fn = hir.compile(model, (torch.randn(8, 16),), device="cpu", recompile_limit=3)
    with torch.no_grad():
        for batch in (8, 3, 1, 6):  # 1 is specialised (as torch does): a static program
            x = torch.randn(batch, 16)
            torch.testing.assert_close(fn(x), model(x))
        assert [dynamic_axes(p) for p in fn.programs] == [[[]], [[0]], [[]]]
        with pytest.raises(
            hir.HirError,
            match=r"test_compiled_module.py:\d+: error: hir.compile\(Sequential\): "
            r"this call's inputs \(input0 \[8, 16\] float64\) need another program, over recompile_limit=3 \(compiled: "
            r"input0 \[8, 16\] float32; input0 \[3, 16\] float32; "
            r"input0 \[1, 16\] float32\); declare the varying dims dynamic",
        ):
            fn(torch.randn(8, 16, dtype=torch.float64))
    with pytest.raises(hir.HirError, match="recompile_limit must be a positive int, got 0"):
        hir.compile(model, (torch.randn(8, 16),), device="cpu", recompile_limit=0)
    with pytest.raises(
        hir.HirError, match=r"unknown option\(s\) speed \(options: .*recompile_limit"
    ):  # before importing anything
        hir.compile(model, (torch.randn(8, 16),), speed=11)


def test_a_dim_the_code_fixes_compiles_per_signature_with_one_warning():
    class Branches(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 4 else x - 1  # torch.export cannot keep dim 0 dynamic

    fn = hir.compile(Branches(), (torch.randn(8, 3),), device="cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch, want in [(6, 2.0), (3, -1.0), (7, 2.0)]:
            x = torch.ones(batch, 3)
            torch.testing.assert_close(fn(x), x * 2 if want == 2.0 else x - 1)
    assert len(fn.programs) == 4 and all(not any(p.dynamic_dims) for p in fn.programs)
    ours = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(ours) == 1 and "cannot be imported dynamic" in str(ours[0].message), [str(w.message) for w in ours]
    assert ours[0].filename == __file__  # the warning names the user's call


def test_declared_dims_stay_and_other_changes_compile_static_programs():
    model = sequence_model()
    fn = hir.compile(model, (torch.randn(2, 4, 16),), device="cpu", dynamic={"input0": {1: ("seq", 2, 8)}})
    with torch.no_grad():
        for batch, seq in [(2, 4), (2, 8), (3, 5)]:
            x = torch.randn(batch, seq, 16)
            torch.testing.assert_close(fn(x), model(x))
    assert [dynamic_axes(p) for p in fn.programs] == [[[1]], [[1]]]
    with pytest.raises(
        hir.HirError, match=r"input 0: dim 1 is dynamic dim seq, declared 2 <= seq <= 8 at import, got 9"
    ):
        fn(torch.randn(2, 9, 16))


@dataclasses.dataclass
class Pair:
    first: torch.Tensor
    second: torch.Tensor


class Structured(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        return y, {"twice": y * 2, "nothing": None, "pair": Pair(y + 1, x)}, [y.sum(), 3]


def test_results_have_the_modules_structure():
    torch.manual_seed(0)
    model = Structured().eval()
    x = torch.randn(2, 4)
    with torch.no_grad():
        want = model(x)
        for fn in (
            hir.compile(model, (x,), device="cpu"),
            hir.from_torch(model, (x,)).compile(model.state_dict(), device="cpu"),
        ):
            got = fn(x)
            assert (
                isinstance(got, tuple)
                and isinstance(got[1], dict)
                and isinstance(got[1]["pair"], Pair)
                and isinstance(got[2], list)
            )
            assert got[1]["nothing"] is None and got[2][1] == 3
            torch.testing.assert_close((got[0], got[1]["twice"], got[2][0]), (want[0], want[1]["twice"], want[2][0]))
            torch.testing.assert_close(dataclasses.astuple(got[1]["pair"]), dataclasses.astuple(want[1]["pair"]))
    program = hir.from_torch(model, (x,))
    assert isinstance(program.run(None, x), list) and isinstance(
        program.compile(device="cpu").run(x), list
    )  # the IR-level forms: lists


def test_a_model_output_and_its_cache():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
    )
    model = transformers.LlamaModel(config).eval()
    ids = torch.randint(0, 128, (2, 8))
    fn = hir.compile(model, (ids,), device="cpu")
    with torch.no_grad():
        got, want = fn(ids), model(ids)
    assert type(got) is type(want) and list(got.keys()) == list(want.keys())
    assert isinstance(got.past_key_values, transformers.DynamicCache)
    torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state)
    torch.testing.assert_close(got.past_key_values.layers[0].values, want.past_key_values.layers[0].values)


def test_a_replaced_parameter_is_bound_at_the_next_call():
    model = mlp()
    x = torch.randn(8, 16)
    fn = hir.compile(model, (x,), device="cpu")
    with torch.no_grad():
        fn(torch.randn(3, 16))  # two programs: both follow the module
        model[0].weight = torch.nn.Parameter(torch.randn(32, 16))
        torch.testing.assert_close(fn(x), model(x))
        torch.testing.assert_close(fn(x[:3]), model(x[:3]))
        model[2].bias.add_(1.0)  # written in place: the bound tensor itself
        torch.testing.assert_close(fn(x), model(x))
        model.double()  # new storage (and dtype) under the same Parameter objects
        with pytest.raises(hir.HirError, match=r"state entry '0.weight': expected dtype torch.float32"):
            fn(x.double())
        model.float()
        model[2].weight = torch.nn.Parameter(torch.randn(5, 32))
        with pytest.raises(
            hir.HirError, match=r"state entry '2.weight': expected a tensor of shape \[4, 32\], got \[5, 32\]"
        ):
            fn(x)


def test_a_backward_through_the_results_raises():
    model = mlp()
    x = torch.randn(8, 16)
    fn = hir.compile(model, (x,), device="cpu")
    y = fn(x)  # grad mode, parameters requiring grad (as after construction)
    assert y.requires_grad
    with pytest.raises(
        hir.HirError,
        match=r"test_compiled_module.py:\d+: error: hir.compile\(Sequential\): "
        r"a compiled module does not differentiate .* hir.train_step",
    ):
        y.pow(2).mean().backward()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    x.requires_grad_()
    with pytest.raises(hir.HirError, match="does not differentiate"):
        fn(x).sum().backward()
    with torch.no_grad():
        assert not fn(x).requires_grad
    assert not fn(x.detach()).requires_grad  # nothing requires grad: plain results
    torch.testing.assert_close(fn(x.detach()), model(x.detach()))
