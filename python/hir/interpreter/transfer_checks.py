"""When the cross-rank transfer checks (``backends/headers.py``) run: once per input
signature, not on every transfer of every run.

Soundness. Each rank's sequence of transfers, with the shape and dtype of what it hands
each one, is a function of the module, the rank and the run's *signature* when

- every transfer's buffer operands have static types (its shape cannot come from data), a
  shift's offset is computed from signature values (below), and
- every ``scf.if`` / ``scf.for`` / ``hir.for`` around a transfer, or around a call whose
  callee (transitively) holds one, decides from signature values: constants,
  ``hir.device_index``, the entry's arguments (their values and shapes: those read are the
  signature), ``memref.dim`` of static types or of entry arguments, ``arith`` of these, and
  the induction variables of loops bounded by them. Any other region op around such an op,
  a condition read from memory, a loop's carried value or a callee's argument is *data*.

The signature is the values of the entry's arguments those decisions read and of its integer
scalars, and the shapes of its arguments those decisions read or whose type has dynamic
dims: the values that may set a size (a ``memref.cast`` of a dynamic buffer to a transfer's
static type is trusted, as MLIR defines it, not checked). A float argument (a learning rate)
is not part of it unless a decision reads it.

So when every rank's module qualifies ("fixed"), a run whose signatures (every rank's)
were verified before hands every transfer exactly what a run that passed every check did,
and it exchanges no header at all. A ``hir.device_index`` branch is fixed: each rank takes
the same branch on every run, so the first run verifies what it transfers there. When a
rank's module does not qualify, every transfer is checked on every run, as before.

Symmetry (an exchange one rank makes and another skips hangs or is misread as data): the
per-run decision ``active`` (check every transfer of this run, or none) is made by every rank
from the same facts. The first run of a program gathers each rank's (fixed, has a
signature, signature digest) in one all_gather over the world and checks everything; all
ranks then hold the same gathered rows and the same run history. When some rank's module is
not fixed, every run is active (checking only the transfers under data would not be
symmetric: one may pair with a transfer outside it on another rank). When no rank has a
signature, no later run is. Otherwise each later run all_gathers the digests (one small
collective) and is active when that tuple of digests was not verified by an earlier run. A
run that finishes marks its tuple verified on every rank; a run that fails on some rank (a
check, any error) leaves the ranks out of step (peers hold transfers in flight), so the
program is not run again. Programs in one process are each called in the same order on
every rank (their transfers pair only then), so their gathers pair too.
"""

import hashlib
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch_mlir import ir
from torch_mlir.dialects import func, memref, scf

from hir.dialect import DeviceIndexOp, ForOp, ShiftOp
from hir.dialect import comm as comm_ops
from hir.interpreter.backends import headers

TRANSFERS = frozenset(
    cls.OPERATION_NAME
    for cls in (
        comm_ops.AllgatherOp,
        comm_ops.AllreduceOp,
        comm_ops.ReduceScatterOp,
        comm_ops.BroadcastOp,
        comm_ops.ScatterOp,
        comm_ops.GatherOp,
        comm_ops.ReduceOp,
        comm_ops.SendRecvOp,
        comm_ops.SendOp,
        comm_ops.RecvOp,
        ShiftOp,
    )
)
_LOOPS = (scf.ForOp.OPERATION_NAME, ForOp.OPERATION_NAME)  # operands 0..2: lower, upper, step
_VERIFIED_KEPT = 64  # signature tuples remembered (then forgotten and verified again)


