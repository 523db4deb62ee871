"""Upstream's own shard-dialect tests as a conformance suite for the hir shard bridge (issue 24).

Every function of llvm-project's shard test files (the list in ``UPSTREAM_FILES``, read from a
local llvm-project checkout: nothing is downloaded) goes through the bridge on its own module
(that function and the grids of its ``// -----`` chunk that it names):

``// -----`` splits a file only where its RUN line has ``--split-input-file``.

* annotated (a global program: no collective or device-index op, annotated or not):
  ``hir-from-shard`` then ``hir-lower``; where an upstream pass stops it, again through
  ``hir-from-shard-no-propagation`` (no propagation, as upstream's partition tests run: the
  pinned wheel's propagation drops halos), converted if that succeeds;
* partitioned (it has collectives or device indices): upstream ``tosa-to-*`` then
  ``hir-convert-shard-to-hir``, ``hir-lower``.

Each pipeline element runs on its own, so a failure is classified by who raised it:

    converted   converted and lowered (then run, below)
    upstream    a located error from the parser / verifier or upstream's own passes
                (tosa-to-linalg, sharding-propagation, shard-partition, shard-simplify), or
                one of those passes failing without any diagnostic (said so in the row)
    bridge      a located error from an hir pass (hir-record-shard-signature,
                hir-convert-shard-to-hir, hir-lower)
    internal    anything else: a Python exception, an unlocated error, invalid IR

A converted annotated program runs on Gloo ranks and every rank's outputs are compared with
the reference: the same program on a grid of one device (``shape = 1``, no partitioning, no
communication), run in this process by the interpreter, whose kernels are torch. Its grids
are resized to 2 and to 4 devices when they are 1-D (the annotated program is global, so
its result must not depend on the grid), else it runs on its own grid when that has at most 4
devices. A converted partitioned program runs on its own grid (at most 4 devices) against
``shard_spmd_reference.py``: the program run once per device in one process, its
collectives computed with torch on the devices' tensors.

    python benchmarks/shard_conformance.py --llvm-project PATH [--file SUBSTRING] [--no-run] [--worlds 2,4,8]

``PATH`` holds ``mlir/test/...`` (an llvm-project checkout; test/Upstream/shard/README.md says
which revisions). Prints one row per function and the summary table.
"""

import argparse
import os
import re
import sys
from math import prod
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside this script

from shard_conformance_cases import UPSTREAM_FILES, Case, convert, fixed_grid, programs


def resized(text: str, world: int | None) -> str | None:
    """``text`` with every grid of ``world`` devices (1-D grids only; world None: one device)."""
    grids = re.findall(r"shard\.grid @\w+\(shape = ([^)]*)\)", text)
    if world is not None and any("x" in g for g in grids):
        return None
    if world is None and any("x" in g and "?" in g for g in grids):
        return None  # a multi-D grid of unknown size: no one-device form to resize
    return re.sub(
        r"(shard\.grid @\w+\(shape = )([^)]*)\)",
        lambda m: f"{m[1]}{'x'.join(['1'] * len(m[2].split('x'))) if world is None else world})",
        text,
    )


def entry(module):
    from hir.dialect import KERNEL_ATTR

    return next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and KERNEL_ATTR not in op.operation.attributes
    )


def global_inputs(module, seed: int) -> list | None:
    import torch
    from torch_mlir import ir

    dtypes = {
        "f32": torch.float32,
        "f64": torch.float64,
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "i8": torch.int8,
        "i16": torch.int16,
        "i32": torch.int32,
        "i64": torch.int64,
    }
    gen = torch.Generator().manual_seed(seed)
    values = []
    for arg in entry(module).regions[0].blocks[0].arguments:
        if not isinstance(arg.type, ir.MemRefType):
            return None
        t = ir.MemRefType(arg.type)
        dtype = dtypes.get(str(t.element_type))
        if dtype is None:
            return None
        shape = [
            8 if ir.ShapedType.is_dynamic_size(d) else d for d in t.shape
        ]  # a dynamic extent: 8 splits over 2, 4 and 8
        values.append(
            torch.randn(shape, generator=gen).to(dtype)
            if dtype.is_floating_point
            else torch.randint(-8, 8, shape, generator=gen, dtype=dtype)
        )
    return values


