"""The imported sequence-parallel Megatron MLP on 2 GPUs (one NCCL rank each): its
collectives run whole (``hir-convert-to-communication{backend=nccl},hir-lower``) and
pipelined by hir-p2p-pipeline over copy engines (``backend=cuda``: shifts from symmetric
buffers), eagerly and with the default ``graph="auto"``, each equal to the unsharded module
on this rank's rows. The GPU machines have no FX importer, so the imported IR is a fixture;
a CPU test checks that it is what hir-import makes now."""

import os
import runpy
import subprocess
import sys

import pytest
import torch

from multirank_util import finish_worker, gpu_count, launch_gpu_workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "test", "Frontend", "Inputs", "megatron_mlp.py")
FIXTURE = os.path.join(ROOT, "test", "Frontend", "Inputs", "megatron_mlp_sp.mlir")
PIPELINES = (
    "hir-convert-to-communication{backend=nccl},hir-lower",
    "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower",
    "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=2},hir-lower",
)
CALLS = 3  # eager, capture, replay under graph="auto"


def test_fixture_is_what_hir_import_makes():
    pytest.importorskip("torch_mlir.fx")
    made = subprocess.run(
        [sys.executable, "-m", "hir.tools.import_cli", SOURCE],
        capture_output=True,
        text=True,
        env={**os.environ, "HIR_SP": "1"},
    )
    assert made.returncode == 0, made.stderr
    with open(FIXTURE) as f:
        assert made.stdout == f.read(), (
            "stale fixture: HIR_SP=1 hir-import test/Frontend/Inputs/megatron_mlp.py "
            "-o test/Frontend/Inputs/megatron_mlp_sp.mlir"
        )


def worker() -> int:
    import hir
    from hir.interpreter import compile as compile_program
    from hir.interpreter import local_arguments

    rank = int(os.environ["RANK"])
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    source = runpy.run_path(SOURCE)  # the module and its input, seeded as when imported
    model, (x,) = source["module"], source["example_args"]
    with torch.no_grad():
        want = model(x).chunk(2)[rank].to(device)
    with open(FIXTURE) as f:
        text = f.read()
    failures = []
    for pipeline in PIPELINES:
        module = hir.parse(text, "megatron_mlp_sp.mlir")
        hir.lower(module, pipeline)
        lowered = str(module)
        if ("hir-p2p-pipeline" in pipeline) != ('"hir.shift"' in lowered):
            failures.append(
                f"rank {rank}: [{pipeline}] shifts: {'missing' if 'hir-p2p-pipeline' in pipeline else 'unexpected'}"
            )
        args = [t.to(device) for t in local_arguments(module, list(model.state_dict().values()) + [x], rank)]
        for graph in (False, "auto"):
            program = compile_program(module, device=device, graph=graph)
            for call in range(CALLS if graph else 1):
                (got,) = program(args)
                if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
                    failures.append(
                        f"rank {rank}: [{pipeline}] graph={graph} call {call}: "
                        f"max error {(got - want).abs().max().item():.2e}"
                    )
                else:
                    print(f"rank {rank}: [{pipeline}] graph={graph} call {call} ok")
            if graph == "auto" and program.graph_state.replays < 1:
                failures.append(f"rank {rank}: [{pipeline}] graph='auto' never replayed: {program.graph_state}")
    return finish_worker(failures)


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(gpu_count() < 2, reason="needs 2 GPUs")
def test_sp_mlp_on_2_gpus_collectives_and_p2p():
    oks, report = launch_gpu_workers(2, __file__, timeout_s=300)
    assert oks == 2 * len(PIPELINES) * (1 + CALLS), report


if __name__ == "__main__":
    sys.exit(worker())
