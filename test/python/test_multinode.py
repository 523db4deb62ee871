"""Two nodes simulated on one machine: two ``torchrun --nnodes=2 --nproc-per-node=2
--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:PORT`` processes started together, 4 Gloo
ranks on the CPU, each running ``hir-run`` (docs/multi-node.md runs the 2x2 dp x tp program
the same way, in the docs test).

- A node that dies (its torchrun and ranks killed mid-run) makes the other node exit
  non-zero before its ranks' ``--timeout`` fires.
- ``hir-run --timeout`` on a rank of a torchrun launch stops that rank (status 124).
- Slow: an MLP imported with ``hir-import`` on a 2x2 mesh (dp over mesh axis 0, across the
  nodes; Megatron tp over mesh axis 1, inside them), lowered with 2 ranks per node: its tp
  allreduce on copy engines, its dp allgather on NCCL (Gloo here); every rank's output
  equals the module's in one process (the docs run the same in the default suite). A node
  that hangs: the other node's ranks fail after $HIR_DIST_TIMEOUT.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from multinode_programs import LOOP, MLP

torch = pytest.importorskip("torch")

BIN = Path(sys.executable).parent
# The ranks' --timeout in the looping runs: the bound a node's failure must beat. Checked by
# the ranks' own message (which a --timeout prints), never by the wall time a test took, so a
# loaded machine only makes a test slower.
RANK_TIMEOUT_S = 600
LOWER_2_PER_NODE = (
    "hir-set-node-layout{ranks-per-node=2},hir-insert-reshardings,hir-convert-to-communication{backend=cuda},hir-lower"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nodes(command: list[str], cwd: Path, node_env: tuple = ({}, {}), **env: str) -> list[subprocess.Popen]:
    """Node 0 and node 1 of a 2-node torchrun launch, each in its own session (so the test
    can stop a node with all its ranks), logging to ``node0.log`` / ``node1.log``;
    ``node_env``: each node's own variables."""
    port = free_port()
    base = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "HIR_DEVICE": "cpu", **env}
    procs = []
    for node in (0, 1):
        environment = {**base, **node_env[node]}
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            f"--node-rank={node}",
            "--nproc-per-node=2",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            "--rdzv-conf=join_timeout=120",
            "--no-python",
        ]
        log = open(cwd / f"node{node}.log", "w")
        procs.append(
            subprocess.Popen(
                launcher + command,
                cwd=cwd,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        log.close()
    return procs


def stop(proc: subprocess.Popen) -> None:
    """Kill a node started by :func:`start_nodes`: its torchrun (its session) and its ranks,
    which torchrun starts in sessions of their own."""
    if proc.poll() is None:
        ranks = children(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in ranks:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it ended meanwhile
    proc.wait()


def wait_nodes(procs: list[subprocess.Popen], cwd: Path, timeout_s: float) -> list[int]:
    """The nodes' exit statuses; a node still running after ``timeout_s`` is killed and fails the test."""
    deadline = time.monotonic() + timeout_s
    try:
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"a node ran past {timeout_s:g} s\n{logs(cwd)}")
    finally:
        for proc in procs:
            stop(proc)
    return [proc.returncode for proc in procs]


def logs(cwd: Path) -> str:
    return "\n".join(f"--- node{n}.log\n{(cwd / f'node{n}.log').read_text()}" for n in (0, 1))


def tool(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(BIN / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, HIR_DEVICE="cpu"),
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow
def test_imported_model_on_two_nodes(tmp_path):
    """A 2x2 dp x tp MLP from hir-import on two simulated nodes equals the module run in one
    process (slow: docs/multi-node.md's example runs the same launch in the default suite)."""
    (tmp_path / "mlp.py").write_text(MLP)
    tool("hir-import", "mlp.py", "-o", "mlp.mlir", cwd=tmp_path)
    lowered = tool("hir-opt", "mlp.mlir", f"--pass-pipeline=builtin.module({LOWER_2_PER_NODE})", cwd=tmp_path).stdout
    tp = [line for line in lowered.splitlines() if '"hir.allreduce"' in line]
    dp = [line for line in lowered.splitlines() if '"hir.allgather"' in line]
    assert len(tp) == 1 and 'backend = "cuda"' in tp[0] and "[[0, 1], [2, 3]]" in tp[0], tp
    assert len(dp) == 1 and 'backend = "nccl"' in dp[0] and "[[0, 2], [1, 3]]" in dp[0], dp

    namespace: dict = {}
    exec(MLP, namespace)
    module, (x,) = namespace["module"], namespace["example_args"]
    inputs = []
    for i, value in enumerate([*module.state_dict().values(), x]):  # @main's arguments: the state, then the input
        torch.save(value, tmp_path / f"in{i}.pt")
        inputs.append(f"in{i}.pt")
    with torch.no_grad():
        want = module(x)

    nodes = start_nodes(
        ["hir-run", f"--lower={LOWER_2_PER_NODE}", "mlp.mlir", *inputs, "--save", "y.pt", "--timeout", "240"],
        tmp_path,
        HIR_DIST_TIMEOUT="60",
    )
    assert wait_nodes(nodes, tmp_path, 300) == [0, 0], logs(tmp_path)
    for name in ("y.pt", "y.rank1.pt", "y.rank2.pt", "y.rank3.pt"):  # every rank holds the whole output
        (got,) = torch.load(tmp_path / name)
        torch.testing.assert_close(got, want, msg=lambda m, name=name: f"{name}: {m}")


def start_looping_nodes(cwd: Path, dist_timeout: int) -> list[subprocess.Popen]:
    """Both nodes running LOOP again and again, returned once node 1 has run it (its ranks
    are exchanging data with node 0's)."""
    (cwd / "loop.mlir").write_text(LOOP)
    command = ["hir-run", "loop.mlir", "random", "200", "--warmup", "1000000", "--timeout", str(RANK_TIMEOUT_S)]
    nodes = start_nodes(command, cwd, HIR_DIST_TIMEOUT=str(dist_timeout), HIR_DEBUG="1")
    deadline = time.monotonic() + RANK_TIMEOUT_S
    while "warning: 'hir.allgather' work is never waited on" not in (cwd / "node1.log").read_text():
        if time.monotonic() > deadline or any(node.poll() is not None for node in nodes):
            for node in nodes:
                stop(node)
            pytest.fail(f"the nodes did not start looping\n{logs(cwd)}")
        time.sleep(0.2)
    return nodes


def test_dead_node_stops_the_other(tmp_path):
    """Node 1 (its torchrun and both ranks) is killed while the ranks exchange data across
    the nodes: node 0 exits non-zero (its peers' connections close; a silent peer would
    fail its collectives after $HIR_DIST_TIMEOUT) before its ranks' --timeout fires."""
    dist_timeout = 10
    node0, node1 = nodes = start_looping_nodes(tmp_path, dist_timeout)
    try:
        stop(node1)
        node0.wait(timeout=RANK_TIMEOUT_S + 120)  # a hang guard: node 0 ends by then either way
    finally:
        for proc in nodes:
            stop(proc)
    log = (tmp_path / "node0.log").read_text()
    assert node0.returncode not in (0, 124), logs(tmp_path)
    assert "ChildFailedError" in log or "RendezvousConnectionError" in log, log
    assert "did not finish in time" not in log, f"node 0 ran until its --timeout\n{logs(tmp_path)}"


@pytest.mark.slow
def test_hung_node_fails_the_other_ranks(tmp_path):
    """Node 1 stops answering (its torchrun and ranks frozen with SIGSTOP) mid-run: node 0's
    ranks fail their collectives after $HIR_DIST_TIMEOUT and exit non-zero. (Node 0's
    torchrun itself may then wait on a frozen rendezvous host: torchrun's business.)"""
    dist_timeout = 10
    node0, node1 = nodes = start_looping_nodes(tmp_path, dist_timeout)
    try:
        survivors = children(node0.pid)
        for pid in [node1.pid, *children(node1.pid)]:
            os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + RANK_TIMEOUT_S + 60  # a hang guard: their --timeout ends them by then
        while any(not zombie(pid) for pid in survivors) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        for proc in nodes:
            stop(proc)
    log = (tmp_path / "node0.log").read_text()
    assert "Timed out waiting" in log, logs(tmp_path)
    assert "did not finish in time" not in log, f"node 0's ranks ran until their --timeout\n{logs(tmp_path)}"


def zombie(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie its parent has not reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (one of ours) from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_timeout_on_a_torchrun_rank(tmp_path):
    """``--timeout`` needs --nproc, except on a rank another launcher started (RANK and
    WORLD_SIZE set, as torchrun does): that rank stops itself with status 124 wherever it
    is blocked, here waiting for a peer rank that never comes."""
    # LOOP on a 1x2 mesh: ranks 0 and 1, one node
    (tmp_path / "pair.mlir").write_text(
        LOOP.replace(
            "[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>", "[[0, 1]]> : tensor<1x2xi64>, array<i64: -1, 0>"
        )
        .replace(
            "[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>", "[[0, 1]]> : tensor<1x2xi64>, array<i64: -1, -1>"
        )
        .replace("dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>", "dense<[[0, 1]]> : tensor<1x2xi64>")
    )
    # the collective timeout far beyond the rank's --timeout: status 124 and its message
    # show that --timeout, not the collective, ended the wait, however loaded the machine
    env = dict(
        os.environ,
        HIR_DEVICE="cpu",
        RANK="0",
        WORLD_SIZE="2",
        LOCAL_WORLD_SIZE="2",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        HIR_DIST_TIMEOUT="3600",
    )
    result = subprocess.run(
        [str(BIN / "hir-run"), "pair.mlir", "random", "1", "--timeout", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 124, result.stderr
    assert "hir-run: error: --timeout 3: rank 0 did not finish in time" in result.stderr, result.stderr


# docs/multi-node.md's dp x tp program on the 2x2 mesh (two nodes of two ranks).
DP_TP = """\
!a = memref<2x4x16xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
!w = memref<2x16x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
!p = memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
!s = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
!o = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
module attributes {hir.ranks_per_node = 2 : i64} {
  func.func @main(%a: !a, %w: !w) -> !o {
    %p = memref.alloc() : !p
    "hir.matmul"(%a, %w, %p) : (!a, !w, !p) -> ()
    %s = memref.alloc() : !s
    "hir.reduction"(%p, %s) {kind = "sum", axes = array<i64: 0>} : (!p, !s) -> ()
    %o = memref.alloc() : !o
    "hir.set"(%s, %o) : (!s, !o) -> ()
    return %o : !o
  }
}
"""


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 4, reason="needs 4 GPUs")
@pytest.mark.parametrize("case", ["dp_tp", "ag_matmul_overlap_on"])
def test_two_nodes_on_4_gpus(tmp_path, case):
    """Two simulated nodes of 2 GPUs each (CUDA_VISIBLE_DEVICES 0,1 and 2,3), NCCL: the dp x
    tp program's tp allreduce runs on copy engines inside each node and its dp allgather on
    NCCL across them; the AG+matmul over all 4 ranks pipelined with overlap=on shifts on
    NCCL, its symmetric buffers ordinary ones. Every rank's output equals torch's."""
    from test_p2p_pipeline_options import ag_matmul

    torch.manual_seed(0)
    if case == "dp_tp":
        program, lower = DP_TP, "hir-convert-to-communication{backend=cuda},hir-lower"
        a, w = torch.randn(2, 4, 16), torch.randn(2, 16, 8)
        want = (a @ w).sum(0)
    else:
        program = ag_matmul(4, 16, 32, 32).replace("bf16", "f32")
        lower = (
            "hir-set-node-layout{ranks-per-node=2},"
            "hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=on},hir-lower"
        )
        a, w = torch.randn(4, 4, 32), torch.randn(32, 8)
        want = a @ w
    (tmp_path / "p.mlir").write_text(program)
    torch.save(a, tmp_path / "a.pt")
    torch.save(w, tmp_path / "w.pt")
    nodes = start_nodes(
        ["hir-run", f"--lower={lower}", "p.mlir", "a.pt", "w.pt", "--save", "out.pt", "--timeout", "240"],
        tmp_path,
        node_env=({"CUDA_VISIBLE_DEVICES": "0,1"}, {"CUDA_VISIBLE_DEVICES": "2,3"}),
        HIR_DEVICE="cuda",
        HIR_DIST_TIMEOUT="60",
        NCCL_NVLS_ENABLE="0",
        TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
        NVSHMEM_DISABLE_NVLS="1",
    )
    assert wait_nodes(nodes, tmp_path, 300) == [0, 0], logs(tmp_path)
    for name in ("out.pt", "out.rank1.pt", "out.rank2.pt", "out.rank3.pt"):
        (got,) = torch.load(tmp_path / name)
        torch.testing.assert_close(got.cpu(), want, rtol=1e-3, atol=1e-3, msg=lambda m, name=name: f"{name}: {m}")
