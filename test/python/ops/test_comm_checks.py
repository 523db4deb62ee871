"""Transfers whose two sides disagree on shape or dtype, on 2 Gloo ranks: the header
exchange (``backends/headers.py``) refuses them with the op's location, naming both ranks
and what each holds, where Gloo alone pads a receive silently or aborts the process. A run
whose signature an earlier run verified exchanges no header (``interpreter/transfer_checks.py``).

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
        (
            f"%x: memref<2x{n}xf32, {S}>, %y: memref<{n}xf32>",
            f'"hir.allreduce"(%x, %y) {{axis = 0 : i64, backend = "gloo", reduction = "sum", '
            f"team = array<i64: 0, 1>}} : (memref<2x{n}xf32, {S}>, memref<{n}xf32>) -> !hir.work",
        )
        for n in (4, 8)
    ),
    # the same sizes, different dtypes
    "allgather_dtypes": tuple(
        (
            f"%x: memref<2x3x{t}, {S}>, %y: memref<2x3x{t}>",
            f'"hir.allgather"(%x, %y) {{axis = 0 : i64, backend = "gloo", team = '
            f"array<i64: 0, 1>}} : (memref<2x3x{t}, {S}>, memref<2x3x{t}>) -> !hir.work",
        )
        for t in ("f32", "i32")
    ),
    # a shift of 2x8 floats on rank 0, 4x8 on rank 1 (Gloo alone: the receive of the larger aborts)
    "shift_sizes": tuple(
        (
            f"%x: memref<2x{n}x8xf32, {S}>, %y: memref<{n}x8xf32>",
            f'"hir.shift"(%x, %y, %one) {{backend = "gloo", team = array<i64: 0, '
            f"1>}} : (memref<2x{n}x8xf32, {S}>, memref<{n}x8xf32>, index) -> !hir.work",
        )
        for n in (2, 4)
    ),
}


AR = (
    '"hir.allreduce"(%x{n}, %y{n}) {{axis = 0 : i64, backend = "gloo", reduction = "sum",'
    " team = array<i64: 0, 1>}} : (memref<2x{n}xf32, {S}>, memref<{n}xf32>) -> !hir.work"
)
ARGS = f"%x4: memref<2x4xf32, {S}>, %y4: memref<4xf32>, %x8: memref<2x8xf32, {S}>, %y8: memref<8xf32>"
# programs both ranks run (case: text)
SHARED = {
    # rank 0 takes the then branch (4 floats), rank 1 the else branch (8 floats)
    "if_device_index": f"""func.func @main({ARGS}) {{
  %c0 = arith.constant 0 : index
  %me = "hir.device_index"() {{mesh = array<i64: 0, 1>}} : () -> index
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {{
    %w = {AR.format(n=4, S=S)}
    "hir.wait"(%w) : (!hir.work) -> ()
  }} else {{
    %w = {AR.format(n=8, S=S)}
    "hir.wait"(%w) : (!hir.work) -> ()
  }}
  return
}}
""",
    # an all-reduce and a send 0 -> 1 (static shapes: verified by the first run only)
    "repeat_static": f"""func.func @main({ARGS}) {{
  %w = {AR.format(n=4, S=S)}
  "hir.wait"(%w) : (!hir.work) -> ()
  %me = "hir.device_index"() {{mesh = array<i64: 0, 1>}} : () -> index
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {{
    %s = "hir.send"(%y8) {{peer = 1 : i64, backend = "gloo"}} : (memref<8xf32>) -> !hir.work
    "hir.wait"(%s) : (!hir.work) -> ()
  }} else {{
    %r = "hir.recv"(%y8) {{peer = 0 : i64, backend = "gloo"}} : (memref<8xf32>) -> !hir.work
    "hir.wait"(%r) : (!hir.work) -> ()
  }}
  return
}}
""",
    # %n all-reduces: the trip count is an argument, so each run gathers its digest
    "repeat_loop": f"""func.func @main({ARGS}, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {{
    %w = {AR.format(n=4, S=S)}
    "hir.wait"(%w) : (!hir.work) -> ()
  }}
  return
}}
""",
}
# the scalar argument of each run of a SHARED case (None: no scalar, one run for a mismatch)
RUNS = {"if_device_index": [None], "repeat_static": [None, None], "repeat_loop": [1, 1, 2]}
COUNTED = ("all_gather", "all_reduce", "isend", "irecv", "broadcast", "batch_isend_irecv")


def program(case: str, rank: int) -> str:
    if case in SHARED:
        return SHARED[case]
    args, op = CASES[case][rank]
    return (
        f"func.func @main({args}) {{\n  %one = arith.constant 1 : index\n  %w = {op}\n"
        '  "hir.wait"(%w) : (!hir.work) -> ()\n  return\n}\n'
    )


def worker(case: str) -> None:
    import torch

    import hir
    from hir.interpreter import Program

    rank = int(os.environ["RANK"])
    text = program(case, rank)
    module = hir.parse(text)
    if case in SHARED:
        return shared_worker(case, rank, module)
    dtype = torch.int32 if "xi32" in text else torch.float32
    n = 8 if "8xf32" in text else 4
    inputs = {
        "send_recv_sizes": [torch.arange(n, dtype=dtype)],
        "allreduce_sizes": [torch.ones(1, n), torch.zeros(n)],
        "allgather_dtypes": [torch.ones(1, 3, dtype=dtype), torch.zeros(2, 3, dtype=dtype)],
        "shift_sizes": [torch.ones(1, 2 + 2 * rank, 8), torch.zeros(2 + 2 * rank, 8)],
    }[case]
    try:
        Program(module, device="cpu", source_name=f"rank{rank}.mlir")(inputs)
    except hir.HirError as e:
        print(f"ERROR {e}", flush=True)
        os._exit(3)  # the peer's transfer is in flight: no orderly shutdown
    print(f"DONE {inputs[0].tolist()}", flush=True)
    os._exit(0)


def shared_worker(case: str, rank: int, module) -> None:
    """Run a SHARED case once per entry of RUNS, printing the torch.distributed calls each
    run made (counted by wrapping them) and the reduced sum."""
    import torch
    import torch.distributed as dist

    import hir
    from hir.interpreter import Program

    counts: dict[str, int] = {}

    def counted(name, fn):
        def call(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return fn(*args, **kwargs)

        return call

    program = Program(module, device="cpu", source_name=f"rank{rank}.mlir")
    for name in COUNTED:
        setattr(dist, name, counted(name, getattr(dist, name)))
    for run, scalar in enumerate(RUNS[case]):
        x4, y4, y8 = torch.full((1, 4), float(rank + 1)), torch.zeros(4), torch.arange(8.0) * (1 - rank)
        inputs = (
            [x4, y4, torch.ones(1, 8), torch.zeros(8)] if case == "if_device_index" else [x4, y4, torch.ones(1, 8), y8]
        )
        counts.clear()
        try:
            program(inputs + ([] if scalar is None else [scalar]))
        except hir.HirError as e:
            print(f"ERROR {e}", flush=True)
            os._exit(3)
        print(f"RUN {run} {sorted(counts.items())} {y4.tolist()} {y8.tolist()}", flush=True)
    dist.destroy_process_group()
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


@pytest.mark.parametrize(
    "case, wants",
    [
        (
            "allreduce_sizes",
            ["'hir.allreduce' ranks disagree on what they transfer: rank 0 has 4xf32, rank 1 has 8xf32"],
        ),
        (
            "allgather_dtypes",
            ["'hir.allgather' ranks disagree on what they transfer: rank 0 has 1x3xf32, rank 1 has 1x3xi32"],
        ),
        # each rank names what the other sends it and what it receives into
        ("shift_sizes", ["'hir.shift' ranks disagree on what they transfer: rank", "has 1x2x8xf32", "has 1x4x8xf32"]),
    ],
)
def test_collective_mismatch_is_refused_on_every_rank(case, wants):
    """Both ranks fail with the located error (no Gloo abort, no result)."""
    result = _launch(case)
    for rank in (0, 1):
        out = result.ranks[rank].stdout
        stopped = result.ranks[rank].stopped and not out  # the launcher may stop the slower one first
        assert stopped or (f"ERROR rank{rank}.mlir:3:" in out and all(want in out for want in wants)), out


def test_mismatch_under_an_if_on_the_device_index_is_refused():
    """Each rank's branch holds its own all-reduce: the first run checks them, located at
    each rank's own op."""
    result = _launch("if_device_index")
    for rank, line in ((0, 6), (1, 9)):
        out = result.ranks[rank].stdout
        stopped = result.ranks[rank].stopped and not out
        assert stopped or (
            f"ERROR rank{rank}.mlir:{line}:" in out
            and "'hir.allreduce' ranks disagree on what they transfer: rank 0 has 4xf32, rank 1 has 8xf32" in out
        ), out


