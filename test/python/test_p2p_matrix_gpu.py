"""Every hir-p2p-pipeline schedule on 2 and 4 GPUs, checked against a float32 reference (issue 39).

The Gloo tests cannot see a stream race (Gloo transfers are host-side and CPU streams keep
program order), and a missing wait on GPU shows only under unlucky timing: the
``accumulate=1 chunks=2 transfer=push`` ring once passed its tests and gave 0.1-0.5
relative error on 4 GPUs. Here every option combination that changes the schedule
(algorithm x transfer x accumulate x chunks in {1, 2, 4, auto} x comm-stream x streams x
copies) of four forms, AG+matmul, matmul+RS (both nvFuser's P2P forms, built with the
builder), the imported sequence-parallel MLP (an all-gather and a reduce-scatter,
``Inputs/sp_mlp_<world>.mlir``) and the tensor-parallel matmul+AR (a contraction + sum
all-reduce, also under its own option: ``allreduce=rs-ag``, the pipelined reduce-scatter +
all-gather, and ``chunked``, the row blocks), is lowered; combinations that lower to the same program
collapse (an option the form ignores); each distinct program runs eagerly and as a CUDA-graph
replay, both with ``HIR_COMM_DELAY_CYCLES`` (every transfer and signal held back on its
stream, so a consumer that does not wait reads stale data every time, not by bad luck), and
each result must be within 1e-2 (bf16) of float32 torch, relative.

    pytest -m gpu test/python/test_p2p_matrix_gpu.py        # on a machine with 2+ GPUs
    python test/python/test_p2p_matrix_gpu.py --emit        # rewrite Inputs/ (needs torch_mlir.fx)
    python test/python/test_p2p_matrix_gpu.py --emit-lowered .device/p2p_matrix.tar.xz

Lowering 1280 pipelines per world size takes minutes of CPU; ``--emit-lowered`` does it ahead
(here) and writes every distinct lowered program to an archive; with ``HIR_P2P_MATRIX=<it>``
the GPU workers read the programs from it instead of lowering them (the archive records each
program's pipeline and a digest of the dialect and pass code that lowered them; the workers
check it covers the matrix of today's ``pipelines()`` and was lowered by today's code).

``test_sp_mlp_inputs_are_current`` (CPU) re-imports the MLP and compares with Inputs/, so the
checked-in modules cannot drift from what ``hir.from_torch`` makes.
"""

import itertools
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from multirank_util import finish_worker, launch_workers
from p2p_matrix_forms import FORMS, INPUTS, emit_sp_mlp

TOLERANCE = 1e-2  # bf16 against float32, relative (Frobenius)
DELAY_CYCLES = "200000"  # ~0.1 ms per transfer / signal on an H100
OPTIONS = {
    "algorithm": ("local-first", "ring"),
    "transfer": ("pull", "push"),
    "accumulate": ("0", "1"),
    "chunks": ("1", "2", "4", "auto"),
    "comm-stream": ("0", "1"),
    "streams": ("1", "n"),
    "copies": ("1", "2"),
}
# Options of one form only: the form of the TP contraction + all-reduce (allreduce=auto is
# rs-ag where the rows split, as here).
FORM_OPTIONS = {"matmul+AR": {"allreduce": ("rs-ag", "chunked")}}


def pipelines(world: int, form: str = "") -> list[str]:
    """Every option combination (with ``form``'s own options) as a schedule pipeline
    (``streams=n``: one stream per team member); ``hir-lower`` follows once per distinct
    schedule."""
    options = {**OPTIONS, **FORM_OPTIONS.get(form, {})}
    names = list(options)
    out = []
    for values in itertools.product(*options.values()):
        opts = " ".join(f"{k}={str(world) if v == 'n' else v}" for k, v in zip(names, values))
        out.append(f"hir-convert-to-communication{{backend=cuda}},hir-p2p-pipeline{{{opts}}}")
    return out


def _relative_error(got, reference) -> float:
    return ((got.float() - reference).norm() / reference.norm()).item()


