"""hir-run --lower[=PIPELINE]: a program-level module is lowered before it runs, and the
lowered run computes what the unlowered one does (1 process) or what torch computes
(2 Gloo ranks, where an unlowered resharding op is refused with "lower it first")."""

import os
import subprocess
import sys

import pytest

from hir.tools.run_cli import main

# Stream-parallel on one rank (no mesh): runs as written and lowered.
STREAM_PARALLEL = """func.func @main(%x: memref<?x8xf32>, %w: memref<8x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %d = memref.dim %x, %c0 : memref<?x8xf32>
  %y = memref.alloc(%d) : memref<?x4xf32>
  "hir.matmul"(%x, %w, %y) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<8x4xf32>, memref<?x4xf32>) -> ()
  %z = memref.alloc(%d) : memref<?x4xf32>
  "hir.binary"(%y, %y, %z) {kind = "add", stream_axis = 0 : i64}
      : (memref<?x4xf32>, memref<?x4xf32>, memref<?x4xf32>) -> ()
  return %z : memref<?x4xf32>
}
"""

S0 = "memref<4x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>"
REP = "memref<4x2xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>"
# On 2 ranks: a stream-parallel add of the local shards, then a resharding hir.set (an allgather).
TWO_RANKS = f"""func.func @main(%a: {S0}) -> {REP} {{
  %t = memref.alloc() : {S0}
  "hir.binary"(%a, %a, %t) {{kind = "add", stream_axis = 1 : i64}} : ({S0}, {S0}, {S0}) -> ()
  %o = memref.alloc() : {REP}
  "hir.set"(%t, %o) : ({S0}, {REP}) -> ()
  return %o : {REP}
}}
"""
# The case: a resharding hir.set alone, which used to die in torch with a size mismatch.
RESHARD_ONLY = f"""func.func @main(%a: {S0}) -> {REP} {{
  %o = memref.alloc() : {REP}
  "hir.set"(%a, %o) : ({S0}, {REP}) -> ()
  return %o : {REP}
}}
"""
GATHERED = "[[0, 2],\n [4, 6],\n [8, 10],\n [12, 14]]"


def test_lower_single_process_matches_unlowered(tmp_path, capsys):
    prog = tmp_path / "p.mlir"
    prog.write_text(STREAM_PARALLEL)
    common = [str(prog), "random:6x8", "--print", "--device", "cpu"]
    assert main(common) == 0
    unlowered = capsys.readouterr().out
    # A bare --lower before the file name must not take the file name as its pipeline.
    assert main(["--lower", *common]) == 0
    assert capsys.readouterr().out == unlowered
    assert main([*common, "--lower=hir-lower-reuse"]) == 0
    assert capsys.readouterr().out == unlowered
    assert unlowered.startswith("output 0: shape [6, 4] f32")


def test_lower_bad_pipeline(tmp_path, capsys):
    prog = tmp_path / "p.mlir"
    prog.write_text(STREAM_PARALLEL)
    assert main([str(prog), "--lower=no-such-pass"]) == 1
    err = capsys.readouterr().err
    assert "hir-run: error: --lower=no-such-pass: invalid pipeline element 'no-such-pass'" in err


def run_two_ranks(tmp_path, *flags, text: str = TWO_RANKS) -> subprocess.CompletedProcess:
    prog = tmp_path / "two.mlir"
    prog.write_text(text)
    cmd = [sys.executable, "-m", "hir.tools.run_cli", "--nproc", "2", *flags, str(prog), "arange", "--print"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, HIR_DEVICE="cpu"))


@pytest.mark.parametrize(
    "text,message",
    [
        # The stream-parallel add before it would run as is; the check names the hir.set.
        (TWO_RANKS, "two.mlir:5:3: error: 'hir.set' is resharding (reads operand #0 split along axis 0"),
        (RESHARD_ONLY, "two.mlir:3:3: error: 'hir.set' is resharding ("),
    ],
    ids=["stream-parallel-then-reshard", "reshard-only"],
)
def test_unlowered_resharding_on_two_ranks_is_refused(tmp_path, text, message):
    result = run_two_ranks(tmp_path, text=text)
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert (
        "on 2 ranks it needs the communication that lowering inserts: lower it first: hir-run --lower" in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_lower_on_two_ranks_matches_torch(tmp_path):
    result = run_two_ranks(tmp_path, "--lower")
    assert result.returncode == 0, result.stderr
    # torch: arange(8).reshape(4, 2) * 2, gathered on both ranks.
    for rank in (0, 1):
        lines = [
            line[len(f"rank {rank}: ") :] for line in result.stdout.splitlines() if line.startswith(f"rank {rank}: ")
        ]
        assert "\n".join(lines) == "output 0: shape [4, 2] f32\n" + GATHERED
