"""A CUDA training step's flash attention (ATen's forward and backward, which pass undefined
``cum_seq`` tensors between them) rewritten into torch.ops.hir.flash_attention(_backward):
the rewrite on the graph make_fx traces on fake CUDA tensors, the rewritten graph run on the
CPU against SDPA's autograd, and the ops through the FX importer and the interpreter."""

import operator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import hir
from hir.frontend.flash_rewrite import flash_attention_ops

aten = torch.ops.aten
SCALE = 0.3


def attention_and_gradient(q, k, v, grad):
    """What autograd records for SDPA's flash backend on CUDA: the forward, then its backward
    taking the forward's results (the undefined cum_seq ones as None)."""
    r = aten._scaled_dot_product_flash_attention.default(q, k, v, 0.0, True, scale=SCALE)
    grads = aten._scaled_dot_product_flash_attention_backward.default(
        grad, q, k, v, r[0], r[1], r[2], r[3], r[4], r[5], 0.0, True, r[6], r[7], scale=SCALE
    )
    return (r[0], *grads)


def cuda_graph() -> torch.fx.GraphModule:
    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 8, device="cuda", dtype=torch.bfloat16)
        return make_fx(attention_and_gradient, tracing_mode="fake")(q, q.clone(), q.clone(), q.clone())


def targets(gm: torch.fx.GraphModule) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]


def test_the_flash_pair_becomes_the_hir_ops_with_defined_tensors_only():
    gm = cuda_graph()
    assert targets(gm) == [
        aten._scaled_dot_product_flash_attention.default,
        aten._scaled_dot_product_flash_attention_backward.default,
    ]
    assert flash_attention_ops(gm.graph) == 1
    gm.graph.lint()
    assert targets(gm) == [torch.ops.hir.flash_attention.default, torch.ops.hir.flash_attention_backward.default]
    for node in gm.graph.nodes:  # every value the importer types is a tensor (no None, no philox state)
        if node.op == "call_function":
            vals = node.meta["val"] if isinstance(node.meta["val"], tuple) else (node.meta["val"],)
            assert all(isinstance(v, torch.Tensor) and v.device.type == "cuda" for v in vals), node
    gm.recompile()
    torch.manual_seed(0)
    q, k, v, grad = (torch.randn(2, 4, 16, 8) for _ in range(4))  # the same graph, run on the CPU
    out, *grads = gm(q, k, v, grad)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True, scale=SCALE)
    torch.testing.assert_close(out, expected.detach())
    for got, want in zip(grads, torch.autograd.grad(expected, leaves, grad)):
        torch.testing.assert_close(got, want)


def test_dropout_leaves_the_pair_alone():
    def with_dropout(q, k, v, grad):
        r = aten._scaled_dot_product_flash_attention.default(q, k, v, 0.1, True)
        return aten._scaled_dot_product_flash_attention_backward.default(
            grad, q, k, v, r[0], r[1], r[2], r[3], r[4], r[5], 0.1, True, r[6], r[7]
        )

    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 8, device="cuda", dtype=torch.bfloat16)
        gm = make_fx(with_dropout, tracing_mode="fake")(q, q.clone(), q.clone(), q.clone())
    assert flash_attention_ops(gm.graph) == 0
    assert aten._scaled_dot_product_flash_attention.default in targets(gm)


class Attention(torch.nn.Module):
    def forward(self, q, k, v, grad):
        out, lse = torch.ops.hir.flash_attention(q, k, v, True, scale=SCALE)
        return out, *torch.ops.hir.flash_attention_backward(grad, q, k, v, out, lse, True, scale=SCALE)


def test_the_hir_ops_import_and_run_in_the_interpreter():
    torch.manual_seed(0)
    args = tuple(torch.randn(2, 4, 16, 8) for _ in range(4))
    program = hir.from_torch(Attention(), args)
    assert "hir.flash_attention_backward" in str(program.module)
    for got, want in zip(program.run({}, *args), Attention()(*args)):
        torch.testing.assert_close(got, want)