def _check_program(module, local: list, reference, dev) -> list[str]:
    """Run ``module`` eagerly and as a graph replay, the comm delay on (on CPU: eagerly):
    the errors of the runs above the tolerance."""
    from hir.interpreter import compile as compile_program
    from hir.interpreter.backends.delay import COMM_DELAY_ENV

    wrong = []
    # The delay only makes a missing wait fail every time where undelayed runs fail by luck.
    modes = (("eager, delayed", True), ("graph, delayed", True)) if dev.type == "cuda" else (("eager", False),)
    for mode, delay in modes:
        if delay:
            os.environ[COMM_DELAY_ENV] = DELAY_CYCLES
        else:
            os.environ.pop(COMM_DELAY_ENV, None)
        graph = mode.startswith("graph")
        program = compile_program(module, device=str(dev), graph=graph, static_outputs=graph)
        for _ in range(3 if graph else 2):  # a graph: eager warm-up, capture, replay
            got = program(local)[0]
        err = _relative_error(got, reference)
        if not err <= TOLERANCE:
            wrong.append(f"{mode}: relative error {err:.2e}")
    os.environ.pop(COMM_DELAY_ENV, None)
    return wrong


def lowered_programs(world: int, form: str, build, limit=None):
    """(pipeline, lowered module text) of every distinct schedule of ``form``: lowered here,
    or read from the archive $HIR_P2P_MATRIX (``--emit-lowered``)."""
    import hashlib
    import tarfile

    import hir

    archive = os.environ.get("HIR_P2P_MATRIX")
    if archive:
        with tarfile.open(archive) as tar:
            made_from = (
                tar.extractfile(SOURCE_MEMBER).read().decode()
                if SOURCE_MEMBER in tar.getnames()
                else "nothing recorded"
            )
            if made_from != lowering_source():
                raise SystemExit(
                    f"{archive}: lowered by other dialect / pass code than "
                    f"this checkout's ({made_from}): rerun --emit-lowered"
                )
            members = sorted(
                (m for m in tar.getmembers() if m.name.startswith(f"{world}/{_key(form)}/")), key=lambda m: m.name
            )
            texts = [tar.extractfile(m).read().decode() for m in members]
        out = [(text.split("\n", 1)[0].removeprefix("// pipeline: "), text) for text in texts]
        covered = {p for p, _ in out}
        if not covered <= set(pipelines(world, form)) or not out:
            raise SystemExit(f"{archive}: stale for {form} on {world} ranks: rerun --emit-lowered")
        return out[:limit]
    seen: dict[str, str] = {}
    out = []
    for pipeline in pipelines(world, form)[:limit]:
        module = build()
        hir.lower(module, pipeline)
        key = hashlib.sha1(str(module).encode()).hexdigest()
        if key in seen:  # an option this form ignores: the same schedule
            continue
        seen[key] = pipeline
        hir.lower(module, "hir-lower")
        out.append((pipeline, f"// pipeline: {pipeline}\n{module}"))
    return out


SOURCE_MEMBER = "lowering-source.sha256"


def lowering_source() -> str:
    """A digest of the code that lowers the programs (dialect/ and passes/ of this checkout):
    an archive lowered by other code is stale even where its pipelines match."""
    import hashlib

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(p for folder in ("dialect", "passes") for p in (root / folder).rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _key(form: str) -> str:
    return form.replace("+", "_").replace(" ", "_")


def emit_lowered(path: str) -> None:
    """Write every form's distinct lowered programs for 2 and 4 ranks to the archive ``path``."""
    import io
    import tarfile
    from concurrent.futures import ProcessPoolExecutor

    import torch

    jobs = [(world, form) for world in (2, 4) for form in FORMS]
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_lower_form, jobs))
    with tarfile.open(path, "w:xz") as tar:
        source = lowering_source().encode()
        info = tarfile.TarInfo(SOURCE_MEMBER)
        info.size = len(source)
        tar.addfile(info, io.BytesIO(source))
        for (world, form), programs in zip(jobs, results):
            for i, (_, text) in enumerate(programs):
                data = text.encode()
                info = tarfile.TarInfo(f"{world}/{_key(form)}/{i:03d}.mlir")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            print(f"{form}, {world} ranks: {len(programs)} distinct programs")
    del torch


def _lower_form(job):
    import torch

    world, form = job
    build = FORMS[form](world, 0, torch.device("cpu"))[0]
    return lowered_programs(world, form, build)


