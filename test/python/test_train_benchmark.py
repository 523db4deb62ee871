"""``benchmarks/train.py --tiny`` on the CPU, with ``--cold``: each row's first step is also
measured alone, in a fresh process of the script (``--measure-row``), and that process's
first loss, like the script's own, agrees with eager's (the script exits 1 on a WRONG row);
the table's first-step and peak columns say they are the cold ones."""

import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks", "train.py")
TOLERANCE = 1e-2  # the script's bf16 tolerance (benchmarks/timing.py)
ROWS = ["eager", "hir eager"]


def test_cold_rows_agree_with_eager(tmp_path):
    out = tmp_path / "train.json"
    argv = ["--tiny", "--cold", "--rows", ",".join(ROWS), "--rounds", "1", "--steps", "1", "--json", str(out)]
    done = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    header = next(line for line in done.stdout.splitlines() if line.startswith("| row |"))
    assert "| cold peak GiB | cold alloc. peak GiB | cold first step s |" in header, header
    for row in ROWS:
        assert f"  {row} (alone, cold): first step" in done.stdout, done.stdout
    result = json.loads(out.read_text())
    assert result["cold"] is True
    rows = {r["row"]: r for r in result["rows"]}
    assert list(rows) == ROWS
    eager = rows["eager"]
    for name, r in rows.items():
        assert "failed" not in r, (name, r)
        assert r["first_s"] > 0 and r["warm"]["first_s"] > 0, (name, r)
        for loss, base in ((r["first_loss"], eager["first_loss"]), (r["warm"]["first_loss"], eager["first_loss"])):
            assert abs(loss - base) / abs(base) <= TOLERANCE, (name, r)
        assert r["error"] <= TOLERANCE, (name, r)


def test_measure_row_needs_json():
    done = subprocess.run(
        [sys.executable, SCRIPT, "--tiny", "--measure-row", "eager"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and "--measure-row needs --json" in done.stderr, done.stderr


def test_cold_repeats_summary():
    """``--cold-repeats``: a row's runs become the median first step with its range, the
    largest peaks, and every run's loss for the check against eager's."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import train

    runs = [
        {"first_s": 61.0, "first_loss": 10.5, "peak_gib": 26.8, "alloc_peak_gib": 26.9},
        {"first_s": 40.0, "first_loss": 10.5001, "peak_gib": 26.9, "alloc_peak_gib": 26.9},
        {"first_s": 55.0, "first_loss": 10.5, "peak_gib": 26.7, "alloc_peak_gib": 27.0},
    ]
    r = train.cold_summary(runs)
    assert r["first_s"] == 55.0 and r["first_s_runs"] == [61.0, 40.0, 55.0]
    assert (r["peak_gib"], r["alloc_peak_gib"]) == (26.9, 27.0)
    assert r["first_loss_runs"] == [10.5, 10.5001, 10.5]
    assert train.first_range(r) == " (40.0-61.0)"
    assert train.first_range(train.cold_summary(runs[:1])) == ""