class Analysis:
    """Whether ``module`` is fixed (module docstring), the entry arguments whose value
    (``values``) or shape (``shapes``) the decisions read, and those that may set a size
    (``size_values``, ``size_shapes``)."""

    def __init__(self, module: ir.Module, entry: str) -> None:
        self.entry = entry
        self.values: set[int] = set()
        self.shapes: set[int] = set()
        self.has_transfers = False
        functions = {
            ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
            for op in module.body.operations
            if op.operation.name == func.FuncOp.OPERATION_NAME
        }
        found: list[ir.Operation] = []  # transfers and calls
        module.operation.walk(
            lambda op: (
                (found.append(op) if op.name in TRANSFERS or "callee" in op.attributes else None)
                or ir.WalkResult.ADVANCE
            )
        )
        reaching = self._reaching(functions, found)
        self.fixed = True
        # the arguments that may set a size (a cast of a dynamic buffer to a transfer's static
        # type is trusted, not checked): integer scalars, dynamic shapes
        args = list(functions[entry].regions[0].blocks[0].arguments) if entry in functions else []
        self.size_values = {i for i, a in enumerate(args) if isinstance(a.type, (ir.IntegerType, ir.IndexType))}
        self.size_shapes = {
            i for i, a in enumerate(args) if isinstance(a.type, ir.MemRefType) and not a.type.has_static_shape
        }
        for op in found:
            if op.name in TRANSFERS:
                self.has_transfers = True
                self.fixed = self.fixed and self._static(op) and self._decided(op)
            elif _callee(op) in reaching:
                self.fixed = self.fixed and self._decided(op)

    @staticmethod
    def _reaching(functions: dict, found: list) -> set[str]:
        """The functions that hold a transfer or call one that does."""
        calls: dict[str, set[str]] = {name: set() for name in functions}
        reaching: set[str] = set()
        for op in found:
            owner = _function_of(op)
            if owner is None:
                continue
            if op.name in TRANSFERS:
                reaching.add(owner)
            else:
                calls[owner].add(_callee(op))
        grew = True
        while grew:
            grew = False
            for name, callees in calls.items():
                if name not in reaching and callees & reaching:
                    reaching.add(name)
                    grew = True
        return reaching

    def _static(self, op: ir.Operation) -> bool:
        operands = list(op.operands)
        if any(isinstance(v.type, ir.MemRefType) and not ir.MemRefType(v.type).has_static_shape for v in operands):
            return False
        return op.name != ShiftOp.OPERATION_NAME or self._signature_value(operands[2])

    def _decided(self, op: ir.Operation) -> bool:
        """Whether every region op around ``op`` decides from signature values."""
        parent = _parent(op)
        while parent is not None and parent.name != func.FuncOp.OPERATION_NAME:
            operands = list(parent.operands)
            if parent.name == scf.IfOp.OPERATION_NAME:
                deciding = operands[:1]
            elif parent.name in _LOOPS:
                deciding = operands[:3]
            else:
                return False
            if not all(self._signature_value(v) for v in deciding):
                return False
            parent = _parent(parent)
        return True

    def _signature_value(self, value: ir.Value, depth: int = 0) -> bool:
        if depth > 64:
            return False
        owner = value.owner
        if isinstance(owner, ir.Block):
            index = ir.BlockArgument(value).arg_number
            parent = owner.owner.operation
            if parent.name == func.FuncOp.OPERATION_NAME:
                if _function_name(parent) != self.entry:
                    return False  # a callee's argument: its call sites' data
                self.values.add(index)
                return True
            return (
                parent.name in _LOOPS
                and index == 0
                and all(self._signature_value(v, depth + 1) for v in list(parent.operands)[:3])
            )
        name = owner.operation.name
        if name in ("arith.constant", DeviceIndexOp.OPERATION_NAME):
            return True
        if name == memref.DimOp.OPERATION_NAME:
            source, index = list(owner.operands)
            if not self._signature_value(index, depth + 1):
                return False
            if ir.MemRefType(source.type).has_static_shape:
                return True
            if isinstance(source.owner, ir.Block) and _function_name(source.owner.owner.operation) == self.entry:
                self.shapes.add(ir.BlockArgument(source).arg_number)
                return True
            return False
        return name.startswith("arith.") and all(self._signature_value(v, depth + 1) for v in owner.operands)


def _callee(op: ir.Operation) -> str:
    callee = op.attributes["callee"]
    return callee.value if isinstance(callee, ir.FlatSymbolRefAttr) else str(callee)


def _parent(op: ir.Operation) -> ir.Operation | None:
    parent = op.parent
    return None if parent is None else parent.operation


def _function_name(op: ir.Operation) -> str | None:
    """``op``'s symbol name when it is a function, else None."""
    return ir.StringAttr(op.attributes["sym_name"]).value if op.name == func.FuncOp.OPERATION_NAME else None


def _function_of(op: ir.Operation) -> str | None:
    parent = _parent(op)
    while parent is not None and parent.name != func.FuncOp.OPERATION_NAME:
        parent = _parent(parent)
    return None if parent is None else _function_name(parent)


class TransferChecks:
    """The run-level switch every header exchange of a program reads (``active``), set by
    :meth:`begin` before each run and settled by :meth:`finish` after it."""

    def __init__(self, module: ir.Module, entry: str, world_size: int, device: torch.device) -> None:
        # on only where headers are: several ranks, checks on, transfers in the module
        analysis = Analysis(module, entry) if world_size > 1 and headers.enabled(dist.group.WORLD) else None
        if analysis is None or not analysis.has_transfers:
            self.on, self.fixed, self.values, self.shapes = False, False, [], []
        else:
            self.on, self.fixed = True, analysis.fixed
            # the signature: what the decisions read and what may set a size
            self.values = sorted(analysis.values | analysis.size_values)
            self.shapes = sorted(analysis.shapes | analysis.size_shapes)
        self.active = True  # the first run checks every transfer
        self.device = device  # of the gathered rows (NCCL gathers CUDA tensors)
        self._always: bool | None = None  # unknown until the first run's gather
        self._signed = False
        self._key: tuple = ()
        self._verified: set[tuple] = set()

    def begin(self, values: Sequence) -> None:
        """Decide, the same way on every rank, whether this run checks its transfers."""
        if not self.on:
            return
        if self._always is None:
            rows = _gather(self.device, [int(self.fixed), int(bool(self.values or self.shapes)), self._digest(values)])
            self._always = not all(row[0] for row in rows)
            self._signed = any(row[1] for row in rows)
            self._key = tuple(row[2] for row in rows)
            self.active = True
        elif self._always:
            self.active = True
        elif not self._signed:
            self.active = False
        else:
            self._key = tuple(row[0] for row in _gather(self.device, [self._digest(values)]))
            self.active = self._key not in self._verified

    def finish(self) -> None:
        """The run completed: its signatures are verified."""
        if self.on and self.active and not self._always:
            if len(self._verified) >= _VERIFIED_KEPT:
                self._verified.clear()
            self._verified.add(self._key)

    def _digest(self, values: Sequence) -> int:
        """63 bits of a hash of the signature: the values and shapes of its arguments."""
        read = [values[i] for i in self.values] + [
            tuple(values[i].shape) if values[i] is not None else None for i in self.shapes
        ]
        read = [v.item() if isinstance(v, torch.Tensor) and v.dim() == 0 else v for v in read]
        return int.from_bytes(hashlib.blake2b(repr(read).encode(), digest_size=8).digest(), "little") >> 1


def _gather(device: torch.device, row: list[int]) -> list[list[int]]:
    mine = torch.tensor(row, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(rows, mine)
    return [r.tolist() for r in rows]
