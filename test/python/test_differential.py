"""Differential check of the lowering passes: seeded random program-level modules run through
the CPU interpreter before lowering and after each pass of hir-lower; every stage must give
the same outputs. Single process (no device mesh): the generator exercises stream lowering,
loop fusion and deallocation on set / binary (with broadcasting) / reduction / matmul /
linear chains, static and dynamic extents, through views (memref.subview, collapse_shape,
expand_shape, hir.alias_broadcast) and control flow (scf.if, scf.for with linalg.fill). Communication patterns are
covered, on 2 and 4 Gloo ranks, by test_passes_multirank.py.

HIR_DIFF_CASES (default 240) sets the number of modules; HIR_DIFF_SEED the first seed.
"""

import os
import random
from dataclasses import dataclass, field

import pytest

torch = pytest.importorskip("torch")

import hir  # noqa: E402
from hir.interpreter import run  # noqa: E402

STAGES = [
    "hir-convert-to-communication",
    "hir-stream-lowering",
    "hir-fuse-loops",
    "hir-reuse-stream-buffers{num-streams=2}",  # not in hir-lower (opt-in, as in hir-lower-reuse)
    "hir-insert-deallocations",
    "canonicalize,cse",
]
CASES = int(os.environ.get("HIR_DIFF_CASES", "240"))
FIRST_SEED = int(os.environ.get("HIR_DIFF_SEED", "0"))
DYN = -1  # a '?' extent in the type; its run-time size is Program.dynamic


@dataclass
class Value:
    name: str
    dims: list[int]  # run-time sizes
    dynamic: list[bool]  # '?' in the type
    layout: str = ""  # a view's strided layout

    @property
    def type(self) -> str:
        shape = "x".join("?" if d else str(n) for n, d in zip(self.dims, self.dynamic))
        layout = f", {self.layout}" if self.layout else ""
        return f"memref<{shape}xf32{layout}>" if self.dims else "memref<f32>"

    def strides(self) -> list[int]:
        """Row-major strides (only axis 0 may be dynamic, so all are static)."""
        out, running = [], 1
        for n in reversed(self.dims):
            out.append(running)
            running *= n
        return out[::-1]


@dataclass
class Program:
    """A generated program-level module and its inputs."""

    rng: random.Random
    dynamic: int
    inputs: list[Value] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def input(self, dims: list[int], dynamic: list[bool] | None = None) -> Value:
        value = Value(f"%arg{len(self.inputs)}", dims, dynamic or [False] * len(dims))
        self.inputs.append(value)
        return value

    def alloc(self, dims: list[int], dynamic: list[bool]) -> Value:
        value = Value(self.fresh(), dims, dynamic)
        sizes = ", ".join("%S" for d in dynamic if d)
        self.lines.append(f"{value.name} = memref.alloc({sizes}) : {value.type}")
        self.values.append(value)
        return value

    def op(self, text: str, operands: list[Value], out: Value, attrs: dict[str, str]) -> None:
        attr_text = ", ".join(f"{k} = {v}" for k, v in attrs.items())
        names = ", ".join(v.name for v in operands + [out])
        types = ", ".join(v.type for v in operands + [out])
        self.lines.append(f'"{text}"({names}) {{{attr_text}}} : ({types}) -> ()')

    def stream(self, attrs: dict[str, str], axes: list[int]) -> dict[str, str]:
        """Mark one of ``axes`` (output axes that may be streamed) stream-parallel, mostly."""
        if axes and self.rng.random() < 0.75:
            attrs["stream_axis"] = f"{self.rng.choice(axes)} : i64"
        return attrs

    def text(self, outputs: list[Value]) -> str:
        args = ", ".join(f"{v.name}: {v.type}" for v in self.inputs)
        results = ", ".join(v.type for v in outputs)
        body = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index"]
        if any(any(v.dynamic) for v in self.inputs):
            source = next(v for v in self.inputs if v.dynamic[0])
            body.append(f"%S = memref.dim {source.name}, %c0 : {source.type}")
        body += self.lines
        body.append(f"return {', '.join(v.name for v in outputs)} : {results}")
        return f"func.func @main({args}) -> ({results}) {{\n  " + "\n  ".join(body) + "\n}\n"


