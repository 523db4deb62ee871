"""Every lowering lit test also runs: each chunk of test/Transforms/*.mlir is executed by the
CPU interpreter before and after each pipeline its RUN lines name, on the same random
inputs, and the outputs (returned buffers and arguments written in place) must be equal.
Chunks without a device mesh run in this process; chunks on a mesh run on 4 Gloo ranks in
one launched job. A program-level resharding op only runs once it is a collective, so mesh
chunks run with hir-insert-reshardings,hir-convert-to-communication applied last (their own
results are checked against torch by test_passes_multirank.py and test_insert_reshardings.py).

A chunk runs, in the default suite, the pipelines whose output its FileCheck lines check (a
check prefix of one of the pipeline's RUN lines appears in the chunk); the file's other
pipelines (a ``--split-input-file`` RUN line transforms every chunk of its file, checked or
not) run on it with HIR_TEST_SLOW=1."""

import os
import re
import sys
from pathlib import Path

import pytest

TRANSFORMS = Path(__file__).resolve().parents[1] / "Transforms"
WORLD = 4
PIPELINE = re.compile(r"--pass-pipeline='([^']*)'")
PREFIXES = re.compile(r"--check-prefix(?:es)?[= ]([\w,-]+)")
DIRECTIVE = re.compile(r"//\s*([A-Z][A-Z0-9_-]*?)(?:-NEXT|-NOT|-DAG|-LABEL|-SAME|-EMPTY|-COUNT-\d+)?:")


def checked_by(text: str) -> dict[str, set[str]]:
    """pipeline -> the FileCheck prefixes of the RUN lines that name it."""
    found: dict[str, set[str]] = {}
    for line in text.splitlines():
        if "RUN:" in line and (pipeline := PIPELINE.search(line)):
            prefixes = PREFIXES.search(line)
            found.setdefault(pipeline[1], set()).update(prefixes[1].split(",") if prefixes else ["CHECK"])
    return found


def chunks() -> list[tuple[str, str, list[str], list[str]]]:
    """(name, text, checked pipelines, other pipelines) for every chunk of every Transforms test."""
    out = []
    for path in sorted(TRANSFORMS.glob("*.mlir")):
        text = path.read_text()
        pipelines = checked_by(text)
        for i, chunk in enumerate(text.split("// -----")):
            if "func.func" in chunk:
                used = set(DIRECTIVE.findall(chunk))
                checked = sorted(p for p, prefixes in pipelines.items() if prefixes & used)
                out.append((f"{path.name}#{i}", chunk, checked, sorted(set(pipelines) - set(checked))))
    return out


def devices(text: str) -> set[int]:
    found: set[int] = set()
    for mesh in re.findall(r"#hir\.shard<array<i64(?::([^>]*))?>", text):
        found |= {int(d) for d in mesh.split(",") if d.strip()}
    for layout in re.findall(r"#hir\.shard<dense<([^>]*)>", text):  # multi-D meshes
        found |= {int(d) for d in re.findall(r"\d+", layout)}
    return found


def entries(module) -> list[str]:
    from torch_mlir.dialects import func

    names = []
    for op in module.body.operations:
        if isinstance(op, func.FuncOp) and "sym_visibility" not in op.attributes and "hir.kernel" not in op.attributes:
            names.append(op.name.value)
    return names


def run_chunk(name: str, text: str, pipelines: list[str], rank: int, reference_pipeline=None) -> list[str]:
    """Problems found running one chunk on this rank (empty: all stages agree)."""
    import torch

    import hir
    from hir.interpreter import run
    from hir.interpreter.inputs import build_inputs

    problems = []
    for entry in entries(hir.parse(text, name)):

        def execute(pipeline, entry=entry):
            module = hir.parse(text, name)
            for stage in (pipeline, reference_pipeline):
                if stage:  # a mesh chunk's resharding ops run once they are collectives
                    hir.lower(module, stage)
            fn = next(
                op for op in module.body.operations if getattr(op, "name", None) is not None and op.name.value == entry
            )
            types = list(fn.type.inputs)
            specs = [
                "random:" + "x".join("4" if d < 0 else str(d) for d in ir_shape(t)) if is_dynamic(t) else "random"
                for t in types
            ]
            args = build_inputs(types, specs, rank=rank, seed=7, device=torch.device("cpu"))
            outs = run(module, args, entry=entry, device="cpu")
            return [t for t in list(outs) + args if isinstance(t, torch.Tensor)]

        reference = execute(reference_pipeline)
        for pipeline in pipelines:
            got = execute(pipeline)
            same = len(got) == len(reference) and all(
                torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(got, reference)
            )
            if not same:
                problems.append(f"{name} @{entry}: '{pipeline}' changed the results")
    return problems


def ir_shape(t) -> list[int]:
    from torch_mlir import ir

    return list(ir.MemRefType(t).shape) if isinstance(t, ir.MemRefType) or str(t).startswith("memref") else []


def is_dynamic(t) -> bool:
    return any(d < 0 for d in ir_shape(t))


SINGLE = [c for c in chunks() if not devices(c[1])]
MULTI = [c for c in chunks() if devices(c[1]) and max(devices(c[1])) < WORLD]
OTHERS = "others"  # the slow set: each chunk's unchecked pipelines


def single_cases() -> list:
    cases = [pytest.param(name, text, checked, id=name) for name, text, checked, _ in SINGLE]
    slow = pytest.mark.slow
    cases += [pytest.param(n, t, others, id=f"{n}-{OTHERS}", marks=slow) for n, t, _, others in SINGLE if others]
    return cases


@pytest.mark.parametrize("name,text,pipelines", single_cases())
def test_single_process_chunk(name, text, pipelines):
    pytest.importorskip("torch")
    assert not run_chunk(name, text, pipelines, rank=0)


def pipelines_of(chunk: tuple, which: str) -> list[str]:
    return chunk[3] if which == OTHERS else chunk[2]


@pytest.mark.parametrize("which", ["checked", pytest.param(OTHERS, marks=pytest.mark.slow)])
def test_mesh_chunks_on_4_ranks(which):
    pytest.importorskip("torch")
    from multirank_util import launch_ranks

    assert MULTI, "no Transforms chunk on a device mesh"
    result = launch_ranks(WORLD, __file__, which, timeout_s=240, env={**os.environ, "HIR_DEVICE": "cpu"})
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    ran = [c for c in MULTI if pipelines_of(c, which)]
    assert sum(r.stdout.count(" ok\n") for r in result.ranks) == WORLD * len(ran), report


def worker(which: str) -> int:
    rank = int(os.environ["RANK"])
    failures = []
    for chunk in MULTI:
        if not (pipelines := pipelines_of(chunk, which)):
            continue
        name, text = chunk[:2]
        problems = run_chunk(name, text, pipelines, rank, "hir-insert-reshardings,hir-convert-to-communication")
        failures += problems
        if not problems:
            print(f"{name} ok", flush=True)
    for failure in failures:
        print(f"rank {rank}: {failure}", file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1]))
