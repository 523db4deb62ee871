"""Transfers whose two sides disagree on shape or dtype, on 2 Gloo ranks: the header
exchange (``backends/headers.py``) refuses them with the op's location, naming both ranks
and what each holds, where Gloo alone pads a receive silently or aborts the process.

``python test_comm_checks.py CASE`` is one rank of a case: each rank runs its own program
text (the two sides of the mismatch) and prints the error it got, then leaves at once (the
peer's half of the transfer is still in flight)."""

import os
import sys

import pytest

S = "#hir.shard<array<i64: 0, 1>, 0 : i64>"
# case: per rank (the entry's arguments, its communication op)
CASES = {
    # rank 0 sends 4 floats, rank 1 receives into 8 (Gloo alone: a silent pad)
    "send_recv_sizes": (
        ("%x: memref<4xf32>", '"hir.send"(%x) {peer = 1 : i64, backend = "gloo"} : (memref<4xf32>) -> !hir.work'),
        ("%x: memref<8xf32>", '"hir.recv"(%x) {peer = 0 : i64, backend = "gloo"} : (memref<8xf32>) -> !hir.work'),
    ),
    # all-reduce of 4 floats on rank 0, 8 on rank 1 (Gloo alone: terminate called ... EnforceNotMet)
    "allreduce_sizes": tuple(
        (f"%x: memref<2x{n}xf32, {S}>, %y: memref<{n}xf32>",
         f'"hir.allreduce"(%x, %y) {{axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}} : (memref<2x{n}xf32, {S}>, memref<{n}xf32>) -> !hir.work')
        for n in (4, 8)
    ),
    # the same sizes, different dtypes
    "allgather_dtypes": tuple(
        (f"%x: memref<2x3x{t}, {S}>, %y: memref<2x3x{t}>",
         f'"hir.allgather"(%x, %y) {{axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}} : (memref<2x3x{t}, {S}>, memref<2x3x{t}>) -> !hir.work')
        for t in ("f32", "i32")
    ),
    # a shift of 2x8 floats on rank 0, 4x8 on rank 1 (Gloo alone: the receive of the larger aborts)
    "shift_sizes": tuple(
        (f"%x: memref<2x{n}x8xf32, {S}>, %y: memref<{n}x8xf32>",
         f'"hir.shift"(%x, %y, %one) {{backend = "gloo", team = array<i64: 0, 1>}} : (memref<2x{n}x8xf32, {S}>, memref<{n}x8xf32>, index) -> !hir.work')
        for n in (2, 4)
    ),
}


def program(case: str, rank: int) -> str:
    args, op = CASES[case][rank]
    return f"func.func @main({args}) {{\n  %one = arith.constant 1 : index\n  %w = {op}\n  \"hir.wait\"(%w) : (!hir.work) -> ()\n  return\n}}\n"


def worker(case: str) -> None:
    import torch

    import hir
    from hir.interpreter import Program

    rank = int(os.environ["RANK"])
    text = program(case, rank)
    module = hir.parse(text)
    dtype = torch.int32 if "xi32" in text else torch.float32
    n = 8 if "8xf32" in text else 4
    inputs = {"send_recv_sizes": [torch.arange(n, dtype=dtype)], "allreduce_sizes": [torch.ones(1, n), torch.zeros(n)],
              "allgather_dtypes": [torch.ones(1, 3, dtype=dtype), torch.zeros(2, 3, dtype=dtype)],
              "shift_sizes": [torch.ones(1, 2 + 2 * rank, 8), torch.zeros(2 + 2 * rank, 8)]}[case]
    try:
        Program(module, device="cpu", source_name=f"rank{rank}.mlir")(inputs)
    except hir.HirError as e:
        print(f"ERROR {e}", flush=True)
        os._exit(3)  # the peer's transfer is in flight: no orderly shutdown
    print(f"DONE {inputs[0].tolist()}", flush=True)
    os._exit(0)


def _launch(case: str):
    from multirank_util import launch_ranks

    result = launch_ranks(2, os.path.abspath(__file__), case, timeout_s=60)
    assert not result.timed_out, [r.stdout + r.stderr for r in result.ranks]
    for r in result.ranks:
        assert "terminate called" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    return result


def test_send_into_a_larger_receive_is_refused():
    """Rank 1's receive names rank 0's 4xf32 and its own 8xf32, at the recv's location."""
    result = _launch("send_recv_sizes")
    out = result.ranks[1].stdout
    assert "ERROR rank1.mlir:3:" in out, out
    assert "'hir.recv' ranks disagree" in out and "rank 0 has 4xf32, rank 1 has 8xf32" in out, out
    assert "DONE" not in out


@pytest.mark.parametrize("case, wants", [
    ("allreduce_sizes", ["'hir.allreduce' ranks disagree on what they transfer: rank 0 has 4xf32, rank 1 has 8xf32"]),
    ("allgather_dtypes", ["'hir.allgather' ranks disagree on what they transfer: rank 0 has 1x3xf32, rank 1 has 1x3xi32"]),
    # each rank names what the other sends it and what it receives into
    ("shift_sizes", ["'hir.shift' ranks disagree on what they transfer: rank", "has 1x2x8xf32", "has 1x4x8xf32"]),
])
def test_collective_mismatch_is_refused_on_every_rank(case, wants):
    """Both ranks fail with the located error (no Gloo abort, no result)."""
    result = _launch(case)
    for rank in (0, 1):
        out = result.ranks[rank].stdout
        stopped = result.ranks[rank].stopped and not out  # the launcher may stop the slower one first
        assert stopped or (f"ERROR rank{rank}.mlir:3:" in out and all(want in out for want in wants)), out


@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("0", False), ("", True)])
def test_check_switch_on_gloo(monkeypatch, value, on):
    """On by default with Gloo; $HIR_CHECK_COLLECTIVES=0 turns it off (NCCL: off unless 1)."""
    import torch.distributed as dist

    from hir import HirError
    from hir.interpreter.backends import headers

    if value is None:
        monkeypatch.delenv(headers.CHECK_ENV, raising=False)
    else:
        monkeypatch.setenv(headers.CHECK_ENV, value)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert headers.enabled(dist.group.WORLD) is on
        monkeypatch.setenv(headers.CHECK_ENV, "yes")
        with pytest.raises(HirError, match=r"\$HIR_CHECK_COLLECTIVES='yes': expected 1 .* or 0"):
            headers.enabled(dist.group.WORLD)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    worker(sys.argv[1])