def worker() -> int:

    import torch
    import torch.distributed as dist

    import hir
    from hir.interpreter import local_arguments
    from hir.interpreter.backends.symmetric import ENV_FLAGS

    for key, value in ENV_FLAGS.items():
        os.environ.setdefault(key, value)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if os.environ.get("HIR_DEVICE") == "cpu":  # the harness itself, on Gloo (no stream can race there)
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    else:
        dev = torch.device("cuda", rank)
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    limit = int(os.environ.get("HIR_MATRIX_LIMIT", "0")) or None
    log = os.environ.get("HIR_P2P_MATRIX_LOG") if rank == 0 else None  # progress, as it goes
    failures = []
    with torch.no_grad():
        for form, make in FORMS.items():
            start = time.time()
            build, global_inputs, reference = make(world, rank, dev)
            local = [t.to(dev) for t in local_arguments(build(), global_inputs, rank)]
            programs = lowered_programs(world, form, build, limit)
            lowered = time.time() - start
            for pipeline, text in programs:
                wrong = _check_program(hir.parse(text, f"{_key(form)}.mlir"), local, reference, dev)
                failures += [f"rank {rank}: {form} [{pipeline}] {w}" for w in wrong]
            line = (
                f"rank {rank}: {form}, {world} ranks: {len(programs)} distinct programs in "
                f"{time.time() - start:.0f} s ({lowered:.0f} s lowering), {len(failures)} wrong so far"
            )
            print(line + (" ok" if not failures else ""), flush=True)
            if log:
                with open(log, "a") as f:
                    print(line, *failures, sep="\n", file=f)
    return finish_worker(failures)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.parametrize("world", [2, 4])
def test_every_p2p_schedule_is_correct(world):
    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs")
    checked, report = launch_workers(world, __file__, timeout_s=540)
    assert checked == world * len(FORMS), report
    print(report)


@pytest.mark.slow
def test_matrix_harness_on_gloo():
    """The same workers on 2 Gloo ranks, for the first 16 combinations of each form."""
    checked, report = launch_workers(
        2, __file__, timeout_s=300, env={**os.environ, "HIR_DEVICE": "cpu", "HIR_MATRIX_LIMIT": "16"}
    )
    assert checked == 2 * len(FORMS), report


def test_pipelines_cover_every_option():
    """Each option takes each of its values in some pipeline of every form
    (2 * 2 * 2 * 4 * 2 * 2 * 2; the TP form twice that: allreduce=rs-ag|chunked)."""
    for form in FORMS:
        every = pipelines(4, form)
        options = {**OPTIONS, **FORM_OPTIONS.get(form, {})}
        expected = 256 * (2 if form in FORM_OPTIONS else 1)
        assert len(every) == expected and len(set(every)) == expected, form
        for key, values in options.items():
            for value in values:
                assert any(f"{key}={'4' if value == 'n' else value}" in p for p in every), (form, key, value)


def test_an_archive_of_other_lowering_code_is_refused(tmp_path, monkeypatch):
    """The GPU workers refuse an archive lowered before the passes changed (its pipelines
    match, its programs are yesterday's): the digest of dialect/ and passes/ differs."""
    import io
    import tarfile

    program = f"// pipeline: {pipelines(2)[0]}\nmodule {{}}"

    def archive(source: str) -> str:
        path = tmp_path / f"{source[:8]}.tar.xz"
        with tarfile.open(path, "w:xz") as tar:
            for name, data in ((SOURCE_MEMBER, source.encode()), ("2/AG_matmul/000.mlir", program.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return str(path)

    monkeypatch.setenv("HIR_P2P_MATRIX", archive(lowering_source()))
    assert lowered_programs(2, "AG+matmul", None) == [(pipelines(2)[0], program)]
    monkeypatch.setenv("HIR_P2P_MATRIX", archive("0" * 64))
    with pytest.raises(SystemExit, match="lowered by other dialect / pass code than this checkout's"):
        lowered_programs(2, "AG+matmul", None)


@pytest.mark.parametrize("world", [2, 4])
def test_sp_mlp_inputs_are_current(world):
    """Inputs/sp_mlp_<world>.mlir is what hir.from_torch makes of the MLP today."""
    pytest.importorskip("torch_mlir.fx")
    assert (INPUTS / f"sp_mlp_{world}.mlir").read_text() == emit_sp_mlp(world), f"stale: rerun python {__file__} --emit"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--emit-lowered"]:
        emit_lowered(sys.argv[2])
        sys.exit(0)
    if sys.argv[1:] == ["--emit"]:
        INPUTS.mkdir(exist_ok=True)
        for n in (2, 4):
            (INPUTS / f"sp_mlp_{n}.mlir").write_text(emit_sp_mlp(n))
        sys.exit(0)
    sys.exit(worker())
