"""The ``cuda`` communication backend (copy-engine P2P through peer buffers, backends/copy_engine.py) and
``hir-p2p-pipeline`` (nvFuser AG_matmul_P2p and its reduce-scatter mirror), run on 2 and 4 ranks: Gloo on CPU (where
``backend = "cuda"`` falls back to the process group) and, with HIR_DEVICE=cuda, on GPUs
with the copy-engine path. Every rank compares its output with a torch reference.

``python test_p2p.py`` is the per-rank worker (launched by ``hir.tools.launch``).
"""

import os
import sys

import pytest
from p2p_programs import ag_matmul, collectives, matmul_rs

# hir-p2p-pipeline option sets; every one runs both programs (m = 8 rows per shard).
OPTIONS = (
    "algorithm=local-first",
    "algorithm=ring",
    "streams=4 copies=2",
    "chunks=2 transfer=push",
    "algorithm=ring streams=2 chunks=4 comm-stream=1",
    "transfer=push comm-stream=1 chunks=auto",
    "accumulate=1 chunks=2",
    "accumulate=1 transfer=push comm-stream=1",
)
# The quick form (8 ranks): the pipelines only, under these option sets.
QUICK_OPTIONS = (
    "algorithm=ring chunks=2 transfer=push comm-stream=1",
    "streams=8 chunks=auto",
    "accumulate=1 chunks=2 transfer=push",
)


