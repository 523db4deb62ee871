"""The optim group on one process (CPU): hir.adam_update written by hand runs torch's own
Adam / AdamW implementation (fused, foreach, single-tensor) on its lists in place, equal to
torch.optim's step bit for bit, with lr read from its buffer at every run and the other
hyper-parameters from the op's attributes; the passes see what it writes."""

import pytest
import torch

import hir
from hir.dialect.irutils import written_operands
from interp_util import program, run

SHAPES = ([16, 8], [16])
CONSTANTS = {"beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "weight_decay": 0.1}


def _attributes(kind: str, kernel: str, n: int, constants: dict) -> str:
    numbers = ", ".join(f"{k} = {float(v):.16e} : f64" for k, v in constants.items())
    segments = f"array<i32: {n}, {n}, {n}, {n}, {n}, 1>"
    return f'{{operandSegmentSizes = {segments}, kind = "{kind}", kernel = "{kernel}", {numbers}}}'


def _text(kind: str, kernel: str, constants: dict = CONSTANTS) -> str:
    refs = {name: [f"%{name}{i}" for i in range(len(SHAPES))] for name in ("p", "g", "m", "v")}
    types = [f"memref<{'x'.join(map(str, s))}xf32>" for s in SHAPES]
    args = [f"{r}: {t}" for name in refs for r, t in zip(refs[name], types)] + [
        f"%s{i}: memref<f32>" for i in range(len(SHAPES))
    ]
    args += ["%lr: memref<f64>"]
    casts = [f"  {r}_ = memref.cast {r} : {t} to memref<*xf32>" for name in refs for r, t in zip(refs[name], types)]
    operands = [f"{r}_" for name in refs for r in refs[name]] + [f"%s{i}" for i in range(len(SHAPES))] + ["%lr"]
    n = len(SHAPES)
    signature = ", ".join(["memref<*xf32>"] * 4 * n + ["memref<f32>"] * n + ["memref<f64>"])
    return (
        f"func.func @main({', '.join(args)}) {{\n" + "\n".join(casts) + "\n"
        f'  "hir.adam_update"({", ".join(operands)}) {_attributes(kind, kernel, n, constants)} : ({signature}) -> ()\n'
        "  return\n}"
    )


@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("kernel", ["fused", "foreach", "single"])
def test_adam_update_is_torch_step(kind, kernel):
    """Three steps of the op against torch.optim.Adam(W) with that kernel on equal tensors
    (the same gradients): parameters, moments and step counts equal bit for bit."""
    torch.manual_seed(0)
    params = [torch.randn(s) for s in SHAPES]
    ref = [torch.nn.Parameter(p.clone()) for p in params]
    flags = {"fused": True} if kernel == "fused" else {"foreach": kernel == "foreach"}
    ref_opt = (torch.optim.AdamW if kind == "adamw" else torch.optim.Adam)(
        ref, lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, **flags
    )
    moments = [[torch.zeros(s) for s in SHAPES] for _ in range(2)]
    steps = [torch.zeros(()) for _ in SHAPES]
    lr = torch.tensor(1e-2, dtype=torch.float64)
    compiled = program(_text(kind, kernel))
    for _ in range(3):
        grads = [torch.randn(s) for s in SHAPES]
        assert compiled([*params, *grads, *moments[0], *moments[1], *steps, lr]) == []
        for r, g in zip(ref, grads):
            r.grad = g.clone()
        ref_opt.step()
    for i, r in enumerate(ref):
        state = ref_opt.state[r]
        assert torch.equal(params[i], r.detach())
        assert torch.equal(moments[0][i], state["exp_avg"]) and torch.equal(moments[1][i], state["exp_avg_sq"])
        assert steps[i].item() == state["step"].item() == 3


def test_adam_update_reads_hyper_parameters_each_call():
    """A changed lr (an LR scheduler's) is read by the next run of the same program (a first
    step moves each element by lr: Adam's bias-corrected update of a constant gradient)."""
    p, g = torch.ones(16, 8), torch.ones(16, 8)
    text = _text("adamw", "single", {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0})

    def args(lr: float) -> list:  # the moments and step counts fresh (a first step), the parameter p the same
        moments = [torch.zeros(16, 8), torch.zeros(16), torch.zeros(16, 8), torch.zeros(16)]
        return [
            p,
            torch.ones(16),
            g,
            torch.ones(16),
            *moments,
            torch.zeros(()),
            torch.zeros(()),
            torch.tensor(lr, dtype=torch.float64),
        ]

    compiled = program(text)
    compiled(args(0.5))
    assert torch.allclose(p, torch.full((16, 8), 0.5))
    compiled(args(0.0))
    assert torch.allclose(p, torch.full((16, 8), 0.5))
    run(text, args(0.25))
    assert torch.allclose(p, torch.full((16, 8), 0.25))


def test_written_operands_are_the_updated_lists():
    """The op declares what it writes: params, exp_avgs, exp_avg_sqs and steps, not the
    gradients or lr (deallocation, stream and recompute passes read it)."""
    module = hir.parse(_text("adamw", "fused"), "test.mlir")
    op = next(
        o for o in module.body.operations[0].regions[0].blocks[0].operations if o.operation.name == "hir.adam_update"
    ).operation
    n = len(SHAPES)
    assert written_operands(op) == (*range(0, n), *range(2 * n, 5 * n))


@pytest.mark.parametrize("kernel", ["fused", "foreach", "single"])
def test_a_transposed_gradient(kernel):
    """A gradient the program holds as a transposed view (a strided memref) updates its
    parameter as the same gradient laid out like it does (the fused kernel reads flat arrays)."""
    torch_defaults = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-2}
    strided = "memref<16x8xf32, strided<[1, 16]>>"
    text = f"""func.func @main(%p: memref<16x8xf32>, %g: {strided}, %m: memref<16x8xf32>, %v: memref<16x8xf32>,
    %s: memref<f32>, %lr: memref<f64>) {{
  %p_ = memref.cast %p : memref<16x8xf32> to memref<*xf32>
  %g_ = memref.cast %g : {strided} to memref<*xf32>
  %m_ = memref.cast %m : memref<16x8xf32> to memref<*xf32>
  %v_ = memref.cast %v : memref<16x8xf32> to memref<*xf32>
  "hir.adam_update"(%p_, %g_, %m_, %v_, %s, %lr) {_attributes("adamw", kernel, 1, torch_defaults)}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}}"""
    torch.manual_seed(0)
    param, grad = torch.randn(16, 8), torch.randn(8, 16).t()
    ref = torch.nn.Parameter(param.clone())
    ref.grad = grad.contiguous()
    flags = {"fused": True} if kernel == "fused" else {"foreach": kernel == "foreach"}
    torch.optim.AdamW([ref], lr=1e-2, **flags).step()
    run(
        text,
        [param, grad, torch.zeros(16, 8), torch.zeros(16, 8), torch.zeros(()), torch.tensor(1e-2, dtype=torch.float64)],
    )
    assert torch.equal(param, ref.detach())