def _runs(case: str) -> list[list[str]]:
    """Each rank's RUN lines, split: [run, counts, reduced, received]."""
    result = _launch(case)
    runs = []
    for r in result.ranks:
        assert r.returncode == 0, r.stdout + r.stderr
        runs.append([line.split(" ", 2)[2] for line in r.stdout.splitlines() if line.startswith("RUN ")])
    return runs


def test_a_second_run_with_the_same_shapes_exchanges_no_header():
    """The first run gathers the ranks' signatures and checks each transfer (all_gather /
    header send); the second makes only its own transfers, with the same results."""
    runs = _runs("repeat_static")
    for rank, (first, second) in enumerate(runs):
        assert first.startswith("[('all_gather', 2), ('all_reduce', 1), ") and "[3.0, 3.0, 3.0, 3.0]" in first, first
        mine = "('isend', 1)" if rank == 0 else "('irecv', 1)"
        assert second.startswith(f"[('all_reduce', 1), {mine}] [3.0, 3.0, 3.0, 3.0] "), second
        assert second.endswith("[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]"), second


def test_a_trip_count_argument_checks_each_new_value_once():
    """Runs with n = 1, 1, 2: each gathers the digest of n; the second exchanges no header,
    the third (a new n) checks again."""
    for first, second, third in _runs("repeat_loop"):
        assert first.startswith("[('all_gather', 2), ('all_reduce', 1)]"), first
        assert second.startswith("[('all_gather', 1), ('all_reduce', 1)]"), second
        assert third.startswith("[('all_gather', 3), ('all_reduce', 2)]"), third


