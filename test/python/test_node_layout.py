"""The node layout in one process: overlap=auto decides per team (copy engines inside a node,
NCCL across nodes), copy engines on a team that spans nodes are refused at run start, and
``TorchProgram.lower(ranks_per_node=)`` sets the layout (test_multinode.py runs two nodes)."""

import pytest

from multinode_programs import LOOP, MLP

torch = pytest.importorskip("torch")


def test_overlap_auto_decides_per_team():
    """The benchmark AG+matmul on 4 ranks (bf16, M = K = N = 8192): overlap=auto pipelines it
    on copy engines on one node of 4; on two nodes of 2 its team spans both, so it stays a
    whole collective on NCCL."""
    import hir
    from test_p2p_pipeline_options import ag_matmul

    for ranks_per_node, pipelined in ((4, True), (2, False)):
        module = hir.parse(ag_matmul(4, 8192, 8192, 8192), "ag.mlir")
        hir.lower(
            module,
            f"hir-set-node-layout{{ranks-per-node={ranks_per_node}}},"
            f"hir-convert-to-communication{{backend=cuda}},hir-p2p-pipeline{{overlap=auto}}",
        )
        lowered = str(module)
        assert ('"hir.shift"' in lowered) == pipelined, lowered[:600]
        backends = {
            line.split('backend = "')[1].split('"')[0]
            for line in lowered.splitlines()
            if '"hir.shift"' in line or '"hir.allgather"' in line
        }
        assert backends == ({"cuda"} if pipelined else {"nccl"}), backends


def test_copy_engines_across_nodes_refused_at_run_start():
    """``backend = "cuda"`` on a team that spans nodes is refused by Program before any
    rank waits on another, naming the op's location, the team and its nodes."""
    import hir
    from hir.interpreter import Program

    module = hir.parse(LOOP.replace('backend = "nccl"', 'backend = "cuda"'), "loop.mlir")
    with pytest.raises(hir.HirError) as err:
        Program(module, device="cpu", source_name="loop.mlir")
    assert str(err.value).startswith(
        "loop.mlir:10:12: error: 'hir.allgather' runs on copy engines (backend = "
        '"cuda") but its team [0, 2] spans nodes 0 and 1 (hir.ranks_per_node = 2)'
    ), err.value


def test_torch_program_lower_ranks_per_node():
    """``TorchProgram.lower(ranks_per_node=2)`` runs hir-set-node-layout first: the lowered
    module carries the layout (what the passes and the run-start checks read; the 2x2 import
    itself runs in docs/multi-node.md); a count that is not a positive int is an error."""
    import hir

    namespace: dict = {}
    exec(MLP, namespace)
    program = hir.from_torch(namespace["module"], namespace["example_args"])
    for bad in (0, 2.0, True):
        with pytest.raises(hir.HirError, match=f"ranks_per_node must be a positive int, got {bad!r}"):
            program.lower(ranks_per_node=bad)
    program.lower(ranks_per_node=2)
    assert "hir.ranks_per_node = 2 : i64" in str(program.module)
