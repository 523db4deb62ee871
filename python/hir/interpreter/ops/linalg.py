"""``linalg`` structured ops on tensors inside kernel segments, run with torch.

Each op is compiled once, at plan time, into torch calls over its loop domain
(``d0 .. dn-1``):

* an indexing map becomes a view of its operand in loop order: a constant result indexes
  that operand dim (a size-1 broadcast dim), a repeated dim takes the diagonal, the rest is a
  permutation, and loop dims the operand lacks become size-1 dims that broadcast;
* the payload's ``arith`` / ``math`` ops become vectorized torch calls on those views
  (:mod:`hir.interpreter.linalg_payload`);
* a reduction iterator becomes a torch reduction over its loop dims, chosen by the payload
  op that folds the contribution into the output's running value (``addf`` -> sum,
  ``mulf`` -> prod, ``maximumf`` -> amax, ...), then combined with the init operand.

``linalg.generic``, ``linalg.matmul`` / ``batch_matmul`` (one ``addmm`` / ``baddbmm`` call
when their maps are the defaults) and the elementwise named ops run here. Maps other than
dims and constants (convolutions' ``d0 + d1``) and payload ops without a torch equivalent
are plan-time errors at the op. On tensors an op yields new tensors; on memrefs (no
results) it copies them into its ``outs`` buffers.
"""

from collections.abc import Callable

import torch
from torch_mlir import ir
from torch_mlir.dialects import linalg

from hir.dialect.linalg_facts import ELEMENTWISE_NAMED, reduce_maps
from hir.interpreter.buffers import torch_dtype
from hir.interpreter.linalg_payload import COMBINERS, UnsupportedPayload, compile_payload
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.registry import impl

_REDUCE: dict[str, Callable] = {
    "sum": torch.sum,
    "max": torch.amax,
    "min": torch.amin,
    "fmax": torch.amax,
    "fmin": torch.amin,
}
_COMBINE: dict[str, Callable] = {
    "sum": torch.add,
    "prod": torch.mul,
    "max": torch.maximum,
    "min": torch.minimum,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
}
_DEFAULT_MAPS = {
    "linalg.matmul": ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"],
    "linalg.batch_matmul": [
        "(d0, d1, d2, d3) -> (d0, d1, d3)",
        "(d0, d1, d2, d3) -> (d0, d3, d2)",
        "(d0, d1, d2, d3) -> (d0, d1, d2)",
    ],
}


class MapError(Exception):
    pass


def _map_results(amap: ir.AffineMap) -> list:
    """Each result as ("d", position) or ("c", constant); other expressions are refused."""
    out = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            out.append(("d", expr.position))
        elif isinstance(expr, ir.AffineConstantExpr):
            out.append(("c", expr.value))
        else:
            raise MapError(f"indexing map {amap} has result {expr}; only loop dims and constants run")
    return out