@pytest.mark.parametrize(
    "body, fixed, values",
    [
        ("%w = {ar}", True, []),
        # a branch on the device index and a loop bounded by an argument: decided per signature
        (
            '%me = "hir.device_index"() {{mesh = array<i64: 0, 1>}} : () -> index\n'
            "%f = arith.cmpi eq, %me, %c0 : index\nscf.if %f {{\n%w = {ar}\n}}",
            True,
            [],
        ),
        ("scf.for %i = %c0 to %n step %c1 {{\n%w = {ar}\n}}", True, [4]),
        # a trip count read from memory is data: every run checks
        (
            "%m = memref.load %y4[%c0] : memref<4xf32>\n%k = arith.fptosi "
            "%m : f32 to i64\n%n2 = arith.index_cast %k : i64 to index\n"
            "scf.for %i = %c0 to %n2 step %c1 {{\n%w = {ar}\n}}",
            False,
            [],
        ),
    ],
)
def test_which_programs_are_fixed(body, fixed, values):
    """The analysis behind skipping: what decides whether a transfer runs must be a
    signature value (``transfer_checks.py``)."""
    import hir
    from hir.interpreter.transfer_checks import Analysis

    text = (
        f"func.func @main({ARGS}, %n: index) {{\n%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        + body.format(ar=AR.format(n=4, S=S))
        + "\nreturn\n}\n"
    )
    module = hir.parse(text)
    with module.context:
        analysis = Analysis(module, "main")
    assert (analysis.fixed, sorted(analysis.values)) == (fixed, values)


CALLEE = f"""func.func private @reduce(%x4: memref<2x4xf32, {S}>, %y4: memref<4xf32>) {{
  %w = {AR.format(n=4, S=S)}
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}}
func.func @main(%x4: memref<2x4xf32, {S}>, %y4: memref<4xf32>, %x8: memref<2x?xf32, {S}>, %y8: memref<?xf32>,
    %flag: i1) {{
  %c0 = arith.constant 0 : index
  %v = memref.load %y4[%c0] : memref<4xf32>
  %zero = arith.constant 0.0 : f32
  %data = arith.cmpf ogt, %v, %zero : f32
  CALL
  return
}}
"""


@pytest.mark.parametrize(
    "call, fixed, values",
    [
        ("REDUCE", True, []),
        ("scf.if %flag {{ REDUCE }}", True, [4]),
        ("scf.if %data {{ REDUCE }}", False, []),  # a callee's transfer, under a branch on data
        # a dynamic shape (here an argument's): every run checks
        (
            '%w = "hir.allreduce"(%x8, %y8) {{axis = 0 : i64, backend '
            '= "gloo", reduction = "sum", team = array<i64: 0, 1>}} '
            f": (memref<2x?xf32, {S}>, memref<?xf32>) -> !hir.work",
            False,
            [],
        ),
    ],
)
def test_which_calls_and_shapes_are_fixed(call, fixed, values):
    import hir
    from hir.interpreter.transfer_checks import Analysis

    reduce = f"func.call @reduce(%x4, %y4) : (memref<2x4xf32, {S}>, memref<4xf32>) -> ()"
    module = hir.parse(CALLEE.replace("CALL", call.format().replace("REDUCE", reduce)))
    with module.context:
        analysis = Analysis(module, "main")
    assert (analysis.fixed, sorted(analysis.values)) == (fixed, values)
    assert (analysis.size_values, analysis.size_shapes) == ({4}, {2, 3})  # %flag; %x8, %y8: dynamic


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
    own = not dist.is_initialized()  # an earlier test of this process may have left one-rank Gloo group up
    if own:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        group = dist.group.WORLD if str(dist.get_backend()) == "gloo" else dist.new_group(backend="gloo")
        assert headers.enabled(group) is on
        monkeypatch.setenv(headers.CHECK_ENV, "yes")
        with pytest.raises(HirError, match=r"\$HIR_CHECK_COLLECTIVES='yes': expected 1 .* or 0"):
            headers.enabled(group)
    finally:
        if own:
            dist.destroy_process_group()


if __name__ == "__main__":
    worker(sys.argv[1])
