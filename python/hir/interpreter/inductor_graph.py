"""A compute region or kernel segment (a function of tensors, hir's interpreter steps)
compiled by inductor from ONE trace of our own.

Why not ``compile_fx`` on a ``make_fx`` graph: ``compile_fx`` hands the graph to AOT autograd,
which runs it once more to collect view and mutation metadata, hashes it for its own cache, and
traces it a second time (functionalization, inductor's decompositions) before inductor lowers
it; that graph is already aten, traced without autograd, so that work is done twice (9-11 s
of a ~1B Llama's first training step on an H200, beside inductor's own 24 s). Here the one
trace does what AOT's second trace does for an inference graph:

- ``make_fx`` over ``torch.func.functionalize(remove="mutations")``: writes into destination
  buffers and in-place updates become functional ops, and a data mutation of an input one
  trailing ``copy_`` into it (AOT's ``keep_inference_input_mutations``); views stay views;
- inductor's decomposition table (``select_decomp_table``), plus the renaming of torch-mlir's
  ``aten.*.Scalar`` overloads into the ``.Tensor`` ones dynamo records (inductor's patterns,
  SDPA among them, are written against those), applied as the trace runs, under the Python
  dispatcher as AOT traces;

then what ``compile_fx``'s inference compiler does after AOT: inductor's joint-graph passes
(where its attention patterns live), every output marked user-visible (keeps its strides), and
``compile_fx_inner`` (``is_inference``, no static inputs, no CUDA graphs of its own) inside a
``TracingContext`` whose fake mode has a shape environment, so the FX graph cache (on disk,
keyed by the graph) still works across processes. What AOT's runtime wrapper would add is not
needed: outputs that view inputs come back as views from inductor itself, autocast is off
while the compiled code runs (as AOT's wrapper does), and nothing else mutates inputs.

Graphs this path cannot take go through ``compile_fx`` as before (logged at debug level on the
``hir.compile`` logger): a mutation functionalization leaves in the graph (of an input's
metadata, say), an output that aliases an input the graph writes (AOT regenerates it from the
input at run time; inductor would return a separate buffer), or a trace that fails.
"""

import contextlib
import logging
import time
from collections.abc import Callable, Sequence

import torch
from torch.multiprocessing.reductions import StorageWeakRef

log = logging.getLogger("hir.compile")
_aten = torch.ops.aten

# The ``.Scalar`` overloads torch-mlir's import names (``aten.div.Scalar``) and the
# ``.Tensor`` overload a Python scalar operand dispatches to when torch.compile traces a
# module (``x / 8.0``): inductor's pattern matcher (the SDPA patterns, among others) is
# written against the latter.
_SCALAR_OVERLOADS = {
    _aten.add.Scalar: _aten.add.Tensor,
    _aten.sub.Scalar: _aten.sub.Tensor,
    _aten.mul.Scalar: _aten.mul.Tensor,
    _aten.div.Scalar: _aten.div.Tensor,
}


def canonical_scalar_overloads(graph: torch.fx.GraphModule) -> None:
    """Rewrite ``aten.<op>.Scalar`` calls of ``graph`` into the ``.Tensor`` overload with the
    same Python scalar operand (same values: both broadcast a wrapped scalar); ``alpha``,
    positional in ``add.Scalar`` / ``sub.Scalar``, is keyword-only in ``.Tensor``."""
    for node in graph.graph.nodes:
        if node.op == "call_function" and node.target in _SCALAR_OVERLOADS:
            node.target = _SCALAR_OVERLOADS[node.target]
            if len(node.args) == 3:
                node.kwargs = {**node.kwargs, "alpha": node.args[2]}
                node.args = node.args[:2]
    graph.recompile()


def _as_tensor_overload(scalar: torch._ops.OpOverload) -> Callable:
    """The decomposition of ``scalar`` (an ``aten.<op>.Scalar``) into its ``.Tensor``
    overload, as :func:`canonical_scalar_overloads` rewrites a traced call."""
    tensor = _SCALAR_OVERLOADS[scalar]
    return lambda a, b, *alpha: tensor(a, b, **({"alpha": alpha[0]} if alpha else {}))


def fake_inputs(tensors: list) -> tuple:
    """A fake mode with a shape environment and fake copies of ``tensors`` (static shapes) in it:
    inductor's FX graph cache (on disk, keyed by the traced graph) needs one, so a region
    compiled once is loaded, not compiled again, by a later process (without it every
    process compiles: 'Bypassing FX Graph Cache because No shape env')."""
    from torch._subclasses.fake_tensor import (
        FakeTensorMode,  # inductor loads only when kernels compile (seconds to import)
    )
    from torch.fx.experimental.symbolic_shapes import (
        ShapeEnv,  # inductor loads only when kernels compile (seconds to import)
    )

    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    return mode, [mode.from_tensor(t, static_shapes=True) for t in tensors]


def compile_graph(fn: Callable[..., list], tensors: list, options: dict) -> tuple[Callable[[list], Sequence], set[int]]:
    """``fn`` (tensors -> a list of tensors) compiled by inductor with config ``options`` for
    arguments like ``tensors``: (the compiled function, taking a list of such tensors; the
    positions of the arguments it writes)."""
    from torch._inductor import config  # inductor loads only when kernels compile (seconds to import)

    mode, fakes = fake_inputs(tensors)
    with config.patch(options):
        compiled = _direct(fn, mode, fakes)
        if compiled is None:  # on fakes of its own: a failed trace may have written into these
            compiled = _through_aot_autograd(fn, fake_inputs(tensors)[1])
    return compiled