def _gen_set(p: Program, x: Value) -> Value:
    out = p.alloc(list(x.dims), list(x.dynamic))
    p.op("hir.set", [x], out, p.stream({}, list(range(len(x.dims)))))
    return out


def _gen_binary(p: Program, x: Value) -> Value:
    rng = p.rng
    same = [v for v in p.values + p.inputs if v.type == x.type and v is not x]
    if same and rng.random() < 0.5:
        y = rng.choice(same)
    else:  # a broadcast operand: a suffix of x's shape, some extents 1
        start = rng.randrange(len(x.dims))
        dims = [1 if rng.random() < 0.3 else n for n in x.dims[start:]]
        dyn = [d and n != 1 for n, d in zip(dims, x.dynamic[start:])]
        y = p.input(dims, dyn)
    lhs, rhs = (x, y) if rng.random() < 0.5 else (y, x)
    out = p.alloc(list(x.dims), list(x.dynamic))
    kind = rng.choice(["add", "sub", "mul", "max", "min"])
    p.op("hir.binary", [lhs, rhs], out, p.stream({"kind": f'"{kind}"'}, list(range(len(x.dims)))))
    return out


def _gen_reduction(p: Program, x: Value) -> Value:
    rng = p.rng
    axis = rng.randrange(len(x.dims))
    dims = [n for i, n in enumerate(x.dims) if i != axis]
    dyn = [d for i, d in enumerate(x.dynamic) if i != axis]
    out = p.alloc(dims, dyn)
    kind = rng.choice(["sum", "max", "min", "prod"])
    attrs = {"kind": f'"{kind}"', "axes": f"array<i64: {axis}>"}
    p.op("hir.reduction", [x], out, p.stream(attrs, list(range(len(dims)))))
    return out


def _gen_matmul(p: Program, x: Value) -> Value:
    rng = p.rng
    n = rng.choice([2, 3])
    if len(x.dims) == 3 and not x.dynamic[0] and rng.random() < 0.4:
        w = p.input([x.dims[0], x.dims[2], n])  # batched B: only the batch axis streams
        axes = [0]
    else:
        w = p.input([x.dims[-1], n])
        axes = list(range(len(x.dims)))  # 2-D B: batch, M and N slices are all vectors or matrices
    out = p.alloc(x.dims[:-1] + [n], x.dynamic[:-1] + [False])
    p.op("hir.matmul", [x, w], out, p.stream({}, axes))
    return out


def _gen_linear(p: Program, x: Value) -> Value:
    rng = p.rng
    n = rng.choice([2, 3])
    w = p.input([n, x.dims[-1]])
    segments = "1, 1, 1, 0"
    out = p.alloc(x.dims[:-1] + [n], x.dynamic[:-1] + [False])
    if rng.random() < 0.5:
        bias = p.input([n])
        segments = "1, 1, 1, 1"
        names = f"{x.name}, {w.name}, {out.name}, {bias.name}"
        types = f"{x.type}, {w.type}, {out.type}, {bias.type}"
    else:
        names, types = f"{x.name}, {w.name}, {out.name}", f"{x.type}, {w.type}, {out.type}"
    attrs = p.stream({"operandSegmentSizes": f"array<i32: {segments}>"}, list(range(len(x.dims))))
    attr_text = ", ".join(f"{k} = {v}" for k, v in attrs.items())
    p.lines.append(f'"hir.linear"({names}) {{{attr_text}}} : ({types}) -> ()')
    return out


