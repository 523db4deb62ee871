"""Textual pass pipelines mixing hir passes with upstream MLIR passes:
``builtin.module(hir-stream-lowering{num-streams=2},cse)``, and the named pipelines.

MLIR's pipeline parser cannot name Python passes, so this module parses the pipeline text
itself (hir passes and named pipelines by name, the rest validated as upstream text) and
hands the elements to one MLIR PassManager (``pass_manager.py``), which runs them all.
"""

import re
from typing import Any

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from hir.dialect.context import HirError, check_options, format_mlir_error, new_context
from hir.dialect.gc_stress import checkpoint
from hir.outputs import captured_fd2
from hir.passes.base import REGISTRY, check_disabled_env, is_disabled
from hir.passes.pass_manager import Element, Instrumentation, build_pass_manager


def overlap_pipeline(overlap: str = "auto") -> str:
    """hir-lower with hir-p2p-pipeline{overlap=...} first (``auto``, ``on`` or ``off``):
    NCCL collectives, copy-engine shifts, chunks by the ``chunks=auto`` rule."""
    return (
        "hir-insert-reshardings,hir-convert-to-communication,"
        f"hir-p2p-pipeline{{backend=cuda chunks=auto overlap={overlap}}},hir-lower"
    )


# Named pipelines, expanded in place (mlir-opt's registered pass pipelines).
PIPELINES: dict[str, str] = {
    # hir-hoist-parameter-work only acts on functions with hir.parameter arguments
    # (hir.from_torch's state): work that reads only them runs once, not per call.
    "hir-lower": "hir-insert-reshardings,hir-convert-to-communication,hir-stream-lowering,hir-fuse-loops,"
    "hir-insert-deallocations,hir-expand-stream-loops,hir-hoist-parameter-work,canonicalize,cse",
    # hir-lower plus stream buffer reuse (opt-in: it caps each rewritten loop at
    # num-streams pool streams; see passes/streams/reuse_stream_buffers.py).
    "hir-lower-reuse": "hir-insert-reshardings,hir-convert-to-communication,hir-stream-lowering,hir-fuse-loops,"
    "hir-reuse-stream-buffers,hir-insert-deallocations,hir-expand-stream-loops,hir-hoist-parameter-work,canonicalize,cse",
    # hir-lower with the P2P-form collectives of a sharded program (hir.from_torch's SP
    # layouts, nvFuser's stream-parallel form) pipelined on copy engines where the
    # overlap=auto rule says it pays (passes/p2p/cost.py); the rest run whole.
    # TorchProgram.lower(overlap="on"|"off") forces either form.
    "hir-lower-overlap": overlap_pipeline("auto"),
    # An annotated upstream shard program -> hir: a dynamic grid is an error
    # unless hir-set-grid-shape{shape=...} ran before (hir.from_shard(grid_shape=...)), TOSA to linalg, upstream
    # propagation, record the signature's shardings, partition upstream, then convert
    # (docs/from-shard.md). No cse before shard-partition: it merges tensor.empty ops,
    # and shard-partition needs each one used once. canonicalize after the TOSA lowering
    # drops the zero-point constants tosa.matmul leaves unused (shard-partition fails,
    # without a diagnostic, on a tensor constant that carries no sharding).
    "hir-from-shard": "hir-set-grid-shape,"
    "func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor,canonicalize,sharding-propagation),"
    "hir-record-shard-signature,func.func(shard-partition,canonicalize,cse),"
    "shard-simplify,func.func(canonicalize),hir-convert-shard-to-hir",
    # A program annotated on every value (upstream's partition tests): no propagation, which
    # on the pinned wheel drops halos and sharded_dims_offsets (it shards the ops around them
    # evenly and shard-partition then cannot reshard);
    # shard-partition runs on the TOSA program and TOSA is lowered after it.
    "hir-from-shard-no-propagation": "hir-set-grid-shape,hir-record-shard-signature,"
    "func.func(shard-partition,tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor,canonicalize,cse),"
    "shard-simplify,func.func(canonicalize),hir-convert-shard-to-hir",
}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced '{ch}' at offset {i} in pipeline '{text}'")
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced brackets in pipeline '{text}'")
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _parse_options(pass_name: str, text: str) -> dict[str, str]:
    options = {}
    for item in text.replace(",", " ").split():
        if "=" not in item:
            raise ValueError(f"pass '{pass_name}' option '{item}' must be key=value")
        key, value = item.split("=", 1)
        options[key.strip()] = value.strip()
    return options


