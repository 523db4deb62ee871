"""Textual pass pipelines mixing hir passes (run from Python) with upstream MLIR passes
(run through a PassManager): ``builtin.module(hir-stream-lowering{num-streams=2},cse)``.

Python passes cannot be named inside an MLIR pipeline string, so this module parses the
pipeline itself, runs hir passes directly and hands each run of consecutive upstream
elements to one PassManager. It also implements IR printing around passes and timing.
"""

import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Optional, TextIO

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from hir.dialect.context import HirError, format_diagnostic, format_location, format_mlir_error, new_context
from hir.outputs import captured_fd2
from hir.passes.base import REGISTRY, ModulePass, PassFailure, check_disabled_env, is_disabled

def overlap_pipeline(overlap: str = "auto") -> str:
    """hir-lower with hir-p2p-pipeline{overlap=...} first (``auto``, ``on`` or ``off``):
    NCCL collectives, copy-engine shifts, chunks by the ``chunks=auto`` rule."""
    return ("hir-insert-reshardings,hir-convert-to-communication,"
            f"hir-p2p-pipeline{{backend=cuda chunks=auto overlap={overlap}}},hir-lower")


# Named pipelines, expanded in place (mlir-opt's registered pass pipelines).
PIPELINES: dict[str, str] = {
    # hir-hoist-parameter-work only acts on functions with hir.parameter arguments
    # (hir.from_torch's state): work that reads only them runs once, not per call.
    "hir-lower": "hir-insert-reshardings,hir-convert-to-communication,hir-stream-lowering,hir-fuse-loops,"
    "hir-insert-deallocations,hir-hoist-parameter-work,canonicalize,cse",
    # hir-lower plus stream buffer reuse (opt-in: it caps each rewritten loop at
    # num-streams pool streams; see passes/reuse_stream_buffers.py).
    "hir-lower-reuse": "hir-insert-reshardings,hir-convert-to-communication,hir-stream-lowering,hir-fuse-loops,"
    "hir-reuse-stream-buffers,hir-insert-deallocations,hir-hoist-parameter-work,canonicalize,cse",
    # hir-lower with the P2P-form collectives of a sharded program (hir.from_torch's SP
    # layouts, nvFuser's stream-parallel form) pipelined on copy engines where the
    # overlap=auto rule says it pays (passes/pipeline_p2p.py); the rest run whole.
    # TorchProgram.lower(overlap="on"|"off") forces either form.
    "hir-lower-overlap": overlap_pipeline("auto"),
    # An annotated upstream shard program -> hir (issues 15, 24): a dynamic grid is an error
    # unless hir-set-grid-shape{shape=...} ran before (hir.from_shard(grid_shape=...)), TOSA to linalg, upstream
    # propagation, record the signature's shardings, partition upstream, then convert
    # (docs/from-shard.md). No cse before shard-partition: it merges tensor.empty ops,
    # and shard-partition needs each one used once. canonicalize after the TOSA lowering
    # drops the zero-point constants tosa.matmul leaves unused (shard-partition fails,
    # without a diagnostic, on a tensor constant that carries no sharding).
    "hir-from-shard": "hir-set-grid-shape,func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor,canonicalize,sharding-propagation),"
    "hir-record-shard-signature,func.func(shard-partition,canonicalize,cse),"
    "shard-simplify,func.func(canonicalize),hir-convert-shard-to-hir",
    # A program annotated on every value (upstream's partition tests): no propagation, which
    # on the pinned wheel drops halos and sharded_dims_offsets (it shards the ops around them
    # evenly and shard-partition then cannot reshard);
    # shard-partition runs on the TOSA program and TOSA is lowered after it.
    "hir-from-shard-no-propagation": "hir-set-grid-shape,hir-record-shard-signature,func.func(shard-partition,tosa-to-linalg-named,tosa-to-linalg,"
    "tosa-to-arith,tosa-to-tensor,canonicalize,cse),shard-simplify,func.func(canonicalize),hir-convert-shard-to-hir",
}


@dataclass
class Element:
    """One pipeline element: an hir pass instance, or upstream pipeline text."""

    text: str
    hir_pass: Optional[ModulePass] = None


# ``placements``: hir.from_torch lists which placement strategy placed each op (the frontend
# reads it through dumping(), as the passes read the others).
DUMP_OPTIONS = ("ir-before-all", "ir-after-all", "timing", "placements")


def dumping(name: str) -> bool:
    """Whether ``HIR_DUMP`` (comma-separated :data:`DUMP_OPTIONS`) asks for ``name``."""
    requested = {n.strip() for n in os.environ.get("HIR_DUMP", "").split(",") if n.strip()}
    unknown = requested - set(DUMP_OPTIONS)
    if unknown:
        raise ValueError(f"HIR_DUMP: unknown option(s) {', '.join(sorted(unknown))} (known: {', '.join(DUMP_OPTIONS)})")
    return name in requested


@dataclass
class Instrumentation:
    """What to do around each element (mlir-opt's --mlir-print-ir-* and --mlir-timing).
    ``HIR_DUMP`` (like nvFuser's NVFUSER_DUMP) switches them on for every pipeline run, e.g.
    ``HIR_DUMP=ir-after-all,timing``; names: ir-before-all, ir-after-all, timing (and
    placements, for hir.from_torch)."""

    print_before_all: bool = field(default_factory=lambda: dumping("ir-before-all"))
    print_after_all: bool = field(default_factory=lambda: dumping("ir-after-all"))
    timing: bool = field(default_factory=lambda: dumping("timing"))
    # mlir-opt's --verify-each: verify after every element (False: once, at the end; the
    # Python verifiers of a large module cost about as much as a pass).
    verify_each: bool = True
    out: TextIO = field(default_factory=lambda: sys.stderr)
    timings: list[tuple[str, float]] = field(default_factory=list)


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
                raise ValueError(f"'{nested[0]}' is a module-level hir pass: write it at the top level "
                                 f"(builtin.module({nested[0]})), not nested in '{anchor}(...)'")
            _upstream_pm([item])  # validate now: a typo fails before any pass runs
            elements.append(Element(item))
    return elements