def _gen_subview(p: Program, x: Value) -> Value:
    """Drop the first element of a static axis (a strided view), then copy it."""
    axes = [a for a, (n, d) in enumerate(zip(x.dims, x.dynamic)) if not d and n >= 2]
    if not axes or x.layout:
        return _gen_set(p, x)
    a = p.rng.choice(axes)
    strides = x.strides()
    dims = [n - 1 if i == a else n for i, n in enumerate(x.dims)]
    view = Value(p.fresh(), dims, list(x.dynamic), f"strided<[{', '.join(map(str, strides))}], offset: {strides[a]}>")
    offsets = ", ".join("1" if i == a else "0" for i in range(len(dims)))
    sizes = ", ".join("%S" if d else str(n) for n, d in zip(dims, x.dynamic))
    p.lines.append(
        f"{view.name} = memref.subview {x.name}[{offsets}] [{sizes}] "
        f"[{', '.join('1' * len(dims))}] : {x.type} to {view.type}"
    )
    p.values.append(view)
    return _gen_set(p, view)


def _gen_reshape(p: Program, x: Value) -> Value:
    """collapse_shape of the last two axes, or expand_shape of an even last axis."""
    if x.layout:
        return _gen_set(p, x)
    rank = len(x.dims)
    out = Value(p.fresh(), [], [])
    if rank == 3 and p.rng.random() < 0.6:
        out.dims, out.dynamic = x.dims[:1] + [x.dims[1] * x.dims[2]], x.dynamic[:1] + [False]
        p.lines.append(f"{out.name} = memref.collapse_shape {x.name} [[0], [1, 2]] : {x.type} into {out.type}")
    elif x.dims[-1] % 2 == 0:
        out.dims, out.dynamic = x.dims[:-1] + [2, x.dims[-1] // 2], x.dynamic + [False]
        groups = ", ".join(f"[{i}]" for i in range(rank - 1)) + f", [{rank - 1}, {rank}]"
        sizes = ", ".join("%S" if d else str(n) for n, d in zip(out.dims, out.dynamic))
        p.lines.append(
            f"{out.name} = memref.expand_shape {x.name} [{groups}] output_shape [{sizes}] : {x.type} into {out.type}"
        )
    else:
        return _gen_set(p, x)
    p.values.append(out)
    return out


def _gen_broadcast(p: Program, x: Value) -> Value:
    """x <kind> (a smaller input broadcast to x's shape by hir.alias_broadcast)."""
    rng = p.rng
    lead = rng.randrange(len(x.dims))
    if any(x.dynamic[:lead]):
        lead = 0
    dims = [1 if (not d and rng.random() < 0.4) else n for n, d in zip(x.dims[lead:], x.dynamic[lead:])]
    y = p.input(dims, list(x.dynamic[lead:]))
    strides = [0] * lead + [0 if m == 1 and n != 1 else s for m, n, s in zip(dims, x.dims[lead:], y.strides())]
    wide = Value(p.fresh(), list(x.dims), list(x.dynamic), f"strided<[{', '.join(map(str, strides))}], offset: ?>")
    p.lines.append(f'{wide.name} = "hir.alias_broadcast"({y.name}) : ({y.type}) -> {wide.type}')
    out = p.alloc(list(x.dims), list(x.dynamic))
    kind = rng.choice(["add", "sub", "mul", "max"])
    p.op("hir.binary", [x, wide], out, p.stream({"kind": f'"{kind}"'}, list(range(len(x.dims)))))
    return out


def _gen_if(p: Program, x: Value) -> Value:
    """scf.if on a constant flag: a copy or a square of x into one buffer."""
    out = p.alloc(list(x.dims), list(x.dynamic))
    flag = p.fresh()
    p.lines.append(f"{flag} = arith.constant {p.rng.choice(['true', 'false'])}")
    p.lines.append(f"scf.if {flag} {{")
    p.op("hir.set", [x], out, {})
    p.lines.append("} else {")
    p.op("hir.binary", [x, x], out, {"kind": '"mul"'})
    p.lines.append("}")
    return out


def _gen_for(p: Program, x: Value) -> Value:
    """A buffer filled with the loop count, then x added once per scf.for iteration."""
    out = p.alloc(list(x.dims), list(x.dynamic))
    n, i, k, kf = p.fresh(), p.fresh(), p.fresh(), p.fresh()
    p.lines.append(f"{n} = arith.constant {p.rng.randint(0, 3)} : index")
    p.lines.append(f"{k} = arith.index_cast {n} : index to i64")
    p.lines.append(f"{kf} = arith.sitofp {k} : i64 to f32")
    p.lines.append(f"linalg.fill ins({kf} : f32) outs({out.name} : {out.type})")
    p.lines.append(f"scf.for {i} = %c0 to {n} step %c1 {{")
    p.op("hir.binary", [out, x], out, {"kind": '"add"'})
    p.lines.append("}")
    return out


def generate(seed: int) -> tuple[str, list]:
    """A random program-level module (text) and its input tensors."""
    rng = random.Random(seed)
    p = Program(rng, dynamic=rng.choice([2, 3, 4]))
    rank = rng.choice([2, 3])
    dims = [rng.choice([2, 3, 4]) for _ in range(rank)]
    dynamic = [rng.random() < 0.5] + [False] * (rank - 1)
    if dynamic[0]:
        dims[0] = p.dynamic
    current = p.input(dims, dynamic)
    for _ in range(rng.randint(2, 6)):
        candidates = [v for v in p.values + p.inputs if v.dims]
        x = current if rng.random() < 0.7 else rng.choice(candidates)
        makers = [_gen_set, _gen_binary, _gen_linear, _gen_subview, _gen_broadcast, _gen_if, _gen_for]
        if len(x.dims) >= 2:
            makers += [_gen_reduction, _gen_matmul, _gen_reshape]
        current = rng.choice(makers)(p, x)
    outputs = [current]
    others = [v for v in p.values if v is not current]
    if others and rng.random() < 0.5:
        outputs.append(rng.choice(others))
    gen = torch.Generator().manual_seed(seed)
    tensors = [torch.rand(v.dims, generator=gen) + 0.5 for v in p.inputs]
    return p.text(outputs), tensors


def check(seed: int) -> None:
    text, inputs = generate(seed)
    module = hir.parse(text, f"seed{seed}.mlir")
    expected = run(module, inputs, device="cpu")
    for stage in STAGES:
        hir.lower(module, stage)
        got = run(module, inputs, device="cpu")
        for i, (want, have) in enumerate(zip(expected, got)):
            if not torch.allclose(want, have, rtol=1e-5, atol=1e-5):
                raise AssertionError(f"seed {seed}: output #{i} differs after {stage}\n{text}\n{module}")


@pytest.mark.parametrize("chunk", range(8))
def test_differential(chunk):
    seeds = range(FIRST_SEED + chunk, FIRST_SEED + CASES, 8)
    for seed in seeds:
        check(seed)


def test_generator_covers_stream_lowering():
    """The generated modules do exercise the passes: loops appear, some fuse, buffers are freed."""
    loops = fused = freed = reused = 0
    for seed in range(40):
        text, _ = generate(seed)
        module = hir.parse(text)
        hir.lower(module, "hir-stream-lowering")
        before = str(module).count('"hir.stream_for"')
        hir.lower(module, "hir-fuse-loops,hir-reuse-stream-buffers{num-streams=2},hir-insert-deallocations")
        after = str(module)
        loops += before
        fused += before - after.count('"hir.stream_for"')
        freed += after.count("memref.dealloc")
        reused += after.count("array<i32: 1, 1, 1, 1, 1>")  # a stream loop given slots
    assert loops > 40 and fused > 5 and freed > 10 and reused > 2, (loops, fused, freed, reused)


def test_generator_covers_views_and_control_flow():
    texts = [generate(seed)[0] for seed in range(60)]
    for construct in (
        "memref.subview",
        "memref.collapse_shape",
        "memref.expand_shape",
        "hir.alias_broadcast",
        "scf.if",
        "scf.for",
        "linalg.fill",
    ):
        assert sum(construct in text for text in texts) >= 2, construct