def parse_pipeline(text: str) -> list[Element]:
    """Parse ``builtin.module(a,b{k=v},...)`` (or the bare list) into elements."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    elements: list[Element] = []
    for item in split_top_level(text):
        name, _, rest = item.partition("{")
        name = name.strip()
        if name in PIPELINES:
            if rest:
                raise ValueError(f"pipeline '{name}' takes no options; set them on its passes")
            elements += parse_pipeline(PIPELINES[name])
        elif name in REGISTRY:
            if rest and not rest.endswith("}"):
                raise ValueError(f"malformed options in '{item}'")
            options = _parse_options(name, rest[:-1]) if rest else {}
            elements.append(Element(item, REGISTRY[name].from_options(options)))
        else:
            nested = [n for n in re.findall(r"[\w.-]+", item) if n in REGISTRY or n in PIPELINES]
            if nested:
                anchor = item.split("(", 1)[0].strip()
                raise ValueError(
                    f"'{nested[0]}' is a module-level hir pass: write it at the top level "
                    f"(builtin.module({nested[0]})), not nested in '{anchor}(...)'"
                )
            _upstream_pm([item])  # validate now: a typo fails before any pass runs
            elements.append(Element(item))
    return elements


def _upstream_pm(texts: list[str]) -> PassManager:
    pipeline = f"builtin.module({','.join(texts)})"
    context = ir.Context.current or new_context()
    error = ""
    with captured_fd2() as captured:
        try:
            return PassManager.parse(pipeline, context=context)
        except ValueError as err:
            error = str(err)
    text = error + "\n" + "".join(captured)
    detail = " ".join(line.strip(" :") for line in text.splitlines() if "error:" in line or "option" in line)
    detail = detail.replace("MLIR Textual PassPipeline Parser:1:1: error: ", "")
    raise ValueError(
        f"invalid pipeline element '{','.join(texts)}': {detail or 'rejected by MLIR'} (see hir-opt --list-passes)"
    )


@checkpoint
def run_pipeline(
    module: ir.Module,
    pipeline: str,
    instrumentation: Instrumentation | None = None,
    source_name: str | None = None,
) -> ir.Module:
    """Run ``pipeline`` on ``module`` in place, on one MLIR PassManager. Errors raise
    :class:`HirError` with ``file:line:col: error: ...`` lines; ValueError for a malformed
    pipeline. Passes switched off (:func:`hir.passes.disabled`, ``$HIR_DISABLE_PASSES``)
    are left out."""
    if not isinstance(module, ir.Module):
        hint = " (parse text with hir.parse(text))" if isinstance(module, str) else ""
        raise HirError(f"error: hir.lower: module must be an ir.Module{hint}, got {type(module).__name__}")
    if not isinstance(pipeline, str):
        raise HirError(
            f"error: hir.lower: pipeline must be pipeline text like 'hir-lower', got {type(pipeline).__name__}"
        )
    inst = instrumentation or Instrumentation()
    check_disabled_env()
    with module.context:
        elements = [e for e in parse_pipeline(pipeline) if not (e.hir_pass and is_disabled(e.hir_pass.name))]
        build_pass_manager(elements, inst, module.context).run(module, source_name)
        if not inst.verify_each:
            _verify(module, source_name, f"pipeline '{pipeline}'")
    return module


def _verify(module: ir.Module, source_name: str | None, what: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        raise HirError(
            f"{source_name or '<input>'}: error: {what} produced invalid IR\n" + format_mlir_error(err, source_name)
        ) from None


def lower(
    module: ir.Module, pipeline: str = "hir-lower", *, source_name: str | None = None, **instrumentation: Any
) -> ir.Module:
    """:func:`hir.lower`: :func:`run_pipeline` with hir-opt's instrumentation flags as keyword
    options, every bad argument an :class:`HirError`."""
    check_options(
        "hir.lower",
        instrumentation,
        ("print_after_all", "print_before_all", "timing", "statistics", "verify_each", "out"),
    )
    out = instrumentation.get("out")
    if out is not None and not callable(getattr(out, "write", None)):
        raise HirError(f"error: hir.lower: out must be a text stream (with a write method), got {type(out).__name__}")
    try:
        return run_pipeline(module, pipeline, Instrumentation(**instrumentation), source_name)
    except HirError:
        raise
    except ValueError as err:  # a malformed pipeline, pass option or $HIR_DUMP / $HIR_DISABLE_PASSES
        raise HirError(f"error: hir.lower: {err}") from None