def loop_view(results: list, loops: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function viewing an operand indexed by ``results`` in loop order (size-1 dims for
    the loops it lacks), without copying."""
    index = tuple(v if kind == "c" else slice(None) for kind, v in results)
    labels = [v for kind, v in results if kind == "d"]
    diagonals = []
    while len(set(labels)) != len(labels):
        dim = next(d for d in labels if labels.count(d) > 1)
        i = labels.index(dim)
        j = labels.index(dim, i + 1)
        diagonals.append((i, j))  # torch.diagonal drops both dims and appends the diagonal
        labels = [d for k, d in enumerate(labels) if k not in (i, j)] + [dim]
    perm = sorted(range(len(labels)), key=lambda k: labels[k])
    expand = tuple(slice(None) if d in labels else None for d in range(loops))
    constant = any(kind == "c" for kind, _ in results)
    identity = perm == list(range(len(perm))) and len(labels) == loops

    def view(t: torch.Tensor) -> torch.Tensor:
        if constant:
            t = t[index]
        for i, j in diagonals:
            t = torch.diagonal(t, 0, i, j)
        if identity:
            return t
        return t.permute(perm)[expand]

    return view


def _output_order(results: list, kept: list[int], what: str) -> list[int] | None:
    """The permutation taking the kept loop dims (ascending) to the output's dim order."""
    dims = [v for kind, v in results if kind == "d"]
    if len(dims) != len(results) or sorted(dims) != kept:
        raise MapError(f"{what} map must index exactly the parallel loops {kept}, got {results}")
    perm = [kept.index(d) for d in dims]
    return None if perm == list(range(len(perm))) else perm


def _combiner(block: ir.Block, out_arg: ir.BlockArgument, yielded: ir.Value) -> tuple[str, ir.Value, int]:
    """(kind, contribution, op position) of the op folding into reduction output ``out_arg``."""
    ops = list(block.operations)
    owner = yielded.owner if isinstance(yielded, ir.OpResult) else None
    position = next((k for k, op in enumerate(ops) if owner is not None and op.operation == owner), None)
    if owner is None or position is None or owner.name not in COMBINERS or out_arg not in list(owner.operands):
        raise MapError(
            "a reduction's yielded value must combine the output argument with addf/addi, mulf/muli or a max/min op"
        )
    users = {use.owner for use in out_arg.uses}
    if len(users) != 1:
        raise MapError("a reduction's output argument may only feed its combining op")
    a, b = owner.operands
    return COMBINERS[owner.name], (b if a == out_arg else a), position


def structured(c: Compiler, op: ir.OpView, maps: list, iterators: list[str], inits: int | None = None) -> Step:
    """Compile a structured op with the given maps (one per operand) and iterator kinds; its
    last ``inits`` operands are the outputs (default: the op's ``outs``)."""
    operands = list(op.operation.operands)
    inputs, outputs = (operands[:-inits], operands[-inits:]) if inits else (list(op.inputs), list(op.outputs))
    loops = len(iterators)
    block = op.regions[0].blocks[0]
    out_args = list(block.arguments)[len(inputs) :]
    yielded = list(list(block.operations)[-1].operation.operands)
    kept = [d for d, kind in enumerate(iterators) if kind == "parallel"]
    reducing = [d for d, kind in enumerate(iterators) if kind == "reduction"]
    if len(kept) + len(reducing) != loops:
        raise c.error(op, f"iterator types {iterators} must be parallel or reduction")
    try:
        results = [_map_results(m) for m in maps]
        views = [loop_view(r, loops) for r in results]
        sources = []
        for d in range(loops):
            src = next(((k, i) for k, r in enumerate(results) for i, e in enumerate(r) if e == ("d", d)), None)
            if src is None:
                raise MapError(f"loop d{d} is not the plain index of any operand dim")
            sources.append(src)
        combiners, skip = [], set()
        for j, out_arg in enumerate(out_args):
            if reducing:
                kind, contribution, position = _combiner(block, out_arg, yielded[j])
                combiners.append(kind)
                skip.add(position)
                yielded[j] = contribution
            else:
                combiners.append(None)
        orders = [
            _output_order(results[len(inputs) + j], kept if reducing else list(range(loops)), f"output #{j}")
            for j in range(len(outputs))
        ]
    except MapError as err:
        raise c.error(op, str(err)) from None
    try:
        payload = compile_payload(block, c, frozenset(skip), yielded)
    except UnsupportedPayload as err:
        raise c.error(err.op, f"{err} (payload of '{op.operation.name}' at {c.where(op)})") from None
    slots = c.uses(op)
    dtypes = [torch_dtype(ir.ShapedType(v.type).element_type) for v in outputs]
    on_tensors = len(op.operation.results) == len(outputs)
    outs = [c.define(r) for r in op.operation.results] if on_tensors else slots[len(inputs) :]
    n_in = len(inputs)

    def run(env: list) -> None:
        operands = [env[s] for s in slots]
        domain = tuple(operands[k].shape[i] for k, i in sources)
        args = [view(t) for view, t in zip(views, operands)]
        values = payload.run(args, env, domain)
        for j, value in enumerate(values):
            value = value.expand(domain)
            kind = combiners[j]
            init = operands[n_in + j]
            if kind is not None:
                value = _reduce(value, kind, reducing)
            order = orders[j]
            if order is not None:
                value = value.permute(order)
            if kind is not None:
                value = _COMBINE[kind](init, value)
            if value.dtype != dtypes[j]:
                value = value.to(dtypes[j])
            if on_tensors:  # tensors are never written in place, so a view is a valid result
                env[outs[j]] = value
            else:
                env[outs[j]].copy_(value)

    return run


def _reduce(value: torch.Tensor, kind: str, dims: list[int]) -> torch.Tensor:
    if kind == "prod":
        for d in sorted(dims, reverse=True):
            value = torch.prod(value, d)
        return value
    return _REDUCE[kind](value, dims)


def _attr_maps(op: ir.OpView) -> list:
    return [ir.AffineMapAttr(a).value for a in op.operation.attributes["indexing_maps"]]


@impl(linalg.ReduceOp)
def reduce(c: Compiler, op: ir.OpView) -> Step | None:
    maps, reduced = reduce_maps(op.operation)
    iterators = ["reduction" if d in reduced else "parallel" for d in range(maps[0].n_dims)]
    return structured(c, op, maps, iterators, inits=len(op.operation.operands) // 2)


@impl(linalg.GenericOp)
def generic(c: Compiler, op: ir.OpView) -> Step | None:
    iterators = [str(a).split("<")[-1].rstrip(">") for a in op.operation.attributes["iterator_types"]]
    return structured(c, op, _attr_maps(op), iterators)


@impl(linalg.MatmulOp, linalg.BatchMatmulOp)
def matmul(c: Compiler, op: ir.OpView) -> Step | None:
    maps = _attr_maps(op)
    element_types = {str(ir.ShapedType(v.type).element_type) for v in op.operation.operands}
    name = op.operation.name
    if [str(m) for m in maps] != _DEFAULT_MAPS[name] or len(element_types) != 1 or not op.operation.results:
        loops = maps[0].n_dims
        iterators = ["reduction" if d == loops - 1 else "parallel" for d in range(loops)]
        return structured(c, op, maps, iterators)
    a, b, init = c.uses(op)
    out = c.define(op.operation.results[0])
    fn = torch.addmm if name == "linalg.matmul" else torch.baddbmm

    def matmul_step(env: list) -> None:
        env[out] = fn(env[init], env[a], env[b])

    return matmul_step


@impl(
    *{
        cls.OPERATION_NAME: cls
        for cls in vars(linalg).values()
        if getattr(cls, "OPERATION_NAME", None) in ELEMENTWISE_NAMED
    }.values()
)
def elementwise(c: Compiler, op: ir.OpView) -> Step | None:
    rank = ir.ShapedType(op.operation.operands[-1].type).rank
    identity = ir.AffineMap.get_identity(rank)
    return structured(c, op, [identity] * len(op.operation.operands), ["parallel"] * rank)
