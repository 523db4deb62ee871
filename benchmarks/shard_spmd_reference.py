"""A reference for partitioned (per-device) shard programs, used by shard_conformance.py: runs
the function once per device of its grid in one process, every collective on the list of the
devices' tensors with torch (all_gather = torch.cat over the team, all_reduce = a sum / max /
min over it, ...). It knows the shard collectives and device queries, scalar index arithmetic
and elementwise tensor ``arith``; anything else raises :class:`NoRule` (the case is not run).

Teams follow upstream's MPI lowering: the devices that share their coordinates on every grid
axis outside ``grid_axes``, ordered by their coordinates on ``grid_axes`` (row-major)."""

import itertools

import torch

ELEMENTWISE = {
    "arith.addf": torch.add, "arith.subf": torch.sub, "arith.mulf": torch.mul, "arith.divf": torch.div,
    "arith.minimumf": torch.minimum, "arith.maximumf": torch.maximum, "arith.minsi": torch.minimum,
    "arith.maxsi": torch.maximum, "arith.addi": torch.add, "arith.subi": torch.sub, "arith.muli": torch.mul,
}  # fmt: skip
INDEX = {
    "arith.addi": int.__add__,
    "arith.subi": int.__sub__,
    "arith.muli": int.__mul__,
    "arith.divui": int.__floordiv__,
    "arith.remui": int.__mod__,
}
REDUCE = {
    "sum": lambda ts: torch.stack(ts).sum(0),
    "max": lambda ts: torch.stack(ts).amax(0),
    "min": lambda ts: torch.stack(ts).amin(0),
    "product": lambda ts: torch.stack(ts).prod(0),
}
DTYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
}


class NoRule(Exception):
    pass


def _attr_ints(op, name) -> list[int]:
    from torch_mlir import ir

    attr = op.attributes[name]
    return list(ir.DenseI16ArrayAttr(attr)) if "array<i16" in str(attr) else list(ir.DenseI64ArrayAttr(attr))


def _int_attr(op, name) -> int:
    from torch_mlir import ir

    return ir.IntegerAttr(op.attributes[name]).value


class SPMD:
    """The devices of a grid of ``shape`` (row-major linear indices)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape
        self.coords = list(itertools.product(*[range(n) for n in shape]))

    def team(self, device: int, axes: list[int]) -> list[int]:
        """The devices of ``device``'s team over ``axes``, in team order."""
        mine = self.coords[device]
        members = [
            d
            for d, c in enumerate(self.coords)
            if all(c[k] == mine[k] for k in range(len(self.shape)) if k not in axes)
        ]
        return sorted(members, key=lambda d: [self.coords[d][k] for k in axes])

    def run(self, fn, inputs: list[list]) -> list[list]:
        """Per-device results of ``fn`` (a func.func op) on ``inputs[device][arg]``."""
        n = len(self.coords)
        block = fn.regions[0].blocks[0]
        env = {}
        for i, arg in enumerate(block.arguments):
            env[arg] = [inputs[d][i] for d in range(n)]
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                return [[env[v][d] for v in op.operands] for d in range(n)]
            results = self.step(op, [env[v] for v in op.operands], n)
            for value, per_device in zip(op.results, results):
                env[value] = per_device
        raise NoRule("function without a return")

    def step(self, op, args: list[list], n: int) -> list[list]:
        from torch_mlir import ir

        name = op.name
        devices = range(n)
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, (ir.IntegerAttr, ir.FloatAttr)):
                return [[attr.value] * n]
            raise NoRule(f"{name} of {attr.type}")
        if name in INDEX and all(isinstance(a[0], int) for a in args):
            return [[INDEX[name](args[0][d], args[1][d]) for d in devices]]
        if name in ELEMENTWISE:
            return [[ELEMENTWISE[name](*[a[d] for a in args]) for d in devices]]
        if name == "shard.process_linear_index":
            return [list(devices)]
        if name == "shard.process_multi_index":
            axes = _attr_ints(op, "axes") or list(range(len(self.shape)))
            return [[self.coords[d][k] for d in devices] for k in axes]
        if name == "shard.grid_shape":
            return [[self.shape[k]] * n for k in _attr_ints(op, "axes")]
        if not name.startswith("shard."):
            raise NoRule(name)
        axes = _attr_ints(op, "grid_axes")
        teams = [self.team(d, axes) for d in devices]
        values = args[0]
        out_type = ir.RankedTensorType(op.results[0].type)
        dtype = DTYPES[str(out_type.element_type)]
        if name == "shard.all_gather":
            return [[torch.cat([values[m] for m in teams[d]], _int_attr(op, "gather_axis")) for d in devices]]
        if name == "shard.all_reduce":
            kind = str(op.attributes["reduction"]).rstrip(">").split()[-1] if "reduction" in op.attributes else "sum"
            return [[REDUCE[kind]([values[m].to(dtype) for m in teams[d]]) for d in devices]]
        if name == "shard.reduce_scatter":
            kind = str(op.attributes["reduction"]).rstrip(">").split()[-1] if "reduction" in op.attributes else "sum"
            dim = _int_attr(op, "scatter_dim")
            return [
                [
                    REDUCE[kind]([values[m].to(dtype) for m in teams[d]]).chunk(len(teams[d]), dim)[teams[d].index(d)]
                    for d in devices
                ]
            ]
        if name == "shard.all_slice":
            dim = _int_attr(op, "slice_axis")
            return [[values[d].chunk(len(teams[d]), dim)[teams[d].index(d)] for d in devices]]
        if name == "shard.all_to_all":
            split, concat = _int_attr(op, "split_axis"), _int_attr(op, "concat_axis")
            return [
                [
                    torch.cat([values[m].chunk(len(teams[d]), split)[teams[d].index(d)] for m in teams[d]], concat)
                    for d in devices
                ]
            ]
        if name == "shard.shift" and "rotate" in op.attributes:
            offset = _int_attr(op, "offset")
            return [[values[teams[d][(teams[d].index(d) - offset) % len(teams[d])]] for d in devices]]
        raise NoRule(name)