def worker() -> int:
    import torch

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # multirank_util
    import hir
    from hir.interpreter import compile as compile_program
    from hir.interpreter.backends import one_shot, peer_buffers, symmetric
    from multirank_util import finish_worker

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = os.environ.get("HIR_DEVICE", "cpu")
    if device == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    failures = []

    def check(name, got, want, tol=1e-4):
        got = got.float().cpu()
        want = want.float().cpu()
        err = ((got - want).norm() / max(want.norm(), 1e-12)).item()
        if got.shape != want.shape or err > tol:
            failures.append(
                f"rank {rank}: {name}: relative error {err:.2e} (shape {tuple(got.shape)} vs {tuple(want.shape)})"
            )
        else:
            print(f"rank {rank}: {name} ok")

    gen = torch.Generator().manual_seed(7)
    quick = os.environ.get("HIR_P2P_QUICK") == "1"
    # Collectives with backend = "cuda".
    x = torch.randn(2 * world, 3, generator=gen)
    p = torch.randn(world, 2 * world, 3, generator=gen)
    r = torch.randn(2 * world, 3, generator=gen)
    module = hir.parse(collectives(world), "collectives.mlir")
    local = [x.chunk(world, 0)[rank], p.chunk(world, 0)[rank], r]

    def run_collectives(program, tag: str) -> None:
        g, s, a, c, t = program([t.to(device) for t in local])
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        check(f"allgather{tag}", g, x)
        check(f"reduce_scatter{tag}", s, p.sum(0).chunk(world, 0)[rank])
        check(f"allreduce{tag}", a, p.amax(0))
        check(f"broadcast{tag}", c, r)
        check(f"allreduce sum{tag}", t, p.sum(0))

    # Eager runs of one program register the peer buffers they read once, on the first run.
    one_shot_before = one_shot.registrations
    program = compile_program(module, device=device, graph=False)
    if one_shot.registrations - one_shot_before != (
        1 if device.startswith("cuda") else 0
    ):  # the sum's buffer, made with the plan
        failures.append(
            f"rank {rank}: {one_shot.registrations - one_shot_before} "
            "one-shot all-reduce buffers for one sum all-reduce"
        )
    for attempt in range(0 if quick else 2):
        run_collectives(program, f"#{attempt}")
        if attempt == 0:
            registered = peer_buffers.PeerBuffers.registrations
    if not quick and peer_buffers.PeerBuffers.registrations != registered:
        failures.append(
            f"rank {rank}: peer buffers registered again on the second eager "
            f"run ({registered} -> {peer_buffers.PeerBuffers.registrations})"
        )
    if device.startswith("cuda") and not quick:
        # graph="auto" (the CUDA default): the second call captures on the graph's static
        # buffers with the peer buffers the first call registered (keyed by stream role, not
        # by the capture stream); the capture and the replays register nothing.
        program = compile_program(module, device=device)
        for attempt in range(4):
            if attempt == 3:
                local = [t + 1 for t in local]
                x, p, r = x + 1, p + 1, r + 1
            run_collectives(program, f"[auto]#{attempt}")
            if attempt == 0:
                registered = peer_buffers.PeerBuffers.registrations
        state = program.graph_state
        # (a later call may also capture a graph bound to its buffers, when the allocator hands
        # it the previous call's addresses: the documented policy, not a re-registration)
        if peer_buffers.PeerBuffers.registrations != registered or state.captures < 1 or state.replays < 2:
            failures.append(
                f"rank {rank}: graph='auto' replays: {state.captures} capture(s), {state.replays} "
                f"replays, peer buffers {registered} -> {peer_buffers.PeerBuffers.registrations}"
            )
    # hir-p2p-pipeline: AG+matmul, both algorithms.
    dtype = os.environ.get("HIR_P2P_DTYPE", "f32")
    tdtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    m, k, n = 8, 16, 12
    a_full = torch.randn(world, m, k, generator=gen).to(tdtype)
    b = torch.randn(k, n, generator=gen).to(tdtype)
    want = a_full.float() @ b.float()
    tol = 1e-2 if dtype == "bf16" else 1e-4
    # hir-p2p-pipeline: reduce-scatter of a stream-parallel matmul.
    a_rs = torch.randn(world, world, m, k, generator=gen).to(tdtype)  # [dest, K-slice owner, m, k]
    w_rs = torch.randn(1, world, k, n, generator=gen).to(tdtype)
    want_rs = (a_rs.float() @ w_rs.float()).sum(1)[rank]
    symmetric_before = symmetric.SymmetricPool.allocations
    for options in QUICK_OPTIONS if quick else OPTIONS:
        for name, text, inputs, expected in (
            ("ag_matmul", ag_matmul(world, m, k, n, dtype), [a_full[rank : rank + 1], b], want),
            (
                "matmul_rs",
                matmul_rs(world, m, k, n, dtype),
                [a_rs[:, rank : rank + 1], w_rs[:, rank : rank + 1]],
                want_rs[None],
            ),
        ):
            local = [t.contiguous().to(device) for t in inputs]
            module = hir.parse(text, f"{name}.mlir")
            hir.lower(module, "hir-convert-to-communication{backend=cuda}")
            (before,) = compile_program(module, device=device)(local)  # the collective, unpipelined
            hir.lower(module, f"hir-p2p-pipeline{{{options}}},hir-lower")
            lowered = str(module)
            assert "hir.shift" in lowered and "hir.allgather" not in lowered and "hir.reduce_scatter" not in lowered, (
                lowered
            )
            chunked = "chunks=" in options and "chunks=auto" not in options  # auto: 1 at these sizes
            assert ("hir.alias_chunk" in lowered) == chunked, lowered
            assert ("hir.high_priority_streams" in lowered) == ("comm-stream=1" in options), lowered
            assert ('transfer = "push"' in lowered) == ("transfer=push" in options), (
                lowered
            )  # the all-gather pushes too
            accumulating = name == "matmul_rs" and "accumulate=1" in options  # no slot reduction
            assert ("{accumulate}" in lowered) == accumulating and ("hir.reduction" in lowered) == (
                name == "matmul_rs" and not accumulating
            ), lowered
            program = compile_program(module, device=device)
            for attempt in range(2):
                (got,) = program(local)
                check(f"{name}[{options}]#{attempt}", got, expected, tol)
            check(f"{name}[{options}] vs unpipelined", got, before, tol)
    if quick:
        return finish_worker(failures)
    # Without hir-p2p-pipeline, hir-lower runs the P2P-form collective whole (no stream loop
    # of collectives) and keeps its consumer's / producer's stream loop.
    for name, text, inputs, expected in (
        ("ag_matmul", ag_matmul(world, m, k, n, dtype), [a_full[rank : rank + 1], b], want),
        (
            "matmul_rs",
            matmul_rs(world, m, k, n, dtype),
            [a_rs[:, rank : rank + 1], w_rs[:, rank : rank + 1]],
            want_rs[None],
        ),
    ):
        module = hir.parse(text, f"{name}.mlir")
        hir.lower(module, "hir-convert-to-communication{backend=cuda},hir-lower")
        lowered = str(module)
        if "hir.shift" in lowered or lowered.count('"hir.for"') != 2:
            failures.append(
                f"rank {rank}: {name} under plain hir-lower: expected the whole "
                f"collective and one stream loop (+ its sync loop)\n{lowered}"
            )
        (got,) = compile_program(module, device=device)([t.contiguous().to(device) for t in inputs])
        check(f"{name}[plain hir-lower]", got, expected, tol)
    # streams=4 chunks=2: the chunked reduce-scatter's reducer has a pool stream of its own
    # (hir.num_streams grows past the compute streams), so the run uses one more stream.
    module = hir.parse(matmul_rs(world, m, k, n, dtype), "matmul_rs.mlir")
    hir.lower(module, "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{streams=4 chunks=2},hir-lower")
    program = compile_program(module, device=device)
    (got,) = program(
        [a_rs[:, rank : rank + 1].contiguous().to(device), w_rs[:, rank : rank + 1].contiguous().to(device)]
    )
    check("matmul_rs[streams=4 chunks=2, own reducer stream]", got, want_rs[None], tol)
    used, expected_streams = len(program.streams.live()), min(4, world) + 1
    if used != expected_streams:
        failures.append(
            f"rank {rank}: the chunked reduce-scatter used {used} distinct pool streams, expected {expected_streams}"
        )
    else:
        print(f"rank {rank}: {used} distinct pool streams ok")
    symmetric_before += 1 if device.startswith("cuda") else 0  # its slots buffer
    # Two symmetric buffers (AG staging, RS slots) per pipeline, allocated on the first run
    # and recycled by the second (GPU only: CPU runs use ordinary buffers).
    expected_symmetric = 2 * len(OPTIONS) if device.startswith("cuda") else 0
    if symmetric.SymmetricPool.allocations - symmetric_before != expected_symmetric:
        failures.append(
            f"rank {rank}: {symmetric.SymmetricPool.allocations - symmetric_before} "
            f"symmetric allocations, expected {expected_symmetric}"
        )
    return finish_worker(failures)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _gpu_param(world: int):
    return pytest.param(
        world,
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.multigpu,
            pytest.mark.skipif(_gpus() < world, reason=f"needs {world} GPUs"),
        ],
    )


