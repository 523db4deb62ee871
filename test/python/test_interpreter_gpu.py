"""GPU tests: CUDA streams, events, memory release and NCCL collectives (skipped cleanly
without CUDA; the NCCL runs need 2 / 4 GPUs)."""

import gc
import sys

import comm_worker
import pytest
import torch

from hir.tools.launch import launch
from interp_util import mem, program

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
T = mem([64, 256])
ROW = mem([256], layout="strided<[1], offset: ?>")


def _gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@needs_cuda
def test_interp_gpu_streams_by_index():
    """Indices 2, 2, 3 give two distinct pool CUDA streams; the caller's stream comes back."""
    text = """func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %a = "hir.get_stream"(%c2) : (index) -> !hir.stream
  "hir.set_current_stream"(%a) : (!hir.stream) -> ()
  %b = "hir.get_stream"(%c2) : (index) -> !hir.stream
  "hir.set_current_stream"(%b) : (!hir.stream) -> ()
  %c = "hir.get_stream"(%c3) : (index) -> !hir.stream
  "hir.set_current_stream"(%c) : (!hir.stream) -> ()
  return
}"""
    prog = program(text, device="cuda")
    caller = torch.cuda.current_stream()
    prog([])
    live = prog.streams.live()
    assert len(live) == 2 and all(isinstance(s, torch.cuda.Stream) for s in live)
    assert live[0] != live[1] and caller not in live
    assert torch.cuda.current_stream() == caller


@pytest.mark.gpu
@needs_cuda
def test_interp_gpu_stream_loop_with_events():
    """Rows computed on pool streams, synchronized back to the caller's stream by events:
    the result read on the caller's stream is complete."""
    text = f"""func.func @main(%a: {T}, %w: {mem([256, 256])}, %out: {T}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.for"(%c0, %c64, %c1) ({{
  ^bb0(%i: index):
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    %ra = "hir.alias_select"(%a, %i) {{axis = 0 : i64}} : ({T}, index) -> {ROW}
    %ro = "hir.alias_select"(%out, %i) {{axis = 0 : i64}} : ({T}, index) -> {ROW}
    "hir.binary"(%ra, %ra, %ro) {{kind = "mul"}} : ({ROW}, {ROW}, {ROW}) -> ()
    "hir.set_current_stream"(%user) : (!hir.stream) -> ()
    "hir.synchronize"(%s) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }}) : (index, index, index) -> ()
  %full = memref.alloc() : {T}
  "hir.matmul"(%out, %w, %full) : ({T}, {mem([256, 256])}, {T}) -> ()
  "hir.set"(%full, %out) : ({T}, {T}) -> ()
  return
}}"""
    a = torch.randn(64, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")
    out = torch.zeros(64, 256, device="cuda")
    program(text, device="cuda", num_streams=4)([a, w, out])
    torch.testing.assert_close(out, (a * a) @ w, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@needs_cuda
def test_interp_gpu_dealloc_releases_memory():
    big = mem([16, 1024, 1024])  # 64 MiB
    text = f"""func.func @main() {{
  %a = memref.alloc() : {big}
  memref.dealloc %a : {big}
  %b = memref.alloc() : {big}
  memref.dealloc %b : {big}
  return
}}"""
    prog = program(text, device="cuda")
    gc.collect()  # earlier tests' garbage must not be freed while this one measures
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    prog([])
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - base <= 64 * 2**20  # never both alive
    assert torch.cuda.memory_allocated() == base


def _nccl(nproc: int) -> None:
    result = launch(nproc, [sys.executable, comm_worker.__file__, "--device", "cuda"], timeout_s=300)
    report = "\n".join(r.stdout + r.stderr for r in result.ranks)
    assert result.returncode == 0, report
    for name in comm_worker.CASES:
        assert report.splitlines().count(f"PASS {name}") == nproc, report


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(_gpus() < 2, reason="needs 2 GPUs")
def test_comm_nccl_2_gpus():
    _nccl(2)


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(_gpus() < 4, reason="needs 4 GPUs")
def test_comm_nccl_4_gpus():
    _nccl(4)


ALLREDUCE_2 = """\
!partial = memref<2x4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
!whole = memref<4x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
func.func @main(%p: !partial) -> !whole {
  %out = memref.alloc() : !whole
  %w = "hir.allreduce"(%p, %out) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1>}
      : (!partial, !whole) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %out : !whole
}
"""


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(_gpus() < 2, reason="needs 2 GPUs")
def test_hir_run_cuda_graph_of_nccl_exits(tmp_path):
    """``hir-run --nproc 2 --cuda-graph`` on an NCCL all-reduce prints both ranks' sums and
    exits: the run's graph, which captured NCCL kernels, is freed before the process group
    is destroyed (a live one makes ``destroy_process_group`` wait forever: RESULTS.md,
    issue 39 run 13)."""
    import subprocess

    (tmp_path / "p.mlir").write_text(ALLREDUCE_2)
    command = [
        sys.executable,
        "-m",
        "hir.tools.run_cli",
        "p.mlir",
        "ones",
        "--device",
        "cuda",
        "--nproc",
        "2",
        "--cuda-graph",
        "--warmup",
        "2",
        "--print",
        "--timeout",
        "120",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        assert f"rank {rank}: output 0: shape [4, 3] f32" in done.stdout, done.stdout
    assert "[2., 2., 2.]" in done.stdout or "[2, 2, 2]" in done.stdout, done.stdout
