"""Handlers of the compute group: ops in destination-passing style, each one torch call writing into its output
(``out=`` or ``copy_``). The ``stream_axis`` annotation needs no run-time work: an op not yet
stream-lowered simply computes its whole output on the current stream."""

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch_mlir import ir
from torch_mlir.dialects import memref

from hir.dialect import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp
from hir.dialect.base import required_i64_array, required_str
from hir.dialect.compute import accumulates
from hir.interpreter import decode_kernels
from hir.interpreter.generated import torch_call_step
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl, register_impls

_FLOAT_BINARY: dict[str, Callable] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
}


def _rank(c: Compiler, value: ir.Value) -> int:
    return len(c.spec(value).shape)


def _matmul_into(vector_a: bool, vector_b: bool) -> Callable:
    """``out = a @ b`` with torch.matmul's vector rules. torch.matmul(out=) computes a vector
    operand's product as a matrix and resizes ``out`` to it, which would detach a view from
    its parent buffer; lifting vectors to matrices and ``out`` to the matching view avoids it.
    Decided at compile time, so the common matrix case stays a single call."""
    if not (vector_a or vector_b):
        return lambda a, b, out: torch.matmul(a, b, out=out)

    def lifted(a, b, out):
        # b first: with two vectors out is 0-D and becomes [1] then [1, 1].
        if vector_b:
            b, out = b.unsqueeze(-1), out.unsqueeze(-1)
        if vector_a:
            a, out = a.unsqueeze(0), out.unsqueeze(-2)
        torch.matmul(a, b, out=out)

    return lifted


def _matmul_accumulate(a: int, b: int, o: int, ranks: list) -> Step:
    """``out += a @ b`` in the GEMM's epilogue: ``addmm_`` for matrices, ``baddbmm_`` for
    equal-rank-3 batches (broadcast batches expanded, no copy); other ranks add a product."""
    if ranks == [2, 2, 2]:

        def addmm_step(env: list) -> None:
            env[o].addmm_(env[a], env[b])

        return addmm_step
    if ranks == [3, 3, 3]:

        def baddbmm_step(env: list) -> None:
            out = env[o]
            batch = out.shape[0]
            out.baddbmm_(env[a].expand(batch, -1, -1), env[b].expand(batch, -1, -1))

        return baddbmm_step

    def add_product_step(env: list) -> None:
        env[o].add_(torch.matmul(env[a], env[b]))

    return add_product_step


def _fresh(c: Compiler, op: ir.OpView, fn: Callable, operands: list[int], keywords: dict | None = None) -> Step | None:
    """The step of a compute op whose output allocation is bound to its result
    (:func:`hir.interpreter.destinations.fresh_output`): ``fn(*operands, **keywords)``
    becomes the buffer, made contiguous where the buffer's uses need it; None when the
    output is not bound."""
    bound = c.bound_operands(op)
    if not bound:
        return None
    ((index, bind),) = bound
    run = _contiguous(fn) if bind.contiguous else fn
    return torch_call_step(
        run,
        [None] * len(operands),
        keywords or {},
        list(enumerate(operands)),
        [],
        [c.use(op.operation.operands[index])],
    )


def _contiguous(fn: Callable) -> Callable:
    """``fn`` with its result made contiguous when it is not (a buffer something views,
    returns or communicates keeps its row-major layout)."""

    def contiguous_result(*args, **kwargs):
        result = fn(*args, **kwargs)
        return result if result.is_contiguous() else result.contiguous()

    return contiguous_result


def _small_m_linear(c: Compiler, op: ir.OpView, x: int, w: int, o: int) -> Step:
    """``hir.linear`` without a bias through ``hir::small_m_linear`` (a GEMV-shaped product,
    :mod:`hir.interpreter.decode_kernels`)."""
    kernel = decode_kernels.small_m_linear_op()
    decode_kernels.planned(c.runtime)
    step = _fresh(c, op, kernel, [x, w])
    if step is not None:
        return step

    def linear_small_m(env: list) -> None:
        out = env[o]
        out.copy_(kernel(env[x], env[w]).view(out.shape))

    return linear_small_m


