"""hir-demo, as a user runs it: prints both programs, says what it ran (device, shapes,
streams, ranks) and that both runs match torch."""

import subprocess
import sys


def test_demo_states_what_it_ran():
    result = subprocess.run(
        [sys.executable, "-m", "hir.tools.demo", "--rows", "6"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "// ===== program level =====" in out and "// ===== after hir-lower =====" in out
    assert "// ran on cpu, 1 rank (no torch.distributed" in out
    assert "inputs x [6, 32] f32, w [32, 8] f32 -> output (x @ w) + (x @ w) [6, 8] f32" in out
    # 6 iterations on a pool of 4: every pool stream was used.
    assert "lowered run: 6 stream-loop iterations on 4 of 4 pool streams" in out
    assert out.rstrip().endswith("// demo: OK")


def test_demo_fewer_rows_than_streams():
    result = subprocess.run(
        [sys.executable, "-m", "hir.tools.demo", "--rows", "2"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "lowered run: 2 stream-loop iterations on 2 of 4 pool streams" in result.stdout