def _upstream_pm(texts: list[str]) -> PassManager:
    pipeline = f"builtin.module({','.join(texts)})"
    context = ir.Context.current or new_context()
    error = None
    with captured_fd2() as captured:
        try:
            return PassManager.parse(pipeline, context=context)
        except ValueError as err:
            error = str(err)
    if error is not None:
        text = error + "\n" + "".join(captured)
        detail = " ".join(line.strip(" :") for line in text.splitlines() if "error:" in line or "option" in line)
        detail = detail.replace("MLIR Textual PassPipeline Parser:1:1: error: ", "")
        raise ValueError(f"invalid pipeline element '{','.join(texts)}': {detail or 'rejected by MLIR'} (see hir-opt --list-passes)")


def run_pipeline(
    module: ir.Module,
    pipeline: str,
    instrumentation: Optional[Instrumentation] = None,
    source_name: Optional[str] = None,
) -> ir.Module:
    """Run ``pipeline`` on ``module`` in place. Errors raise :class:`HirError` with
    ``file:line:col: error: ...`` lines; ValueError for a malformed pipeline."""
    if not isinstance(module, ir.Module):
        hint = " (parse text with hir.parse(text))" if isinstance(module, str) else ""
        raise HirError(f"error: hir.lower: module must be an ir.Module{hint}, got {type(module).__name__}")
    if not isinstance(pipeline, str):
        raise HirError(f"error: hir.lower: pipeline must be pipeline text like 'hir-lower', got {type(pipeline).__name__}")
    inst = instrumentation or Instrumentation()
    check_disabled_env()
    elements = [e for e in parse_pipeline(pipeline) if not (e.hir_pass and is_disabled(e.hir_pass.name))]
    per_element = inst.print_before_all or inst.print_after_all or inst.timing
    groups: list[list[Element]] = []
    for element in elements:
        joinable = groups and not per_element and element.hir_pass is None and groups[-1][-1].hir_pass is None
        if joinable:
            groups[-1].append(element)
        else:
            groups.append([element])
    with module.context:
        for group in groups:
            label = ",".join(e.text for e in group)
            if inst.print_before_all:
                _dump(inst.out, f"IR Dump Before {label}", module)
            start = time.perf_counter()
            if group[0].hir_pass is not None:
                _run_hir_pass(group[0].hir_pass, module, source_name, inst.verify_each)
            else:
                pm = _upstream_pm([e.text for e in group])
                pm.enable_verifier(inst.verify_each)
                _run_upstream(pm, module, source_name, label)
            inst.timings.append((label, time.perf_counter() - start))
            if inst.print_after_all:
                _dump(inst.out, f"IR Dump After {label}", module)
        if not inst.verify_each:
            _verify(module, source_name, f"pipeline '{pipeline}'")
    if inst.timing:
        print_timing(inst.timings, inst.out)
    return module


def _run_upstream(pm: PassManager, module: ir.Module, source_name: Optional[str], label: str) -> None:
    """Run upstream passes; their error diagnostics (emitted to the context, so a context
    without hir's handler would print them) come back in the HirError, located. A pass that
    fails without a diagnostic is named by the pipeline text ``label`` it ran in."""
    errors: list[str] = []

    def collect(diag: "ir.Diagnostic") -> bool:
        if diag.severity != ir.DiagnosticSeverity.ERROR:
            return False  # warnings and remarks go on to the context's other handlers
        errors.append(format_diagnostic(diag, source_name))
        return True

    handler = module.context.attach_diagnostic_handler(collect)
    try:
        pm.run(module.operation)
    except ir.MLIRError as err:
        if not errors and not err.error_diagnostics:
            where = source_name or "<input>"
            raise HirError(f"{where}: error: upstream '{label}' failed without a diagnostic (one of its passes signalled failure and said nothing)") from None
        raise HirError("\n".join(errors) or format_mlir_error(err, source_name)) from None
    finally:
        handler.detach()


def _verify(module: ir.Module, source_name: Optional[str], what: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        raise HirError(f"{source_name or '<input>'}: error: {what} produced invalid IR\n" + format_mlir_error(err, source_name)) from None


def _run_hir_pass(hir_pass: ModulePass, module: ir.Module, source_name: Optional[str], verify: bool = True) -> None:
    try:
        changed = hir_pass.run(module)
    except PassFailure as failure:
        where = format_location(failure.location, source_name) if failure.location else (source_name or "<input>")
        raise HirError(f"{where}: error: {failure.message}") from None
    if verify and changed is not False:
        _verify(module, source_name, f"pass '{hir_pass.name}'")


def _dump(out: TextIO, title: str, module: ir.Module) -> None:
    out.write(f"// -----// {title} //----- //\n{module}\n")


def print_timing(timings: list[tuple[str, float]], out: TextIO) -> None:
    """A report in the shape of mlir-opt's --mlir-timing."""
    total = sum(t for _, t in timings) or 1e-12
    bar = "===" + "-" * 73 + "==="
    out.write(f"{bar}\n{'... Execution time report ...':^79}\n{bar}\n")
    out.write(f"  Total Execution Time: {total:.4f} seconds\n\n   ----Wall Time----  ----Name----\n")
    for name, t in timings:
        out.write(f"   {t:8.4f} ({100 * t / total:5.1f}%)  {name}\n")
    out.write(f"   {total:8.4f} (100.0%)  Total\n")


