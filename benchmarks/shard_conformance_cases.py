"""The cases of benchmarks/shard_conformance.py: each function of the upstream shard test files
as a module of its own (``programs``), and its conversion through the bridge (``convert``)."""

import re
from dataclasses import dataclass, field

UPSTREAM_FILES = (
    "mlir/test/Dialect/Shard/partition.mlir",
    "mlir/test/Dialect/Shard/simplify.mlir",
    "mlir/test/Dialect/Shard/all-scatter-op-lowering.mlir",
    "mlir/test/Dialect/Shard/process-multi-index-op-lowering.mlir",
    "mlir/test/Dialect/Shard/forward-sharding-propagation.mlir",
    "mlir/test/Dialect/Shard/backward-sharding-propagation.mlir",
    "mlir/test/Dialect/Shard/forward-backward-sharding-propagation.mlir",
    "mlir/test/Dialect/Shard/resharding-partition.mlir",
    "mlir/test/Dialect/Shard/sharding-propagation.mlir",
    "mlir/test/Dialect/Linalg/shard-partition.mlir",
    "mlir/test/Dialect/Linalg/sharding-propagation.mlir",
    "mlir/test/Dialect/Tensor/shard-partition.mlir",
    "mlir/test/Dialect/Arith/shard-partition.mlir",
    "mlir/test/Conversion/ShardToMPI/convert-shard-to-mpi.mlir",
)
TOSA = "func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor)"
# Ops only a partitioned (per-device) program has; a function without them is a global program.
PARTITIONED = re.compile(
    r"shard\.(all_gather|all_reduce|reduce_scatter|all_slice|all_to_all|shift|broadcast|gather|scatter|send|recv|reduce|update_halo|process_multi_index|process_linear_index|neighbors_linear_indices|grid_shape)\b"
)
LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.M)


@dataclass
class Case:
    file: str
    name: str
    text: str  # a module: the chunk's grids and this function
    annotated: bool
    status: str = ""
    detail: str = ""
    runs: dict = field(default_factory=dict)  # world -> "ok" / "wrong: ..." / "not run: ..."


def programs(path: str, text: str) -> list[Case]:
    """One case per function of each ``// -----`` chunk of ``text``."""
    from torch_mlir import ir

    import hir

    cases = []
    chunks = text.split("// -----") if re.search(r"^// RUN:.*split-input-file", text, re.M) else [text]
    for index, chunk in enumerate(chunks):
        if "func.func" not in chunk:
            continue
        try:
            module = hir.parse(chunk, f"{path}#{index}")
        except hir.HirError as err:  # the pinned wheel cannot read the chunk: each function stops there
            for sym in re.findall(r"func\.func @([\w$.]+)", chunk):
                cases.append(
                    Case(path, f"{sym} (chunk {index})", chunk, False, "upstream", "(parse) " + first_error(str(err)))
                )
            continue
        grids, funcs = [], []

        def collect(op, grids=grids, funcs=funcs):
            name = op.operation.name
            if name == "shard.grid":
                grids.append((ir.StringAttr(op.operation.attributes["sym_name"]).value, str(op)))
            elif name == "func.func":
                funcs.append(op)
            return ir.WalkResult.ADVANCE if name != "func.func" else ir.WalkResult.SKIP

        module.operation.walk(collect)
        for fn in funcs:
            body = str(fn)
            sym = ir.StringAttr(fn.operation.attributes["sym_name"]).value
            if any(c.name == sym for c in cases):
                sym = f"{sym} (chunk {index})"
            used = [text for name, text in grids if re.search(rf"@{re.escape(name)}\b", body)] or [
                text for _, text in grids[:1]
            ]
            cases.append(Case(path, sym, "\n".join(used + [body]) + "\n", not PARTITIONED.search(body)))
    return cases


def first_error(message: str) -> str:
    lines = [line for line in message.splitlines() if " error: " in line] or message.splitlines() or [""]
    return re.sub(r"^\S+:\d+:\d+: error: ", "", lines[0])[:150]


def fixed_grid(text: str) -> tuple[int, ...] | None:
    """The shape a case's first dynamic grid is given (2 per ``?`` extent), None if none."""
    dynamic = [g for g in re.findall(r"shard\.grid @\w+\(shape = ([^)]*)\)", text) if "?" in g]
    return tuple(2 if e == "?" else int(e) for e in dynamic[0].split("x")) if dynamic else None


def pipeline_elements(case: Case, pipeline: str) -> list[tuple[str, str]]:
    """(who raises its errors, pipeline text) for each element the case runs through."""
    from hir.passes import PIPELINES
    from hir.passes.pipeline import split_top_level

    if case.annotated:
        elements = split_top_level(PIPELINES[pipeline])
    else:
        elements = [TOSA, "hir-convert-shard-to-hir"]
    elements = [e.replace("hir-convert-shard-to-hir", "hir-convert-shard-to-hir{backend=gloo}") for e in elements]
    fixed = fixed_grid(case.text)
    if fixed:  # a grid of unknown size: converted for a world of 2 per dynamic extent
        elements.insert(0, "hir-set-grid-shape{shape=" + "x".join(map(str, fixed)) + "}")
    elements.append("hir-lower")
    return [("bridge" if e.startswith("hir-") else "upstream", e) for e in elements]


def convert(case: Case, text: str | None = None):
    """Run ``case`` (or ``text``, the case resized) through the bridge; (status, detail,
    module). An annotated case stopped by an upstream pass is tried without propagation."""
    status, detail, module = _convert(case, text, "hir-from-shard")
    if case.annotated and status == "upstream":
        retried = _convert(case, text, "hir-from-shard-no-propagation")
        if retried[0] == "converted":
            return retried
    return status, detail, module


def _convert(case: Case, text: str | None, pipeline: str):
    import hir

    try:
        module = hir.parse(text or case.text, f"{case.name}.mlir")
    except hir.HirError as err:
        return "upstream", first_error(str(err)), None
    for who, element in pipeline_elements(case, pipeline):
        try:
            hir.lower(module, element, source_name=f"{case.name}.mlir")
        except hir.HirError as err:
            message = str(err)
            if "produced invalid IR" in message:
                return "internal", f"invalid IR after {element}", None
            if who == "upstream" and "failed without a diagnostic" in message:
                return who, "(no diagnostic) " + first_error(message), None
            if not LOCATED.search(message):
                return "internal", f"unlocated error in {element}: {message[:150]}", None
            return who, first_error(message), None
        except Exception as err:  # noqa: BLE001 - any other exception is what this suite reports
            return "internal", f"{type(err).__name__} in {element}: {str(err)[:150]}", None
        if not module.operation.verify():
            return "internal", f"invalid IR after {element}", None
    return "converted", "", module