def reads_undefined(text: str) -> bool:
    """Whether an op of the program reads a ``tensor.empty`` as the value it accumulates into
    (a reduction or matmul init; a generic whose payload reads its output): the result is
    undefined in MLIR, so no two runs need agree."""
    from torch_mlir import ir

    import hir

    found = []

    def visit(op):
        name = op.name
        reads_init = name in ("linalg.reduce", "linalg.matmul", "linalg.batch_matmul") or (
            name == "linalg.generic" and any(True for _ in list(op.regions[0].blocks[0].arguments)[-1].uses)
        )
        if reads_init and op.operands:
            value = op.operands[len(op.operands) - 1]
            while isinstance(value, ir.OpResult) and value.owner.name == "shard.shard":
                value = value.owner.operands[0]
            if isinstance(value, ir.OpResult) and value.owner.name == "tensor.empty":
                found.append(name)
        return ir.WalkResult.ADVANCE

    hir.parse(text, "undefined.mlir").operation.walk(visit)
    return bool(found)


def prepare_runs(case: Case, worlds: tuple) -> list:
    """Reference and per-world programs of a converted annotated case: [(world, program text,
    inputs, reference outputs)]; records why a world is not run."""
    import hir

    if not case.annotated:
        return partitioned_runs(case, worlds)
    if reads_undefined(case.text):
        for world in worlds:
            case.runs[world] = "not run: accumulates into a tensor.empty (undefined result)"
        return []
    one = resized(case.text, None)
    status, detail, reference_module = convert(case, one) if one else ("upstream", "dynamic grid", None)
    if reference_module is None:
        for world in worlds:
            case.runs[world] = f"not run: no one-device reference ({status}: {detail})"
        return []
    inputs = global_inputs(reference_module, seed=len(case.name))
    if inputs is None:
        for world in worlds:
            case.runs[world] = "not run: an argument is not a tensor of a torch dtype"
        return []
    try:
        reference = [o.clone() for o in hir.run(reference_module, [x.clone() for x in inputs], device="cpu")]
    except Exception as err:  # noqa: BLE001
        for world in worlds:
            case.runs[world] = f"not run: the reference failed ({type(err).__name__}: {str(err)[:100]})"
        return []
    own = [
        prod(int(x) for x in g.split("x"))
        for g in re.findall(r"shard\.grid @\w+\(shape = ([^)]*)\)", case.text)
        if "?" not in g
    ]
    jobs = []
    for world in worlds:
        text = resized(case.text, world)
        if text is None and own and max(own) == world:
            text = case.text
        if text is None:
            case.runs[world] = "not run: grid is multi-D or dynamic and not of this size"
            continue
        status, detail, module = convert(case, text)
        if module is None:
            case.runs[world] = f"not run: {status} at {world} devices: {detail}"
            continue
        if signature_shapes(module) != signature_shapes(reference_module):
            case.runs[world] = (
                "not run: halos on its arguments / results (their global shape, the padded blocks "
                "side by side, depends on the grid; test_from_shard_halo.py checks each block)"
            )
            continue
        jobs.append((f"{case.file}::{case.name}", world, str(module), inputs, reference, False))
    return jobs


def signature_shapes(module) -> list:
    """The global shapes of the entry function's arguments and results."""
    from torch_mlir import ir

    fn = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and "hir.kernel" not in op.operation.attributes
    )
    signature = ir.FunctionType(ir.TypeAttr(fn.operation.attributes["function_type"]).value)
    return [
        list(t.shape) if isinstance(t, ir.ShapedType) else str(t)
        for t in list(signature.inputs) + list(signature.results)
    ]


