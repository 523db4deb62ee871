"""``hir.generate`` over new cache-length buckets and batch sizes: each bucket imports its
own step (every dim static: the cheapest export; :mod:`hir.frontend.generators`), the
prefill is one import shared by every bucket (batch size, cache length and token count
dynamic), compiled on each bucket's cache tensors; the tokens equal HF's greedy ``generate``
in each bucket. A model whose prefill cannot be imported so gets a prefill per bucket and
still generates HF's tokens. A first call imports and compiles the decode program only: the
first prompt of a length is prefilled by PyTorch on its cache, the prefill program imported
and compiled at the second. (How long a new bucket takes is measured by
``benchmarks/generate_buckets.py``, the first call by ``benchmarks/first_call.py --engines
generate,hf-generate``, not here.)"""

import copy

import pytest
import torch

import generate_util
import hir
from hir.core import HirError
from hir.frontend import generators, import_cache, torch_import

PROMPT = [*generate_util.PROMPT, [9, 1, 4, 4, 2]]


def tiny_llama():
    """A fresh model per test (each counts its own imports); positions up to 512 (the largest bucket's 256)."""
    return generate_util.tiny("llama", max_position_embeddings=512)


def hf_greedy(model, ids, new, mask=None):
    with torch.no_grad():
        return model.generate(
            ids,
            attention_mask=torch.ones_like(ids) if mask is None else mask,
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
        )


@pytest.fixture
def imports(monkeypatch):
    """Every module ``cached_from_torch`` is asked to import (hit or miss), with its ``dynamic=``."""
    seen = []
    real = import_cache.cached_from_torch

    def counted(module, example_args, **options):
        seen.append((type(module).__name__, options.get("dynamic")))
        return real(module, example_args, **options)

    monkeypatch.setattr(import_cache, "cached_from_torch", counted)
    return seen


def programs_of(model, padded=False):
    return next(v for k, v in generators._GENERATORS[model].items() if k[0] == "programs" and k[2] == padded)


def test_each_bucket_imports_its_own_static_step_and_shares_the_prefill(imports):
    model = tiny_llama()
    prompt = torch.tensor(PROMPT)
    cases = [
        (prompt[:2], 8),
        (prompt[:2], 70),
        (prompt[:1], 8),
        (prompt, 130),
    ]  # buckets (2, 64), (2, 128), (1, 64), (3, 256)
    for ids, new in cases:
        for _ in range(2):  # the second prompt of its length runs the prefill program
            got = hir.generate(model, ids, max_new_tokens=new, do_sample=False)
            assert got.tolist() == hf_greedy(model, ids, new).tolist(), (ids.shape, new)
    # each bucket's step on its own shapes, every dim static (a dynamic export costs several
    # static ones); one prefill import, with the batch size and cache length dynamic, for all
    assert [name for name, _ in imports] == ["StaticCacheStep", "StaticCachePrefill"] + ["StaticCacheStep"] * 3
    assert [dims for name, dims in imports if name == "StaticCacheStep"] == [None] * 4
    assert imports[1][1]["step.value_cache_1"] == {0: "batch", 2: "cache"}
    made = [gen for key, gen in generators._GENERATORS[model].items() if key[0] != "programs"]
    assert sorted((key[0], key[1]) for key in generators._GENERATORS[model] if key[0] != "programs") == [
        (1, 64),
        (2, 64),
        (2, 128),
        (3, 256),
    ]
    assert len({id(gen.program) for gen in made}) == 4
    assert len({id(gen.prefill_program) for gen in made}) == 1 and programs_of(model).prefill_per_bucket is None
    assert "memref<2x2x128x8xf32>" in str(made[1].program.module)  # the cache of its bucket: static
    assert "memref<?x2x?x8xf32>" in str(made[1].prefill_program.module)  # batch and length dynamic


def test_a_bucket_compiled_with_other_options_reuses_its_import(imports, monkeypatch):
    """The decode programs are kept per shape: the same bucket with other compile options
    (another generator) compiles the import it already has, with the disk cache off too."""
    monkeypatch.setenv("HIR_CACHE_DIR", "off")
    model = tiny_llama()
    prompt = torch.tensor(PROMPT[:2])
    want = hf_greedy(model, prompt, 6).tolist()
    for options in (None, {"static_outputs": False}):
        assert hir.generate(model, prompt, max_new_tokens=6, do_sample=False, compile_options=options).tolist() == want
    made = [gen for key, gen in generators._GENERATORS[model].items() if key[0] != "programs"]
    assert [name for name, _ in imports] == ["StaticCacheStep"] and len(made) == 2
    assert made[0].program is made[1].program and made[0].fn is not made[1].fn


