"""What :class:`~hir.interpreter.program.Program` reads of a module before it compiles it:
the entry function, the stream pool size, the teams to create groups for, and the refusals
that come first (not a module; a resharding op that several ranks cannot run as written)."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import DEFAULT_NUM_STREAMS, OP_CLASSES, module_num_streams
from hir.dialect.compute import KERNEL_ATTR
from hir.dialect.context import HirError, format_location
from hir.dialect.teams import teams_of
from hir.passes import compute_resharding_reason


def entry_function(module: ir.Module, entry: str | None, source_name: str | None) -> str:
    """``entry`` if given, else ``main``, else the single public function that is not a kernel."""
    funcs = [op for op in module.body.operations if op.operation.name == func.FuncOp.OPERATION_NAME]
    names = [ir.StringAttr(f.operation.attributes["sym_name"]).value for f in funcs]
    if entry is not None:
        if entry not in names:
            raise HirError(
                f"{source_name or '<module>'}: error: no function @{entry} (functions: {', '.join(names) or 'none'})"
            )
        return entry
    if "main" in names:
        return "main"
    public = [
        n
        for n, f in zip(names, funcs)
        if KERNEL_ATTR not in f.operation.attributes
        and (
            "sym_visibility" not in f.operation.attributes
            or ir.StringAttr(f.operation.attributes["sym_visibility"]).value == "public"
        )
    ]
    if len(public) != 1:
        raise HirError(
            f"{source_name or '<module>'}: error: cannot pick the entry function: "
            f"{'no' if not public else len(public)} public non-kernel functions "
            f"({', '.join(public)}); name one: hir-run --entry NAME (in Python: entry=NAME)"
        )
    return public[0]


def require_module(module: Any, entry: str) -> None:
    """A public entry's ``module`` argument must be a parsed module (not text, not a program)."""
    if not isinstance(module, ir.Module):
        hint = (
            " (parse text with hir.parse(text))"
            if isinstance(module, str)
            else " (an imported program's module is program.module)"
            if hasattr(module, "module")
            else ""
        )
        raise HirError(f"error: {entry}: module must be an ir.Module{hint}, got {type(module).__name__}")


def module_teams(module: ir.Module) -> list[tuple[int, ...]]:
    """The teams of every communicating op of the module (its class's ``TEAM_ATTR``), in op
    order, for group creation."""
    teams: list[tuple[int, ...]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        cls = OP_CLASSES.get(op.name)
        if cls is not None and cls.TEAM_ATTR is not None:
            if cls.TEAM_ATTR:
                for team in teams_of(op, cls.TEAM_ATTR):  # every rank creates every line's group
                    team = tuple(sorted(team))
                    if team not in teams:
                        teams.append(team)
            elif not teams:
                teams.append(())  # P2P only: the world group is enough
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return teams


def pool_size(module: ir.Module, requested: int | None, source_name: str | None) -> int:
    """The run's stream pool size: the module's ``hir.num_streams``, else ``requested``,
    else the default; a request that contradicts the module is an error."""
    where = source_name or "<module>"
    if requested is not None and requested < 1:
        raise HirError(f"error: num_streams must be >= 1, got {requested}")
    try:
        fixed = module_num_streams(module)
    except ValueError as err:
        raise HirError(f"{where}: error: {err}") from None
    if fixed is not None and requested is not None and requested != fixed:
        raise HirError(
            f"{where}: error: num_streams = {requested} contradicts the module's "
            f"hir.num_streams = {fixed} (set by the pass that fixed the stream pool)"
        )
    return fixed or requested or DEFAULT_NUM_STREAMS


def refuse_resharding(module: ir.Module, world_size: int, source_name: str | None) -> None:
    """On several ranks a resharding compute op needs the communication its lowering
    inserts: run as written it would compute on mismatched shards."""
    if world_size < 2:
        return
    found: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        reason = compute_resharding_reason(op)
        if reason is not None:
            found.append((op, reason))
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        op, reason = found[0]
        raise HirError(
            f"{format_location(op.location, source_name)}: error: "
            f"'{op.name}' is resharding ({reason}): on {world_size} "
            "ranks it needs the communication that lowering inserts: lower it first: hir-run --lower ... "
            "(in Python: hir.lower(module))"
        )