def _through_aot_autograd(fn: Callable[..., list], fakes: list) -> tuple[Callable[[list], Sequence], set[int]]:
    """``fn`` traced by ``make_fx`` and compiled by ``compile_fx`` (AOT autograd, then inductor),
    and the arguments it writes."""
    from torch._inductor.compile_fx import compile_fx  # inductor loads only when kernels compile (seconds to import)
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn, tracing_mode="fake", _allow_non_fake_inputs=True)(*fakes)
    canonical_scalar_overloads(graph)
    compiled = compile_fx(graph, fakes)
    assert callable(compiled), "compile_fx returns a callable outside AOT mode"
    return (lambda args: compiled(*args)), written_inputs(graph)


def _functional_trace(fn: Callable[..., list], fakes: list) -> tuple[torch.fx.GraphModule, set[int]]:
    """The functional aten graph of ``fn`` for ``fakes`` (see the module docstring), and the
    inputs that an output of ``fn`` shares memory with."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.traceback import preserve_node_meta

    aliased: set[int] = set()

    def with_aliases(*tensors):
        results = fn(*tensors)
        inputs = {StorageWeakRef(t.untyped_storage()): i for i, t in enumerate(tensors)}
        outputs = {StorageWeakRef(r.untyped_storage()) for r in results if isinstance(r, torch.Tensor)}
        aliased.update(i for key, i in inputs.items() if key in outputs)
        return results

    decompositions = {**select_decomp_table(), **{op: _as_tensor_overload(op) for op in _SCALAR_OVERLOADS}}
    functional = torch.func.functionalize(with_aliases, remove="mutations")
    # The node metadata kept as AOT's trace keeps it: each node's ``original_aten`` (the op a
    # decomposition came from) names inductor's kernels.
    with enable_python_dispatcher(), preserve_node_meta():
        trace = make_fx(
            functional, decomposition_table=decompositions, tracing_mode="fake", _allow_non_fake_inputs=True
        )
        return trace(*fakes), aliased


def _direct(fn: Callable[..., list], mode, fakes: list) -> tuple[Callable[[list], Sequence], set[int]] | None:
    """``fn`` compiled by ``compile_fx_inner`` from :func:`_functional_trace`'s graph, and the
    arguments it writes; None where that path cannot take it (the module docstring says which)."""
    from torch._guards import TracingContext, tracing
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.cudagraph_utils import BoxedDeviceIndex
    from torch._inductor.fx_passes.joint_graph import joint_graph_passes
    from torch._inductor.utils import BoxedBool
    from torch._inductor.virtualized import V

    start = time.perf_counter()
    try:
        graph, aliased = _functional_trace(fn, fakes)
    except Exception as err:  # what this trace cannot take, AOT autograd may (or says why not)
        log.debug("compiling through AOT autograd: the functional trace failed: %s: %s", type(err).__name__, err)
        return None
    written = _written_inputs(graph)
    if written is None:
        log.debug("compiling through AOT autograd: a mutation is left in the functional graph")
        return None
    if aliased & written:
        log.debug("compiling through AOT autograd: an output aliases input(s) %s the graph writes", aliased & written)
        return None
    traced = time.perf_counter()
    if any(t.device.type == "cuda" for t in fakes):  # compile_fx wakes inductor's pool of compile workers
        AsyncCompile.wakeup()
    with V.set_fake_mode(mode), tracing(TracingContext(mode)), _autocast_off():
        graph = joint_graph_passes(graph, fakes[0].device if fakes else None)
        output = next(iter(reversed(graph.graph.nodes)))
        output.meta["user_visible_output_idxs"] = [
            i for i, v in enumerate(output.args[0]) if isinstance(v, torch.fx.Node)
        ]
        compiled = compile_fx_inner(
            graph,
            fakes,
            static_input_idxs=(),
            cudagraphs=BoxedBool(False),
            is_inference=True,
            boxed_forward_device_index=BoxedDeviceIndex(None),
        )
    log.debug(
        "functional trace of %d nodes in %.3f s, inductor in %.3f s",
        len(graph.graph.nodes),
        traced - start,
        time.perf_counter() - traced,
    )

    def run(args: list) -> Sequence:
        with _autocast_off():
            return compiled(args)  # boxed: inductor empties the list and frees each input after its last use

    return run, written


def _autocast_off():
    """Autocast off while a traced graph (its casts are ops in it) compiles and runs, as AOT
    autograd's wrappers turn it off."""
    return torch._C._DisableAutocast() if torch._C._is_any_autocast_enabled() else contextlib.nullcontext()


def _written_inputs(graph: torch.fx.GraphModule) -> set[int] | None:
    """The inputs ``graph`` writes (:func:`written_inputs`); None when it mutates anything but
    an input, with a ``copy_`` into it."""
    placeholders = {n for n in graph.graph.nodes if n.op == "placeholder"}
    for node in graph.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if target._schema.is_mutable and not (target is _aten.copy_.default and node.args[0] in placeholders):
            return None
    return written_inputs(graph)


def written_inputs(graph: torch.fx.GraphModule) -> set[int]:
    """Positions (among ``graph``'s inputs) of the inputs it writes, directly or through a
    view of them."""
    base = {n: i for i, n in enumerate(n for n in graph.graph.nodes if n.op == "placeholder")}
    written: set[int] = set()
    for node in graph.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None:
            continue
        named = [(a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs]
        for argument, value in [*zip(schema.arguments, node.args), *named]:
            if argument.alias_info is not None and argument.alias_info.is_write and value in base:
                written.add(base[value])
        if schema.returns and schema.returns[0].alias_info is not None and node.args and node.args[0] in base:
            base[node] = base[node.args[0]]  # a view of an input (or an in-place op's result)
    return written