@register_impls
class ComputeImpls:
    @impl(SetOp, memref.CopyOp)  # the same copy
    def set_op(self, c: Compiler, op: ir.OpView) -> Step | None:
        src, dst = c.uses(op)

        def set_step(env: list) -> None:
            env[dst].copy_(env[src])

        return set_step

    @impl(BinaryOp)
    def binary(self, c: Compiler, op: ir.OpView) -> Step | None:
        a, b, o = c.uses(op)
        kind = required_str(op, "kind")
        dtype = c.spec(op.operation.operands[2]).dtype
        int_div = kind == "div" and not dtype.is_floating_point
        fn = _FLOAT_BINARY[kind]
        # Integer division follows arith.divsi (toward zero); torch.div would produce floats.
        step = _fresh(c, op, torch.div, [a, b], {"rounding_mode": "trunc"}) if int_div else _fresh(c, op, fn, [a, b])
        if step is not None:
            return step
        if int_div:

            def int_div_step(env: list) -> None:
                torch.div(env[a], env[b], rounding_mode="trunc", out=env[o])

            return int_div_step

        def binary_step(env: list) -> None:
            fn(env[a], env[b], out=env[o])

        return binary_step

    @impl(ReductionOp)
    def reduction(self, c: Compiler, op: ir.OpView) -> Step | None:
        src, dst = c.uses(op)
        kind = required_str(op, "kind")
        axes = required_i64_array(op, "axes")
        dims = tuple(axes)
        if kind == "prod" and len(axes) > 1:
            # torch.prod reduces one axis at a time; reduce the highest axes first so the
            # remaining axis numbers stay valid, then write the result once.
            order = sorted(axes, reverse=True)

            def prod_many(env: list) -> None:
                t = env[src]
                for axis in order:
                    t = torch.prod(t, axis)
                env[dst].copy_(t)

            return prod_many
        if kind == "prod":
            (axis,) = axes

            def prod_one(env: list) -> None:
                torch.prod(env[src], axis, out=env[dst])

            return prod_one
        fn = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[kind]

        def reduce_step(env: list) -> None:
            fn(env[src], dims, out=env[dst])

        return reduce_step

    @impl(MatmulOp)
    def matmul(self, c: Compiler, op: ir.OpView) -> Step | None:
        a, b, o = c.uses(op)
        operands = op.operation.operands
        if accumulates(op.operation):
            return _matmul_accumulate(a, b, o, [_rank(c, v) for v in operands])
        step = _fresh(c, op, torch.matmul, [a, b])
        if step is not None:
            return step
        product = _matmul_into(_rank(c, operands[0]) == 1, _rank(c, operands[1]) == 1)
        out_spec = c.spec(operands[2])
        if not out_spec.contiguous and len(out_spec.shape) >= 3:
            # torch.matmul(out=) rejects a batched output whose batch does not fold into its
            # rows (e.g. an alias_chunk of an inner axis): compute, then copy in.
            def matmul_strided(env: list) -> None:
                out = env[o]
                if out.is_contiguous():
                    product(env[a], env[b], out)
                else:
                    out.copy_(torch.matmul(env[a], env[b]))

            return matmul_strided

        def matmul_step(env: list) -> None:
            product(env[a], env[b], env[o])

        return matmul_step

    @impl(LinearOp)
    def linear(self, c: Compiler, op: ir.OpView) -> Step | None:
        """``output = input @ weight.T (+ bias)``; torch's linear has no ``out=``, so this uses
        addmm for 2-D inputs with a bias and matmul (+ add_) otherwise. A 1-D input or weight is
        a stream slice of M or N (see _matmul_into)."""
        slots = c.uses(op)
        x, w, o = slots[:3]
        bias = slots[3] if len(slots) == 4 else None
        operands = op.operation.operands
        x_rank, w_rank = _rank(c, operands[0]), _rank(c, operands[1])
        x_spec, w_spec = c.spec(operands[0]), c.spec(operands[1])
        if decode_kernels.linear_fits(
            x_spec.shape, x_spec.dtype, w_spec.shape, w_spec.contiguous, bias is not None, c.runtime.device
        ):
            decode_kernels.tune_ahead_linear(x_spec.shape, x_spec.dtype, w_spec.shape, c.runtime.device)
            return _small_m_linear(c, op, x, w, o)
        step = _fresh(c, op, F.linear, [x, w] + slots[3:])
        if step is not None:
            return step
        if bias is not None and x_rank == 2 and w_rank == 2:

            def linear_addmm(env: list) -> None:
                torch.addmm(env[bias], env[x], env[w].t(), out=env[o])

            return linear_addmm
        if bias is not None and x_rank > 2 and w_rank == 2 and c.spec(operands[2]).contiguous:
            # One GEMM with the bias in its epilogue over the folded leading axes, as
            # F.linear does (matmul then add_ is a second kernel).

            def linear_folded(env: list) -> None:
                out = env[o]
                torch.addmm(env[bias], env[x].flatten(0, -2), env[w].t(), out=out.view(-1, out.shape[-1]))

            return linear_folded
        product = _matmul_into(x_rank == 1, w_rank == 1)
        if bias is None:

            def linear_nobias(env: list) -> None:
                product(env[x], env[w].t(), env[o])

            return linear_nobias

        def linear_bias(env: list) -> None:
            out = env[o]
            product(env[x], env[w].t(), out)
            out.add_(env[bias])

        return linear_bias
