"""The benchmarks refuse wrong rows (issue 39): a row whose relative error against its
float32 reference is above the tolerance prints ``WRONG (rel. error X)`` instead of a time,
the other rows still print, and the script's exit status lists it
(benchmarks/timing.py ``Verdicts``). Also through benchmarks/overlap.py's real row path: an
hir program lowered, run and timed on one Gloo rank, checked against a wrong reference."""

import math
import os
import sys

import pytest

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, BENCHMARKS)

import timing  # noqa: E402  (benchmarks/timing.py)


def test_a_wrong_row_prints_no_time_and_the_run_fails(capsys):
    verdicts = timing.Verdicts(timing.TOLERANCES["bf16"])
    verdicts.table = "matmul+RS M=8192"
    right = verdicts.row(("hir [hir-lower]", 2.0, 3.1e-3, ""), 1.0)
    wrong = verdicts.row(("hir P2P [push]", 1.5, 0.18, ""), 1.0)
    nan = verdicts.row(("hir P2P [ring]", 1.2, math.nan, ""), 1.0)
    unchecked = verdicts.row(("NCCL reduce-scatter alone", 1.0, None, ""), 1.0)
    missing = verdicts.row(("torch fused", None, None, "RuntimeError: no symmetric memory"), 1.0)
    assert right == "| hir [hir-lower] | 2.000 | 2.00x | 3.1e-03 |"
    assert wrong == "| hir P2P [push] | WRONG (rel. error 1.8e-01) |  | 1.8e-01 |"
    assert nan == "| hir P2P [ring] | WRONG (rel. error nan) |  | nan |"
    assert unchecked == "| NCCL reduce-scatter alone | 1.000 | 1.00x |  |"
    assert missing == "| torch fused | n/a | RuntimeError: no symmetric memory |  |"
    assert verdicts.finish() == 1
    listed = capsys.readouterr().out
    assert "WRONG: 2 row(s)" in listed
    assert "matmul+RS M=8192: hir P2P [push] (rel. error 1.8e-01 > 1e-02)" in listed
    assert "matmul+RS M=8192: hir P2P [ring] (rel. error nan > 1e-02)" in listed
    assert "hir [hir-lower]" not in listed


def test_the_tolerance_is_per_row_and_the_limit_itself_passes(capsys):
    verdicts = timing.Verdicts(timing.TOLERANCES["bf16"])
    assert "WRONG" not in verdicts.row(("bf16 row at the limit", 1.0, 1e-2, ""), 1.0)
    assert "WRONG" in verdicts.row(("f32 row", 1.0, 5e-3, ""), 1.0, tolerance=timing.TOLERANCES["f32"])
    assert verdicts.finish(show=False) == 1
    assert capsys.readouterr().out == ""  # ranks other than 0 list nothing but fail alike
    assert timing.Verdicts(1e-2).finish() == 0


def test_the_largest_error_keeps_nan():
    assert math.isnan(timing.worst(1e-3, math.nan))
    assert math.isnan(timing.worst(math.nan, 1e-3))
    assert timing.worst(1e-3, 2e-3) == 2e-3


@pytest.fixture
def one_gloo_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()


def test_an_hir_row_against_a_wrong_reference_is_refused(one_gloo_rank, capsys):
    import torch

    import overlap  # benchmarks/overlap.py
    from hir.builder import Builder

    def build():
        program = Builder()
        program.output(program.matmul(program.input([32, 16], "bf16"), program.input([16, 8], "bf16")))
        return program.finish()

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(32, 16, generator=gen).bfloat16()
    b = torch.randn(16, 8, generator=gen).bfloat16()
    reference = a.float() @ b.float()
    candidates = overlap.hir_candidates(build, ["hir-lower"], [a, b], reference, graph=False)
    candidates += overlap.hir_candidates(
        build, ["hir-lower"], [a, b], reference * 1.5, graph=False, tag=" (wrong reference)"
    )
    rows = overlap.in_turns(candidates, rounds=1)
    verdicts = timing.Verdicts(timing.TOLERANCES["bf16"])
    verdicts.print_rows(rows, 1.0)
    assert verdicts.finish() == 1
    right, wrong, _, _, listed = capsys.readouterr().out.split("\n", 4)
    assert right.startswith("| hir [hir-lower] | ") and "WRONG" not in right and "n/a" not in right
    assert wrong.startswith("| hir (wrong reference) [hir-lower] | WRONG (rel. error 3.3e-01) |")
    assert "hir (wrong reference) [hir-lower] (rel. error 3.3e-01 > 1e-02)" in listed


def test_rows_timed_in_turns_keep_their_order_and_checks(one_gloo_rank):
    """overlap.py's tables: every candidate timed in turns (its best round), n/a rows passed
    through in place, a row whose result goes wrong during the timed calls caught by the
    last call's check, a row with no reference timed only."""
    import torch

    import overlap  # benchmarks/overlap.py

    reference = torch.ones(4)
    calls = {"drifting": 0}

    def drifting() -> torch.Tensor:  # right on the first call, wrong afterwards
        calls["drifting"] += 1
        return torch.ones(4) * (1 if calls["drifting"] == 1 else 2)

    rows = overlap.in_turns(
        [
            ("right", lambda: torch.ones(4), reference),
            ("missing", None, None, "RuntimeError: no such op"),
            ("drifting", drifting, reference),
            ("timed only", lambda: None, None),
        ],
        rounds=2,
    )
    assert [row[0] for row in rows] == ["right", "missing", "drifting", "timed only"]
    assert rows[0][2] == 0.0 and rows[0][1] > 0
    assert rows[1] == ("missing", None, None, "RuntimeError: no such op")
    assert rows[2][2] == pytest.approx(1.0)  # |2 - 1| / |1|
    assert rows[3][1] > 0 and rows[3][2] is None
    assert calls["drifting"] > 2 * 10  # two rounds of ten timed calls, after the warm-up


def test_each_round_starts_further_down_the_rows(one_gloo_rank):
    """bench_in_turns (benchmarks/dist_timing.py): round r starts at row r * n / rounds, so no
    row is always timed first, on the coolest GPU of its round."""
    import dist_timing  # benchmarks/dist_timing.py

    order: list[int] = []

    def row(i: int):
        return lambda: order.append(i) if not order or order[-1] != i else None

    dist_timing.bench_in_turns([row(i) for i in range(4)], rounds=2, iters=2)
    assert order == [0, 1, 2, 3, 2, 3, 0, 1]


def test_a_row_that_cannot_run_is_not_available():
    """overlap.candidate: a row whose set-up or first call raises becomes its n/a row, with
    the error's first line, instead of ending the table."""
    import overlap  # benchmarks/overlap.py

    def raises():
        raise RuntimeError("no symmetric memory\nsecond line")

    label, fn, reference = overlap.candidate("built", lambda: lambda: 1, None)
    assert (label, fn(), reference) == ("built", 1, None)
    assert overlap.candidate("set-up fails", raises, None) == (
        "set-up fails",
        None,
        None,
        "RuntimeError: no symmetric memory",
    )
    assert overlap.candidate("call fails", lambda: raises, None) == (
        "call fails",
        None,
        None,
        "RuntimeError: no symmetric memory",
    )
