"""The node layout of a run, checked at run start (``hir.dialect.nodes`` has the rules).

A launcher says where a rank runs: torchrun sets ``LOCAL_WORLD_SIZE`` (ranks on this node),
``GROUP_RANK`` (this node) and numbers ranks node by node; ``hir-run --nproc`` is one node.
The program says which ranks it expects to share a node (``hir.ranks_per_node``). At run
start, before any rank waits on another:

- ranks must be numbered node by node (``RANK // LOCAL_WORLD_SIZE == GROUP_RANK``), every
  node running the same number of ranks;
- every node of the program must lie inside one node of the run: ``LOCAL_WORLD_SIZE`` a
  multiple of ``hir.ranks_per_node`` (more ranks per node than the program expects only
  means NCCL where copy engines would have done);
- no op runs copy engines (``backend = "cuda"``) on a team that spans nodes, by the
  program's layout, else the launcher's.
"""

import os

from torch_mlir import ir

from hir.dialect.context import HirError, format_location
from hir.dialect.nodes import RANKS_PER_NODE_ATTR, cross_node_copy_engine_op, describe_span, module_ranks_per_node


def _env_count(name: str, minimum: int) -> int | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    if not raw.strip().isdigit() or int(raw) < minimum:
        raise HirError(
            f"error: ${name}={raw!r}: expected an integer >= {minimum} (set by the launcher: torchrun, hir-run --nproc)"
        )
    return int(raw)


def run_ranks_per_node(module: ir.Module, rank: int, world_size: int, source_name: str | None) -> int | None:
    """The ranks per node of this run (None: one node), after the checks in the module
    docstring; HirError naming the module attribute and the launcher's variables otherwise."""
    where = source_name or "<module>"
    try:
        program = module_ranks_per_node(module)
    except ValueError as err:
        raise HirError(f"{where}: error: {err}") from None
    local = _env_count("LOCAL_WORLD_SIZE", 1) if world_size > 1 else None
    if local is not None:
        node = _env_count("GROUP_RANK", 0)
        if node is not None and rank // local != node:
            raise HirError(
                f"error: RANK={rank} runs on node GROUP_RANK={node} with "
                f"LOCAL_WORLD_SIZE={local}, but hir needs ranks numbered node by node "
                f"(node RANK // LOCAL_WORLD_SIZE = {rank // local}); start the same "
                "number of ranks on every node (torchrun --nproc-per-node=N on each)"
            )
        if program is not None and local % program:
            on = "" if node is None else f" on node GROUP_RANK={node}"
            raise HirError(
                f"{where}: error: the program is laid out for {program} ranks "
                f"per node ({RANKS_PER_NODE_ATTR} = {program}), but this run has "
                f"LOCAL_WORLD_SIZE={local} ranks{on}, not a multiple of {program}: "
                "teams the program keeps inside a node would span nodes; "
                f"start {program} ranks per node (torchrun --nproc-per-node={program}) or lower "
                f"the program for this layout (hir-set-node-layout{{ranks-per-node={local}}})"
            )
    layout, source = (
        (program, f"{RANKS_PER_NODE_ATTR} = {{}}")
        if program is not None
        else (local, "LOCAL_WORLD_SIZE={} ranks per node")
    )
    if layout is None or (program is None and layout >= world_size):
        return program
    found = cross_node_copy_engine_op(module, layout)
    if found is not None:
        op, team = found
        raise HirError(
            f"{format_location(op.location, source_name)}: error: '{op.name}' runs on copy "
            f'engines (backend = "cuda") but its {describe_span(team, layout, source)}: '
            f'copy engines and symmetric memory reach the GPUs of one node only; give it backend "nccl" '
            "(hir-convert-to-communication and "
            "hir-p2p-pipeline do for teams that span nodes once "
            f"hir-set-node-layout{{ranks-per-node={layout}}} ran before them)"
        )
    return layout
