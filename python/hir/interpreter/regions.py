"""Compiled compute regions: a maximal run of pure-compute ops of a function body
run as ONE inductor-compiled function, so inductor fuses across hir ops and kernel segments
(the softmax attention between two ``hir.matmul`` becomes one SDPA kernel, pointwise work
fuses into its neighbours), as ``torch.compile`` does on the module the program came from.

A region is a run of consecutive ops of a (non-kernel) function's body, each of them

- an hir compute op (``ComputeOp``: set, binary, reduction, matmul, linear),
- a call of a kernel segment (``func.func {hir.kernel}``) not marked ``hir.once`` (parameter
  work is cached by its own step, ``ops/once.py``),
- ``memref.alloc`` (not ``hir.symmetric``) / ``memref.dealloc``, or host arithmetic
  (``arith.*``, ``memref.dim``) whose values only region ops use,

and it ends at anything else (stream ops, communications, waits, views such as
``hir.alias_select``, loops, other calls)::

    %a = memref.alloc()
    call @segment_0(%x, %w, %a)                      -+
    %q = memref.alloc()                               |  one region: inputs %x, %w, %w2;
    "hir.matmul"(%a, %w2, %q)                         |  outputs %q (used below)
    memref.dealloc %a                                -+
    %work = "hir.allreduce"(%q, ...)                 -- ends it

The region's steps (compiled as usual, kernel segments inside it not compiled on their
own) run on a copy of the plan's slot template with the region's inputs filled in, and
return the values that ops after the region use; :func:`hir.interpreter.kernels.compiled_segment`
traces that with ``make_fx`` and compiles it with inductor per signature, exactly as it does
for one kernel segment, so compiled regions compose with CUDA graph capture the same way.
Whole functions that are pure compute (an imported block) are one region. Parameter work (a
``hir.once`` callee) is never compiled: it runs once per set of parameters, and an
inductor compile (seconds) would cost more than that run (on a first call).

When a region runs compiled is decided at plan time (:func:`region_mode_reason`): with
``compile_kernels=True`` every region with a compute op, with ``"auto"`` the regions of at
least :data:`~hir.interpreter.kernels.AUTO_MIN_OPS` compute ops (a kernel segment counts its
``torch.aten`` / ``linalg`` ops) on CUDA; never with ``False`` (op by op), on CPU under
``"auto"``, or with ``track_memory=True`` (a compiled region's allocations are not counted).
Kernel segments outside regions (in loop bodies) are compiled on their own as before.

With ``regional`` (``Program(regional=True)``, the default) a region is cut at its repeats
and identical pieces share one compile (:mod:`hir.interpreter.repeats`): a model's layers
are traced and compiled once, not once per layer. A piece recomputes the elementwise values
an earlier piece wrote instead of taking them across the cut (:mod:`hir.interpreter.rematerialize`).
"""

import functools
from collections.abc import Callable

import torch
from torch_mlir import ir
from torch_mlir.dialects import func, memref

from hir.dialect import OP_CLASSES
from hir.dialect.compute import KERNEL_ATTR, ONCE_ATTR, ComputeOp
from hir.dialect.irutils import ancestor_in
from hir.dialect.p2p import SYMMETRIC_ATTR
from hir.interpreter.kernels import AUTO_MIN_OPS, CompileMode, compiled_segment, compute_ops
from hir.interpreter.plan import Compiler, Step
from hir.interpreter.rematerialize import rematerialize
from hir.interpreter.repeats import OpKeys, piece_key, pieces
from hir.interpreter.steps import DEAD, OpInfo, run_steps

_CALL = func.CallOp.OPERATION_NAME
_ALLOC = memref.AllocOp.OPERATION_NAME
_DEALLOC = memref.DeallocOp.OPERATION_NAME


def region_mode_reason(mode: CompileMode, device: torch.device, track_memory: bool) -> str | None:
    """Why no region of a program compiled under ``mode`` runs compiled (None: they may)."""
    if mode is False:
        return "compile_kernels=False runs every op by op"
    if mode == "auto" and device.type != "cuda":
        return f"compile_kernels='auto' compiles on CUDA only; this program runs on {device}"
    if track_memory:
        return "track_memory=True counts bytes in the alloc steps, which a compiled region does not run"
    return None


def compute_weight(op: ir.Operation, functions: dict) -> int | None:
    """The compute ops ``op`` contributes to a region (0: it may sit inside one without
    counting; None: it ends a region)."""
    name = op.name
    cls = OP_CLASSES.get(name)
    if cls is not None:
        return 1 if issubclass(cls, ComputeOp) else None
    if name == _CALL:
        callee = functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is None or KERNEL_ATTR not in callee.operation.attributes or ONCE_ATTR in op.attributes:
            return None
        return compute_ops(callee.operation)
    if name == _ALLOC:
        return None if SYMMETRIC_ATTR in op.attributes else 0
    if name == _DEALLOC:
        return 0
    if _host_scalar(op):
        # Inside a region only when its values stay there: a compiled region returns tensors.
        users = [u.owner.operation for r in op.results for u in r.uses]
        inside = all(u.block == op.block and (compute_weight(u, functions) is not None) for u in users)
        return 0 if inside else None
    return None


