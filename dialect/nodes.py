"""Nodes: which ranks share a machine, and so which teams copy engines can serve.

The node layout is part of the program: the module attribute ``hir.ranks_per_node = N :
i64`` says ranks ``[k*N, (k+1)*N)`` run on node ``k`` (torchrun numbers ranks node by node:
``RANK = GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK``). hir-set-node-layout writes it; without
it every team is taken to be inside one node. Copy engines and symmetric memory
(``backend = "cuda"``) reach only the GPUs of one node, so:

- the passes that choose backends (hir-convert-to-communication, hir-p2p-pipeline) call
  :func:`team_backend` and give a team that spans nodes ``"nccl"`` where they would give it
  ``"cuda"`` (a remark on stderr under ``HIR_DEBUG=1``), and hir-p2p-pipeline's
  ``overlap=auto`` keeps such a collective whole (:func:`spans_nodes`);
- the interpreter refuses, at run start, an op with ``backend = "cuda"`` on such a team
  (:func:`cross_node_copy_engine_op`) and checks the attribute against the launcher's
  ``LOCAL_WORLD_SIZE`` / ``GROUP_RANK`` (``hir.interpreter.nodes``).

On a ``dp x tp`` mesh (``dense<[[0, 1], [2, 3]]>``, ``hir.ranks_per_node = 2``) the inner
axis' lines (tp: ``[0, 1]``, ``[2, 3]``) are inside nodes and the outer axis' (dp: ``[0, 2]``,
``[1, 3]``) cross them.
"""

import os
import sys
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import builtin

from hir.dialect.base import OP_CLASSES, get_str, i64_attr
from hir.dialect.context import HirError, format_location
from hir.dialect.teams import teams_in

RANKS_PER_NODE_ATTR = "hir.ranks_per_node"  # module attribute: ranks per node (node k: ranks [k*N, (k+1)*N))
COPY_ENGINES = "cuda"  # the backend that needs every team member on one node
ACROSS_NODES = "nccl"  # what a team spanning nodes gets instead


def module_ranks_per_node(module_op: Any) -> int | None:
    """The ``hir.ranks_per_node`` of a module (an ``ir.Module`` or its operation), None when
    absent; ValueError when it is not a positive integer."""
    op = module_op.operation
    if RANKS_PER_NODE_ATTR not in op.attributes:
        return None
    attr = op.attributes[RANKS_PER_NODE_ATTR]
    value = ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None
    if value is None or value < 1:
        raise ValueError(f"module attribute {RANKS_PER_NODE_ATTR} must be a positive integer, got {attr}")
    return value


def set_module_ranks_per_node(module: ir.Module, count: int) -> None:
    module.operation.attributes[RANKS_PER_NODE_ATTR] = i64_attr(count)


def enclosing_ranks_per_node(op: ir.Operation) -> int | None:
    """The ``hir.ranks_per_node`` of the module holding ``op`` (None: no layout, one node);
    HirError when the attribute is not a positive integer."""
    parent = op
    while parent is not None and parent.name != builtin.ModuleOp.OPERATION_NAME:
        parent = parent.parent
    try:
        return None if parent is None else module_ranks_per_node(parent)
    except ValueError as err:
        raise HirError(f"error: {err}") from None


def nodes_of(team: list[int], ranks_per_node: int) -> list[int]:
    """The nodes ``team``'s ranks run on, in order."""
    return sorted({rank // ranks_per_node for rank in team})


def spanning_team(teams: list[list[int]], ranks_per_node: int | None) -> list[int] | None:
    """The first of ``teams`` whose ranks are on several nodes, else None."""
    if ranks_per_node is None:
        return None
    return next((team for team in teams if len(nodes_of(team, ranks_per_node)) > 1), None)


def describe_span(team: list[int], ranks_per_node: int, source: str = RANKS_PER_NODE_ATTR + " = {}") -> str:
    """``team [0, 2] spans nodes 0 and 1 (hir.ranks_per_node = 2)``; ``source`` says where
    the layout comes from (``{}``: the count)."""
    nodes = nodes_of(team, ranks_per_node)
    listed = ", ".join(map(str, nodes[:-1])) + f" and {nodes[-1]}"
    return f"team {team} spans nodes {listed} ({source.format(ranks_per_node)})"


def team_backend(op: ir.Operation, team: ir.Attribute, backend: str, pass_name: str) -> str:
    """The backend a pass gives a communication of ``op`` on ``team`` (a ``team``
    attribute) when it would give ``backend``: ``"nccl"`` for copy engines on a team that
    spans nodes (a remark under ``HIR_DEBUG``), else ``backend``."""
    if backend != COPY_ENGINES:
        return backend
    ranks_per_node = enclosing_ranks_per_node(op)
    crossing = spanning_team(teams_in(team), ranks_per_node)
    if crossing is None or ranks_per_node is None:
        return backend
    _remark(
        op,
        f"{pass_name}: {describe_span(crossing, ranks_per_node)}: backend "
        f'"{ACROSS_NODES}" instead of "{COPY_ENGINES}" (copy engines reach one node only)',
    )
    return ACROSS_NODES


def spans_nodes(op: ir.Operation, pass_name: str, what: str) -> bool:
    """Whether one of ``op``'s teams spans nodes (then ``what`` happens: a remark under
    ``HIR_DEBUG``)."""
    ranks_per_node = enclosing_ranks_per_node(op)
    crossing = spanning_team(teams_in(op.attributes["team"]), ranks_per_node)
    if crossing is not None and ranks_per_node is not None:
        _remark(op, f"{pass_name}: {describe_span(crossing, ranks_per_node)}: {what}")
    return crossing is not None


def cross_node_copy_engine_op(module: ir.Module, ranks_per_node: int) -> tuple[ir.Operation, list[int]] | None:
    """The first op (and its team) with ``backend = "cuda"`` on a team that spans nodes."""
    found: list = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        cls = OP_CLASSES.get(op.name)
        if cls is not None and cls.TEAM_ATTR and get_str(op, "backend") == COPY_ENGINES:
            team = spanning_team(teams_in(op.attributes[cls.TEAM_ATTR]), ranks_per_node)
            if team is not None:
                found.append((op, team))
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0] if found else None


def _remark(op: ir.Operation, message: str) -> None:
    if os.environ.get("HIR_DEBUG"):
        print(f"{format_location(op.location)}: remark: {message}", file=sys.stderr)
