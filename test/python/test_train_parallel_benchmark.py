"""``benchmarks/train_parallel.py --tiny`` on Gloo ranks: every row that runs on the CPU
(FSDP2 eager, hir's fully sharded step, DTensor TP+SP eager, hir's TP+SP step, and on 4
ranks torchtitan's FSDP x TP layout and hir's 2-D step) trains the same tiny Llama and its
first steps' losses agree with FSDP2 eager's within the benchmark's tolerance (the script
exits 1 on a WRONG row); a row that cannot run here says why instead of being left out."""

import os
import re

import pytest

from multirank_util import launch_ranks

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks", "train_parallel.py")
TOLERANCE = 1e-2  # the script's bf16 tolerance (benchmarks/timing.py)


def _table(world: int, *args: str) -> dict[str, list[str]]:
    """Rank 0's table of ``train_parallel.py --tiny *args`` on ``world`` Gloo ranks:
    ``{row: cells after its name}``; asserts every rank exited 0."""
    result = launch_ranks(
        world, SCRIPT, "--tiny", "--rounds", "1", "--steps", "1", *args, timeout_s=1500, env=dict(os.environ)
    )
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    rows = {}
    for line in result.ranks[0].stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in ("fsdp", "tp", "fsdp_tp"):
            rows[re.sub(r" \(.*", "", cells[1])] = cells[2:]
    return rows


def test_rows_that_cannot_run_say_why():
    rows = _table(2, "--groups", "fsdp_tp,tp", "--rows", "async|x TP eager")  # no row runs: nothing is built
    assert "2 x N/2 mesh needs an even world of 4" in rows["FSDP2 x TP eager"][1]
    assert "needs CUDA" in rows["async-TP"][1]
    assert rows["hir TP+SP"][1] == "not selected (--rows)"


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
def test_every_cpu_row_agrees_with_fsdp2_eager(world):
    rows = _table(world, "--rows", "eager|hir", "--checked", "2")
    expected = ["FSDP2 eager", "hir FSDP", "DTensor TP+SP eager", "hir TP+SP"] + (
        ["FSDP2 x TP eager", "hir FSDP x TP"] if world == 4 else []
    )
    for name in expected:
        assert rows[name][0] not in ("n/a",) and not rows[name][0].startswith("WRONG"), (name, rows[name])
        assert float(rows[name][-1]) <= TOLERANCE, (name, rows[name])
