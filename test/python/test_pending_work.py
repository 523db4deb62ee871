"""Communications the program never waits on are completed when the entry function returns:
nvFuser's ring exchange waits only on its receives. Each rank sends its buffer to the next
rank and receives from the previous one inside an ``scf.if`` on its device index (one SPMD
program), 100 times on 4 Gloo ranks; HIR_DEBUG=1 warns about each unwaited send.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_pending_work.py REPS`` is the per-rank worker.
"""

import os
import sys

import pytest


def ring_program(world: int) -> str:
    mesh = ", ".join(str(r) for r in range(world))
    lines = [
        "func.func @main(%buf: memref<8xf32>, %out: memref<8xf32>) {",
        f'  %me = "hir.device_index"() {{mesh = array<i64: {mesh}>}} : () -> index',
    ]
    for r in range(world):
        lines += [
            f"  %c{r} = arith.constant {r} : index",
            f"  %is{r} = arith.cmpi eq, %me, %c{r} : index",
            f"  scf.if %is{r} {{",
            f'    %s{r} = "hir.send"(%buf) {{peer = {(r + 1) % world} '
            ': i64, backend = "gloo"} : (memref<8xf32>) -> !hir.work',
            f'    %r{r} = "hir.recv"(%out) {{peer = {(r - 1) % world} '
            ': i64, backend = "gloo"} : (memref<8xf32>) -> !hir.work',
            f'    "hir.wait"(%r{r}) : (!hir.work) -> ()',
            "  }",
        ]
    lines += ["  return", "}"]
    return "\n".join(lines)


def worker(reps: int) -> int:
    import torch

    import hir
    from hir.interpreter import Program
    from hir.interpreter.backends.process_groups import shutdown

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    program = Program(hir.parse(ring_program(world), "ring.mlir"), device="cpu", source_name="ring.mlir")
    buf, out = torch.empty(8), torch.empty(8)
    bad = 0
    for rep in range(reps):
        buf.fill_(rank * 1000 + rep)
        program([buf, out])
        if not torch.equal(out, torch.full((8,), float((rank - 1) % world * 1000 + rep))):
            bad += 1
    print(f"rank {rank}: {reps - bad} of {reps} exchanges ok", flush=True)
    shutdown()
    return 1 if bad else 0


def _launch(world: int, reps: int, **env):
    from multirank_util import launch_ranks

    result = launch_ranks(world, __file__, str(reps), timeout_s=240, env={**os.environ, "HIR_DEVICE": "cpu", **env})
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    for r in result.ranks:
        assert f"{reps} of {reps} exchanges ok" in r.stdout, report
    return result


def test_ring_exchange_waiting_only_on_receives_4_ranks_100_times():
    pytest.importorskip("torch")
    result = _launch(4, 100)
    assert not any("warning" in r.stderr for r in result.ranks)


def test_unwaited_send_warns_in_debug_mode():
    pytest.importorskip("torch")
    result = _launch(2, 2, HIR_DEBUG="1")
    for r in result.ranks:
        # One warning per run, at the send of the branch this rank takes.
        line = 6 + 7 * r.rank
        assert (
            r.stderr.count(
                f"ring.mlir:{line}:11: warning: 'hir.send' work is never waited on; waited for when @main returns"
            )
            == 2
        ), r.stderr


def test_send_to_self_fails_when_it_runs():
    """Every rank compiles the branches other ranks take, so a send to itself is an error
    only if it runs."""
    import torch

    import hir
    from hir.core import HirError
    from hir.interpreter import Program
    from hir.interpreter.backends.process_groups import run_scope

    text = """func.func @main(%b: memref<4xf32>, %go: i1) {
  scf.if %go {
    %s = "hir.send"(%b) {peer = 0 : i64, backend = "gloo"} : (memref<4xf32>) -> !hir.work
  }
  return
}"""
    with run_scope():  # the program's one-rank process group ends with the test, not left to later ones
        program = Program(hir.parse(text, "self.mlir"), device="cpu", source_name="self.mlir")
        assert program([torch.zeros(4), False]) == []
        with pytest.raises(HirError, match=r"self.mlir:3:10: error: 'hir.send' peer 0 is this rank"):
            program([torch.zeros(4), True])


if __name__ == "__main__":
    sys.exit(worker(int(sys.argv[1])))