def test_a_first_call_imports_and_compiles_the_decode_program_only(imports, monkeypatch):
    """The first prompt of a length is prefilled by PyTorch (HF's eager prefill) on the decode
    program's cache: a first call imports and compiles one program. The second prompt of
    that length imports and compiles the prefill program; a new length is prefilled by
    PyTorch again (the program's regions compile per length). HF's tokens every time."""
    compiled = []
    real = torch_import.TorchProgram.compile

    def counted(self, *args, **options):
        compiled.append(self)
        return real(self, *args, **options)

    monkeypatch.setattr(torch_import.TorchProgram, "compile", counted)
    model = tiny_llama()
    prompt = torch.tensor(PROMPT[:2])
    for ids, imported in (
        (prompt, ["StaticCacheStep"]),
        (prompt, ["StaticCacheStep", "StaticCachePrefill"]),
        (prompt[:, :3], ["StaticCacheStep", "StaticCachePrefill"]),
    ):
        got = hir.generate(model, ids, max_new_tokens=6, do_sample=False)
        assert got.tolist() == hf_greedy(model, ids, 6).tolist(), ids.shape
        assert [name for name, _ in imports] == imported
        gen = generators.generator(model, 2, ids.shape[1] + 6)
        if len(imported) == 1:
            assert compiled == [gen.program] and gen.prefill_fn is None and gen.prefill_lengths == {5}
    assert compiled == [gen.program, gen.prefill_program] and gen.prefill_lengths == {5, 3}
    assert (
        gen.prefill_fn is not None
        and gen.prefill_fn.state["step.key_cache_0"].data_ptr() == gen.fn.state["key_cache_0"].data_ptr()
    )


def test_a_first_call_exports_the_step_once_with_one_token_per_row(monkeypatch, imports):
    """The first call's one export (torch.export) is the decode step's, on its own shapes
    with one token per row, what each decode step runs: every dim static (each dynamic dim
    multiplies the export's symbolic-shape work)."""
    from hir.frontend import export

    monkeypatch.setenv("HIR_CACHE_DIR", "off")
    exported = []
    real = export.functional_export

    def counted(module, *args, **kwargs):
        exported.append(type(module.inner).__name__)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(export, "functional_export", counted)
    model = tiny_llama()
    prompt = torch.tensor(PROMPT[:2])
    got = hir.generate(model, prompt, max_new_tokens=6, do_sample=False)
    assert got.tolist() == hf_greedy(model, prompt, 6).tolist()
    assert exported == ["StaticCacheStep"] and programs_of(model).prefill_per_bucket is None
    assert imports[0][1] is None


def test_a_model_the_eager_prefill_refuses_at_its_call(imports):
    """A layer whose attention bypasses transformers' AttentionInterface (its own copy of the
    config) is found by the eager prefill's call: warned once, the prompt runs the decode
    program (which writes the same cache positions again); HF's tokens."""
    model = tiny_llama()
    attention = model.model.layers[1].self_attn
    attention.config = copy.copy(attention.config)
    prompt = torch.tensor(PROMPT[:2])
    with pytest.warns(RuntimeWarning, match=r"causal prefill module refused the model.*1 of its 2 attention layers"):
        got = hir.generate(model, prompt, max_new_tokens=6, do_sample=False)
    assert got.tolist() == hf_greedy(model, prompt, 6).tolist()
    again = hir.generate(model, prompt, max_new_tokens=6, do_sample=False)
    # the decode steps' program takes one token per row: the refused prompt imports the one of any count
    assert again.tolist() == got.tolist() and [name for name, _ in imports] == ["StaticCacheStep", "StaticCacheStep"]
    assert imports[0][1] is None and imports[1][1] == {"input0": {1: "tokens"}, "input1": {0: "tokens"}}
    assert programs_of(model).prefill_refused is not None


def test_a_left_padded_batch_in_new_buckets(imports):
    model = tiny_llama()
    rows = [[3, 17, 42, 9, 11], [5, 6], [7, 8, 120]]
    width = max(len(r) for r in rows)
    ids = torch.tensor([[0] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    for take, new in ((3, 6), (2, 70)):
        got = hir.generate(model, ids[:take], attention_mask=mask[:take], max_new_tokens=new, do_sample=False)
        assert got.tolist() == hf_greedy(model, ids[:take], new, mask[:take]).tolist(), (take, new)
    # a padded batch prefills through the decode program: each bucket's takes any token count (its only dynamic dim)
    assert [name for name, _ in imports] == ["StaticCacheStep", "StaticCacheStep"]
    assert [dims for _, dims in imports] == [
        {"input0": {1: "tokens"}, "input1": {0: "tokens"}, "input3": {1: "tokens"}}
    ] * 2


@pytest.mark.slow  # four imports
def test_a_prefill_without_dynamic_shapes_is_imported_per_bucket(monkeypatch, imports):
    """Where the prefill's export with the batch and cache length dynamic fails (a model whose
    code fixes them), each bucket imports the prefill with its own shapes; HF's tokens still."""
    counted = import_cache.cached_from_torch

    def failing(module, example_args, **options):
        if "step.key_cache_0" in (options.get("dynamic") or {}):
            imports.append(("refused", None))
            raise HirError("error: torch.export cannot trace StaticCachePrefill: Constraints violated (cache) (test)")
        return counted(module, example_args, **options)

    monkeypatch.setattr(import_cache, "cached_from_torch", failing)
    model = tiny_llama()
    prompt = torch.tensor(PROMPT[:2])
    for new in (8, 70):
        for _ in range(2):  # the second prompt of its length imports the prefill program
            got = hir.generate(model, prompt, max_new_tokens=new, do_sample=False)
            assert got.tolist() == hf_greedy(model, prompt, new).tolist(), new
    assert (
        programs_of(model).prefill_per_bucket
        == "error: torch.export cannot trace StaticCachePrefill: Constraints violated (cache) (test)"
    )
    assert [name for name, _ in imports] == [
        "StaticCacheStep",  # each bucket's own (static): no dynamic dims to refuse
        "refused",  # the shared prefill (at the second prompt of its length)
        "StaticCachePrefill",
        "StaticCacheStep",
        "StaticCachePrefill",
    ]
