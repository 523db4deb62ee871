"""Regional compilation (:mod:`hir.interpreter.repeats`): a compute region cut where it
repeats, each distinct piece traced and compiled once. A model's identical layers (forward
and backward of a training step) compile once, and the cut program computes what the whole
region does (the same ops; inductor's fusions across a cut differ, so the last bits may),
which equals eager PyTorch step by step."""

import copy

import pytest
import torch

import hir
from hir.interpreter import Program
from hir.interpreter.repeats import MIN_UNIT, repeated_units
from training_util import TOL, assert_same_training, eager_step, optimizer, steps_equal_eager, twins

LAYERS = 4


def test_repeated_units_are_back_to_back_repeats():
    unit = list("abcde")
    keys = ["head", *unit * 3, "tail"]
    assert repeated_units(keys, [MIN_UNIT] * len(keys)) == [(1, 6), (6, 11), (11, 16)]
    # one unit alone, or units of too few compute ops, do not repeat: no cut
    assert repeated_units(["head", *unit, "tail", *unit], [MIN_UNIT] * 12) == []
    assert repeated_units(list("abc") * 5, [1] * 15) == []


T = "memref<8x16xf32>"


def repeated_module(units: int) -> str:
    """``units`` identical layers of four ``hir.binary`` ops: x <- (x * w + x) * w - x * w."""
    body, x = [], "%x"
    for i in range(units):
        names = [f"%a{i}", f"%b{i}", f"%c{i}", f"%y{i}"]
        body += [f"  {n} = memref.alloc() : {T}" for n in names]
        for kind, lhs, rhs, out in [("mul", x, "%w", 0), ("add", names[0], x, 1), ("mul", names[1], "%w", 2)]:
            body.append(f'  "hir.binary"({lhs}, {rhs}, {names[out]}) {{kind = "{kind}"}} : ({T}, {T}, {T}) -> ()')
        body.append(f'  "hir.binary"({names[2]}, {names[0]}, {names[3]}) {{kind = "sub"}} : ({T}, {T}, {T}) -> ()')
        x = names[3]
    return f"func.func @main(%x: {T}, %w: {T}) -> {T} {{\n" + "\n".join(body) + f"\n  return {x} : {T}\n}}"


def test_a_regions_repeated_layers_compile_once_and_equal_op_by_op():
    x, w = torch.randn(8, 16), torch.rand(8, 16) * 0.5
    module = repeated_module(4)
    (want,) = Program(hir.parse(module), device="cpu", compile_kernels=False)([x, w])
    cut = Program(hir.parse(module), device="cpu", compile_kernels=True)
    whole = Program(hir.parse(module), device="cpu", compile_kernels=True, regional=False)
    for program in (cut, whole):
        torch.testing.assert_close(program([x, w])[0], want)
    stats = cut.kernel_compile
    # one piece per layer; the last layer's result is returned (made contiguous where the plan
    # binds it): the plan differs there, so that piece compiles on its own
    assert (stats.regions, stats.repeats, stats.compiles, stats.fallbacks) == (4, 2, 2, 0), stats.summary()
    assert (whole.kernel_compile.regions, whole.kernel_compile.compiles) == (1, 1)


