"""Differential check of the lowering passes: seeded random program-level modules run through
the CPU interpreter before lowering and after each pass of hir-lower; every stage must give
the same outputs. Single process (no device mesh): the generator exercises stream lowering,
loop fusion and deallocation on set / binary (with broadcasting) / reduction / matmul /
linear chains, static and dynamic extents. Communication patterns are covered, on 2 and 4
Gloo ranks, by test_passes_multirank.py.

HIR_DIFF_CASES (default 240) sets the number of modules; HIR_DIFF_SEED the first seed.
"""

import os
import random
from dataclasses import dataclass, field
from typing import Optional

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

    @property
    def type(self) -> str:
        shape = "x".join("?" if d else str(n) for n, d in zip(self.dims, self.dynamic))
        return f"memref<{shape}xf32>" if self.dims else "memref<f32>"


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

    def input(self, dims: list[int], dynamic: Optional[list[bool]] = None) -> Value:
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
        body = ["%c0 = arith.constant 0 : index"]
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
        makers = [_gen_set, _gen_binary, _gen_linear]
        if len(x.dims) >= 2:
            makers += [_gen_reduction, _gen_matmul]
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
        before = str(module).count('"hir.for"')
        hir.lower(module, "hir-fuse-loops,hir-reuse-stream-buffers{num-streams=2},hir-insert-deallocations")
        after = str(module)
        loops += before
        fused += before - after.count('"hir.for"')
        freed += after.count("memref.dealloc")
        reused += after.count("arith.remui")
    assert loops > 40 and fused > 5 and freed > 10 and reused > 2, (loops, fused, freed, reused)