def partitioned_runs(case: Case, worlds: tuple) -> list:
    """The job of a converted partitioned case on its own grid (when that has a size in
    ``worlds``): each rank's inputs are its shard of global inputs, its reference what the
    SPMD reference computes for that device."""
    import hir
    from hir.dialect import sharding_of
    from hir.interpreter.inputs import shard
    from shard_spmd_reference import SPMD, NoRule

    grids = re.findall(r"shard\.grid @\w+\(shape = ([^)]*)\)", case.text)
    shape = fixed_grid(case.text) or (tuple(int(x) for x in grids[0].split("x")) if grids else None)
    world = prod(shape) if shape else None
    for w in worlds:
        case.runs[w] = f"not run: a partitioned program runs on its grid's {world or '?'} devices"
    if world not in worlds:
        return []
    _, _, module = convert(case)
    inputs = global_inputs(module, seed=len(case.name))
    if inputs is None:
        case.runs[world] = "not run: an argument is not a tensor of a torch dtype"
        return []
    arg_types = [a.type for a in entry(module).regions[0].blocks[0].arguments]
    ranks = [[shard(x, sharding_of(t), d) for x, t in zip(inputs, arg_types)] for d in range(world)]
    source = hir.parse(case.text, f"{case.name}.mlir")  # kept alive: fn points into it
    fn = entry(source)
    local_shapes = [list(a.type.shape) for a in fn.regions[0].blocks[0].arguments]

    def local(x, shape: list):  # a dynamic dim keeps the shard's extent
        return (
            x.reshape([n if d < 0 else d for d, n in zip(shape, x.shape)])
            if len(shape) == x.dim()
            else x.reshape(shape)
        )

    try:
        reference = SPMD(shape).run(fn, [[local(x, s) for x, s in zip(r, local_shapes)] for r in ranks])
    except NoRule as err:
        case.runs[world] = f"not run: the SPMD reference has no rule for {err}"
        return []
    return [(f"{case.file}::{case.name}", world, str(module), ranks, reference, True)]


def table(cases: list[Case], worlds: tuple) -> str:
    rows = ["| file | function | kind | result | runs | detail |", "| --- | --- | --- | --- | --- | --- |"]
    for c in cases:
        runs = ", ".join(f"{w}: {c.runs[w]}" for w in worlds if w in c.runs)
        rows.append(
            f"| {c.file.split('mlir/test/')[-1]} | {c.name} | "
            f"{'annotated' if c.annotated else 'partitioned'} | {c.status} | {runs} | {c.detail} |"
        )
    total = len(cases)
    count = {s: sum(c.status == s for c in cases) for s in ("converted", "upstream", "bridge", "internal")}
    ran = [v for c in cases for v in c.runs.values() if not v.startswith("not run")]
    summary = [
        "",
        f"functions: {total}; converted and lowered: {count['converted']}; "
        f"stopped at a located upstream error: {count['upstream']}; "
        f"located bridge error: {count['bridge']}; internal: {count['internal']}",
        f"converted or upstream-located: {count['converted'] + count['upstream']}/{total} "
        f"= {100 * (count['converted'] + count['upstream']) / max(total, 1):.1f}%",
        f"runs on Gloo ranks: {len(ran)}, equal to the reference: "
        f"{sum(v == 'ok' for v in ran)}, wrong: {sum(v != 'ok' for v in ran)}",
    ]
    return "\n".join(rows + summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--llvm-project",
        default=os.environ.get("HIR_LLVM_PROJECT"),
        help="llvm-project checkout holding mlir/test (or $HIR_LLVM_PROJECT)",
    )
    parser.add_argument("--file", default="", help="only files whose path contains this")
    parser.add_argument("--no-run", action="store_true", help="convert only; run nothing on ranks")
    parser.add_argument(
        "--worlds",
        default="2,4",
        help="Gloo world sizes to run on (comma-separated; 8 runs the 4x2 grids, slowly on 2 cores)",
    )
    args = parser.parse_args()
    if not args.llvm_project:
        parser.error("--llvm-project (or HIR_LLVM_PROJECT) is required: a checkout holding mlir/test/...")
    cases = []
    for rel in UPSTREAM_FILES:
        if args.file not in rel:
            continue
        path = os.path.join(args.llvm_project, rel)
        if not os.path.exists(path):
            print(f"missing: {path}", file=sys.stderr)
            continue
        with open(path) as f:
            cases += programs(rel, f.read())
    worlds = tuple(int(w) for w in args.worlds.split(","))
    jobs = []
    for case in cases:
        if not case.status:
            case.status, case.detail, module = convert(case)
            if module is not None and not args.no_run:
                jobs += prepare_runs(case, worlds)
    from shard_conformance_ranks import run_jobs

    for world in worlds:
        for key, verdict in run_jobs(jobs, world).items():
            case = next(c for c in cases if f"{c.file}::{c.name}" == key)
            case.runs[world] = verdict
    print(table(cases, worlds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