def _launch(world: int, device: str, quick: bool) -> int:
    """Run the worker on ``world`` ranks; its " ok" lines over all ranks."""
    pytest.importorskip("torch")
    from multirank_util import launch_workers

    env = {
        **os.environ,
        "HIR_DEVICE": device,
        "HIR_P2P_QUICK": "1" if quick else "0",
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    oks, report = launch_workers(world, __file__, timeout_s=400, env=env)
    return oks


@pytest.mark.parametrize(
    "world,device", [(2, "cpu"), pytest.param(4, "cpu", marks=pytest.mark.slow), _gpu_param(2), _gpu_param(4)]
)
def test_cuda_backend_and_p2p_pipeline(world, device):
    auto = 20 if device == "cuda" else 0  # four graph='auto' calls of the collectives program
    assert _launch(world, device, quick=False) == world * (10 + auto + 2 * 3 * len(OPTIONS) + 2 + 2)


@pytest.mark.parametrize(
    "world,device", [pytest.param(8, "cpu", marks=pytest.mark.slow), _gpu_param(8), pytest.param(2, "cpu")]
)
def test_p2p_pipeline_world_sizes(world, device):
    """The pipelines alone (push, ring, chunks=auto, a comm stream) on 8 ranks (Gloo: slow on
    a 2-core machine, so a 2-rank case keeps the quick form covered by default) and 8 GPUs."""
    assert _launch(world, device, quick=True) == world * 2 * 3 * len(QUICK_OPTIONS)


def test_uniform_source_through_views():
    """A copy-engine shift reads a peer's symmetric buffer in place when its source is a view
    of one selected the same way on every rank: select/chunk indices must be rank-uniform
    (not built from hir.device_index); reshapes and broadcasts have no index operands."""
    import hir
    from hir.interpreter.ops.p2p import uniform_source

    sym = "memref<2x4x8xf32>"
    module = hir.parse(
        f"""func.func @main(%arg: memref<8x8xf32>) {{
  %c1 = arith.constant 1 : index
  %s = memref.alloc() {{hir.symmetric}} : {sym}
  %plain = memref.alloc() : {sym}
  %me = "hir.device_index"() {{mesh = array<i64: 0, 1>}} : () -> index
  %sel = "hir.alias_select"(%s, %c1) {{axis = 0 : i64}} : ({sym}, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
  %mine = "hir.alias_select"(%s, %me) {{axis = 0 : i64}} : ({sym}, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
  %flat = "hir.alias_reshape"(%s) {{reassociation = [[0, 1], [2]]}} : ({sym}) -> memref<8x8xf32>
  %rows = "hir.alias_reshape"(%arg) {{reassociation = [[0, 1], [2]]}} : (memref<8x8xf32>) -> memref<2x4x8xf32>
  %chunk = "hir.alias_chunk"(%flat, %c1) {{axis = 0 : i64, chunks = 2 : i64}}
      : (memref<8x8xf32>, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
  %other = "hir.alias_reshape"(%plain) {{reassociation = [[0, 1], [2]]}} : ({sym}) -> memref<8x8xf32>
  return
}}""",
        "uniform.mlir",
    )
    body = module.body.operations[0].regions[0].blocks[0]
    names = ["%c1", "%s", "%plain", "%me", "%sel", "%mine", "%flat", "%rows", "%chunk", "%other"]  # in order
    values = dict(zip(names, [op.operation.result for op in body.operations if len(op.operation.results) == 1]))
    expected = {
        "%s": True,
        "%plain": False,
        "%sel": True,
        "%mine": False,
        "%flat": True,
        "%rows": False,
        "%chunk": True,
        "%other": False,
    }
    assert {name: uniform_source(values[name]) for name in expected} == expected


def test_peer_buffer_keys_follow_stream_roles():
    """A copy-engine op's peer buffers are keyed by the role of the current stream (its pool
    index, or the caller's stream), not by the torch stream: a CUDA graph's side-stream
    warm-up, its capture stream and eager calls on any stream share the buffers the first
    run registered (issue 39: a capture registering new ones preceded an illegal memory
    access), while pool streams keep one buffer each (stream loops run them at once)."""
    import torch

    from hir.interpreter.backends.peer_buffers import PeerBuffers
    from hir.interpreter.runtime import CpuStream, StreamPool

    pool = StreamPool(torch.device("cpu"), 4)
    bufs = PeerBuffers(None, pool)

    def key_on(stream) -> tuple:
        pool.set_current(stream)
        return bufs.key((2, 3), torch.float32)

    callers = {key_on(CpuStream(None)) for _ in range(3)}  # three distinct caller streams
    assert callers == {(None, (2, 3), torch.float32)}
    assert key_on(pool.get(1)) == key_on(pool.get(5)) == (1, (2, 3), torch.float32)  # pool index 5 % 4
    assert len({key_on(pool.get(i)) for i in range(4)} | callers) == 5
    assert key_on(pool.get(3)) != bufs.key((2, 4), torch.float32)  # the local shape counts too


if __name__ == "__main__":
    sys.exit(worker())