def _host_scalar(op: ir.Operation) -> bool:
    return op.name == memref.DimOp.OPERATION_NAME or op.name.startswith("arith.")


def region_spans(ops: list, functions: dict, min_ops: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each maximal run of region ops in ``ops`` (a block without its
    terminator) with at least ``min_ops`` compute ops; host arithmetic at either edge stays
    outside (it feeds or follows non-region ops)."""
    spans: list[tuple[int, int]] = []
    start, weight = None, 0
    for i, op in enumerate(ops + [None]):
        w = compute_weight(op.operation, functions) if op is not None else None
        if op is None or w is None:
            if start is not None and weight >= min_ops:
                end = i
                while _host_scalar(ops[end - 1].operation):
                    end -= 1
                spans.append((start, end))
            start, weight = None, 0
        elif start is not None or not _host_scalar(op.operation):
            start = i if start is None else start
            weight += w
    return spans


def compile_block(c: Compiler, ops: list, mode: CompileMode, shared: dict | None = None) -> list[Step]:
    """The steps of a function body ``ops``, each compiled region as one step. ``shared``
    (regional compilation; None: regions stay whole): the signature caches of the program's
    region pieces by :func:`~hir.interpreter.repeats.piece_key`, filled here; each region is
    then cut at its repeats and a piece of a key met before shares that piece's compiles."""
    min_ops = AUTO_MIN_OPS if mode == "auto" else 1
    spans = region_spans(ops, c.functions, min_ops)
    keys = OpKeys(c.functions)
    weight = lambda op: compute_weight(op, c.functions) or 0  # noqa: E731
    steps: list[Step] = []
    done = 0
    for start, end in spans + [(len(ops), len(ops))]:
        steps += c.steps(ops[done:start])
        span = ops[start:end]
        cut = pieces(span, keys, _host_scalar, weight) if span and shared is not None else [span] if span else []
        heavy = [sum(weight(op.operation) for op in piece) >= min_ops for piece in cut]
        plan = rematerialize(c, cut, heavy) if len(cut) > 1 else None
        for k, piece in enumerate(cut):
            if not heavy[k]:
                steps += c.steps(piece)
            elif plan is None:
                steps += [_region(c, piece, keys, shared)]
            else:
                returned = functools.partial(plan.returned, k)
                c.runtime.kernel_compile.recomputed += len(plan.recomputed[k])
                steps += [_region(c, plan.ops(k), keys, shared, returned, len(plan.recomputed[k]))]
        done = end
    return steps


def _region(
    c: Compiler,
    ops: list,
    keys: OpKeys,
    shared: dict | None,
    returned: Callable[[ir.Value], bool] | None = None,
    own: int = 0,
) -> Step:
    """One step running ``ops`` (a region, or a piece of one) compiled; with ``shared``,
    on the signature cache of the pieces of its key. ``returned(value)``: whether the step
    returns a value it defines (default: when an op outside ``ops`` uses it); ``own``: the
    index of its first own op (those before it are writes it recomputes, located elsewhere)."""
    c.in_region = True
    try:
        steps = c.steps(ops)
    finally:
        c.in_region = False
    members = {op.operation for op in ops}
    block = ops[0].operation.block
    defined: list[ir.Value] = []
    inputs: list[ir.Value] = []
    for op in ops:
        op = op.operation
        # destinations the op binds are its results (destinations.py)
        defined += [op.operands[i] for i, _ in c.bound_operands(op)]
        for value in op.operands:
            made_here = not isinstance(value.owner, ir.Block) and value.owner.operation in members
            if not made_here and value not in inputs and value not in defined:
                inputs.append(value)
        defined += list(op.results)
    if returned is None:
        returned = lambda v: any(ancestor_in(u.owner.operation, block) not in members for u in v.uses)  # noqa: E731
    outputs = [v for v in dict.fromkeys(defined) if returned(v)]
    freed = [v for op in ops if op.operation.name == _DEALLOC for v in op.operation.operands if v in inputs]
    in_slots = [c.use(v) for v in inputs]
    out_slots = [c.use(v) for v in outputs]
    dead = [s for v in freed for s in [c.use(v)] + c.aliases(c.use(v))]
    template = c.env_template()

    def run(args: list) -> list:
        env = template.copy()
        for slot, value in zip(in_slots, args):
            env[slot] = value
        run_steps(steps, env)
        return [env[slot] for slot in out_slots]

    first, last = c.where(ops[own]), c.where(ops[-1])
    stats = c.runtime.kernel_compile
    stats.regions += 1
    cache = None
    if shared is not None:
        key = piece_key(ops, inputs, outputs, keys, c.site)
        stats.repeats += key in shared
        cache = shared.setdefault(key, {})
    compiled = compiled_segment(run, f"compute region of {len(ops)} ops ({first} .. {last})", first, stats, cache)

    def region_step(env: list) -> None:
        args = [env[slot] for slot in in_slots]
        for slot in dead:  # the list holds the last references: the graph frees each after its last use in it
            env[slot] = DEAD
        results = compiled(args)
        for slot, value in zip(out_slots, results):
            env[slot] = value

    region_step.hir_op = OpInfo("compute region", first, ())  # where a failure outside its steps is reported
    return region_step
