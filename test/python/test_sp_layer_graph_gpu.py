"""The sequence-parallel LLaMA block (test/Frontend/Inputs/llama_block.py: RMSNorm, RoPE,
causal SDPA with GQA, SwiGLU; tokens split) on 2 GPUs through hir-lower-overlap and its
forced-on and pushed / accumulating P2P forms (barriers, copy-engine shifts from symmetric
buffers, peer buffers), each run eagerly and as a ``graph=True`` CUDA graph (warm-up on a
side stream, capture, replays), every call equal to the unsharded block on this rank's
rows (issue 39: this program's graph row raised an illegal memory access during its
set-up). The graph program registers in symmetric memory exactly what an eager first run
does (its warm-up) and nothing while capturing or replaying: peer buffers are keyed by
stream role, not by the warm-up's or the capture's stream.

The GPU machines have no FX importer, so the imported IR is a fixture; a CPU test checks
that it is what hir-import makes now. ``python test_sp_layer_graph_gpu.py`` is the per-rank
worker."""

import os
import runpy
import subprocess
import sys

import pytest
import torch

from multirank_util import finish_worker, gpu_count, launch_gpu_workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "test", "Frontend", "Inputs", "llama_block.py")
FIXTURE = os.path.join(ROOT, "test", "Frontend", "Inputs", "llama_block_sp.mlir")
P2P = "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{%s},hir-lower"
PIPELINES = (
    "hir-lower-overlap",  # overlap=auto: whole at this size (the copy-engine all-gather's peer buffers)
    "on",  # hir-lower-overlap with every collective pipelined (overlap_pipeline("on"))
    P2P % "accumulate=1 chunks=2 transfer=push comm-stream=1",
)
CALLS = 3  # graph=True: warm-up + capture + replay, then two replays


def test_fixture_is_what_hir_import_makes():
    pytest.importorskip("torch_mlir.fx")
    made = subprocess.run(
        [sys.executable, "-m", "hir.tools.import_cli", SOURCE, "--placements", "sequence_placements"],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    with open(FIXTURE) as f:
        assert made.stdout == f.read(), (
            "stale fixture: hir-import test/Frontend/Inputs/llama_block.py "
            "--placements sequence_placements > test/Frontend/Inputs/llama_block_sp.mlir"
        )


def _registered() -> int:
    """Symmetric-memory rendezvous so far in this process (peer buffers, symmetric allocs)."""
    from hir.interpreter.backends.peer_buffers import PeerBuffers
    from hir.interpreter.backends.symmetric import SymmetricPool

    return PeerBuffers.registrations + SymmetricPool.allocations


def worker() -> int:
    import hir
    from hir.interpreter import compile as compile_program
    from hir.interpreter import local_arguments
    from hir.passes import overlap_pipeline

    rank = int(os.environ["RANK"])
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    source = runpy.run_path(SOURCE)  # the module and its input, seeded as when imported
    model, (x,) = source["module"], source["example_args"]
    with torch.no_grad():
        want = model(x).chunk(2, 1)[rank].to(device)
    with open(FIXTURE) as f:
        text = f.read()
    failures = []

    def check(
        what: str, got: torch.Tensor
    ) -> None:  # f32 attention kernels differ from the CPU reference's slightly; a race is far off
        if not torch.allclose(got, want, rtol=1e-3, atol=1e-4):
            failures.append(f"rank {rank}: {what}: max error {(got - want).abs().max().item():.2e}")
        else:
            print(f"rank {rank}: {what} ok")

    for pipeline in PIPELINES:
        module = hir.parse(text, "llama_block_sp.mlir")
        hir.lower(module, overlap_pipeline("on") if pipeline == "on" else pipeline)
        args = [t.to(device) for t in local_arguments(module, list(model.state_dict().values()) + [x], rank)]
        before = _registered()
        eager = compile_program(module, device=device, graph=False)
        check(f"[{pipeline}] eager", eager(args)[0])
        first_run = _registered() - before
        before = _registered()
        graphed = compile_program(module, device=device, graph=True, static_outputs=True)
        check(f"[{pipeline}] graph=True call 0 (warm-up, capture, replay)", graphed(args)[0])
        if _registered() - before != first_run:
            failures.append(
                f"rank {rank}: [{pipeline}] graph=True's warm-up and capture registered "
                f"{_registered() - before} symmetric buffers, an eager first run {first_run}"
            )
        before = _registered()
        for call in range(1, CALLS):
            check(f"[{pipeline}] graph=True call {call}", graphed(args)[0])
        if _registered() != before:
            failures.append(
                f"rank {rank}: [{pipeline}] graph=True replays registered {_registered() - before} symmetric buffers"
            )
        if graphed.graph_state.captures != 1 or graphed.graph_state.replays != CALLS:
            failures.append(f"rank {rank}: [{pipeline}] {graphed.graph_state}")
    return finish_worker(failures)


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(gpu_count() < 2, reason="needs 2 GPUs")
def test_sp_layer_overlap_graph_on_2_gpus():
    oks, report = launch_gpu_workers(2, __file__, timeout_s=300)
    assert oks == 2 * len(PIPELINES) * (1 + CALLS), report


if __name__ == "__main__":
    sys.exit(worker())