class Block(torch.nn.Module):
    """x + fc2(gelu(fc1(norm(x)))): a pre-norm MLP layer."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.fc1, self.fc2 = torch.nn.Linear(width, 2 * width), torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


def squared_loss(model, x):
    return model(x).square().mean()


def train(regional: bool, batches: list) -> tuple:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block() for _ in range(LAYERS)])
    ref = copy.deepcopy(model)
    opt, ref_opt = optimizer("adamw-fused", model), optimizer("adamw-fused", ref)
    step = hir.train_step(model, opt, squared_loss, batches[0], compile_kernels=True, regional=regional)
    losses = []
    for i, batch in enumerate(batches):
        losses.append(step(*batch))
        want = eager_step(ref, ref_opt, squared_loss, batch)
        torch.testing.assert_close(
            losses[-1], want, rtol=TOL["rtol"], atol=TOL["atol"], msg=lambda m, i=i: f"step {i + 1}: {m}"
        )
    assert_same_training(model, opt, ref, ref_opt)
    ((compiled, _),) = step._compiled.values()
    return losses, model, compiled.kernel_compile


@pytest.mark.slow
def test_identical_layers_compile_once_and_equal_the_whole_region():
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 8, generator=g),) for _ in range(3)]
    losses, model, stats = train(True, batches)
    whole_losses, whole_model, whole = train(False, batches)
    assert whole.regions == 1 and whole.compiles == 1, whole.summary()
    # the forward's layers and the backward's: one piece each, compiled once for all layers
    assert stats.regions >= 2 * LAYERS and stats.repeats >= 2 * (LAYERS - 2), stats.summary()
    assert stats.compiles == stats.regions - stats.repeats and stats.fallbacks == 0, stats.summary()
    # the same ops; inductor fuses them otherwise across a cut (a sum's order: last bits)
    torch.testing.assert_close(torch.stack(losses), torch.stack(whole_losses), rtol=1e-6, atol=0)
    for (name, p), q in zip(model.named_parameters(), whole_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.slow
def test_a_decode_steps_layers_compile_once():
    from generate_util import tiny
    from hir.frontend.hf_decode import StaticCacheStep

    step = StaticCacheStep(tiny("llama", num_hidden_layers=LAYERS), batch_size=1, max_cache_len=16)
    program = hir.from_torch(step, (torch.tensor([[1]]), torch.tensor([0])))
    runs = {}
    for regional in (True, False):
        ours, ref = copy.deepcopy(step), copy.deepcopy(step)
        fn = program.compile(program.state(ours), device="cpu", graph=False, compile_kernels=True, regional=regional)
        logits = []
        for position, token in enumerate([3, 17, 42]):
            ids, pos = torch.tensor([[token]]), torch.tensor([position])
            logits.append(fn(ids, pos))
            with torch.no_grad():
                torch.testing.assert_close(logits[-1], ref(ids, pos), rtol=1e-4, atol=1e-4)
        runs[regional] = logits, fn.kernel_compile
    (cut, stats), (whole, whole_stats) = runs[True], runs[False]
    # each layer's decode: one piece, traced and compiled once (uncut: the layers in one region)
    assert stats.repeats >= LAYERS - 2 and stats.compiles == stats.regions - stats.repeats, stats.summary()
    assert whole_stats.regions < stats.regions and stats.fallbacks == 0, (stats.summary(), whole_stats.summary())
    for got, want in zip(cut, whole):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


M = "memref<8x8xf32>"


def forward_backward_module(layers: int, update_w: bool = False) -> str:
    """``layers`` forward units (a = x * w, b = a + x, c = b @ m, x' = c * w), then their
    backward units in reverse (g = ((g @ m) * b + x) * a), each reading its forward unit's
    x, a and b; ``update_w``: w doubled in place between the two."""
    body, xs, x = [], [], "%x"

    def op(kind: str, lhs: str, rhs: str, out: str) -> None:
        body.append(f"  {out} = memref.alloc() : {M}")
        if kind == "matmul":
            body.append(f'  "hir.matmul"({lhs}, {rhs}, {out}) : ({M}, {M}, {M}) -> ()')
        else:
            body.append(f'  "hir.binary"({lhs}, {rhs}, {out}) {{kind = "{kind}"}} : ({M}, {M}, {M}) -> ()')

    for i in range(layers):
        xs.append(x)
        op("mul", x, "%w", f"%a{i}")
        op("add", f"%a{i}", x, f"%b{i}")
        op("matmul", f"%b{i}", "%m", f"%c{i}")
        op("mul", f"%c{i}", "%w", f"%x{i + 1}")
        x = f"%x{i + 1}"
    if update_w:
        body.append(f'  "hir.binary"(%w, %w, %w) {{kind = "add"}} : ({M}, {M}, {M}) -> ()')
    g = x
    for i in reversed(range(layers)):
        op("matmul", g, "%m", f"%g{i}")
        op("mul", f"%g{i}", f"%b{i}", f"%h{i}")
        op("add", f"%h{i}", xs[i], f"%k{i}")
        op("mul", f"%k{i}", f"%a{i}", f"%d{i}")
        body.append(f"  memref.dealloc %a{i} : {M}")
        body.append(f"  memref.dealloc %b{i} : {M}")
        g = f"%d{i}"
    return f"func.func @main(%x: {M}, %w: {M}, %m: {M}) -> {M} {{\n" + "\n".join(body) + f"\n  return {g} : {M}\n}}"


def variant(name: str) -> str:
    """:func:`forward_backward_module` of 3 layers (4 for ``swapped``), changed as ``name`` says."""
    if name == "swapped":  # layer 1's backward reads a and b where layer 2's reads b and a
        module = forward_backward_module(4)
        module = module.replace('"hir.binary"(%g1, %b1, %h1)', '"hir.binary"(%g1, %a1, %h1)')
        return module.replace('"hir.binary"(%k1, %a1, %d1)', '"hir.binary"(%k1, %b1, %d1)')
    lines = forward_backward_module(3, update_w=name in ("update_w", "hoisted")).split("\n")
    backward = next(i for i, line in enumerate(lines) if "%g2 = memref.alloc" in line)
    if name == "write_a":  # a0 += w after its forward
        lines.insert(backward, f'  "hir.binary"(%a0, %w, %a0) {{kind = "add"}} : ({M}, {M}, {M}) -> ()')
    if name == "hoisted":  # the last backward's first allocation above the write of w
        update = next(i for i, line in enumerate(lines) if '"hir.binary"(%w, %w, %w)' in line)
        lines.insert(update, lines.pop(backward))
    return "\n".join(lines)


# (variant, writes recomputed): with w written in between, a = x * w is not recomputed (it
# would come out otherwise), b = a + x is, in layers 1 and 2 (the write is a piece between the
# last forward and its backward), not in layer 0, whose x is an argument (which may be w
# itself: a write of any argument counts); a hoisted allocation does not hide that write; a0
# written after its forward is not recomputed, nor b0, which reads it, while layers 1 and 2
# are (the write is a piece of its own); pieces reading recomputed values in other places
# do not share a compile.
CASES = [("plain", 4), ("update_w", 2), ("write_a", 4), ("hoisted", 2), ("swapped", 6)]


@pytest.mark.parametrize(("name", "recomputed"), CASES)
def test_a_backward_piece_recomputes_its_forwards_elementwise_values(name, recomputed):
    """Cut at its layers, the backward piece of a layer runs the forward's ``a = x * w`` and
    ``b = a + x`` again from ``x`` (which it reads itself) and the argument ``w``, rather than
    take ``a`` and ``b`` from the forward piece (rematerialize.py), except for the last layer,
    whose backward runs right after its forward, and except where that would compute
    something else (:data:`CASES`); the op-by-op run says what is right."""
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(8, 8, generator=g) for _ in range(3)]
    module = variant(name)
    (want,) = Program(hir.parse(module), device="cpu", compile_kernels=False)([a.clone() for a in args])
    cut = Program(hir.parse(module), device="cpu", compile_kernels=True)
    torch.testing.assert_close(cut([a.clone() for a in args])[0], want, rtol=1e-5, atol=0)
    stats = cut.kernel_compile
    assert stats.recomputed == recomputed, stats.summary()
    if name == "plain":  # the first two forward pieces share a compile (the last backward piece
        # returns the result, so its plan differs from the one before it)
        assert (stats.regions, stats.repeats, stats.fallbacks) == (6, 1, 0), stats.summary()


@pytest.mark.slow
def test_a_llamas_regional_step_recomputes_at_the_cuts_and_equals_eager():
    """``hir.train_step``'s default on a tiny Llama, compiled: the first layer's backward
    piece recomputes its forward's norm and casts (rematerialize.py), and 3 AdamW steps
    equal eager PyTorch's."""
    model, opt, ref, ref_opt, loss_fn, batches = twins("llama", "adamw")
    step = hir.train_step(model, opt, loss_fn, batches(1)[0], compile_kernels=True)
    assert steps_equal_eager(step, loss_fn, batches(3), model, opt, ref, ref_opt, "llama") == ""
    assert_same_training(model, opt, ref, ref_opt)
    ((compiled, _),) = step._compiled.values()
    stats = compiled.kernel_compile
    assert stats.recomputed > 0 and stats.fallbacks == 0, stats.summary()
