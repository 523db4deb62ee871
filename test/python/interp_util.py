"""Helpers for the interpreter tests: memref type spelling and one-call compile + run."""

import torch

import hir
from hir.interpreter import Program
from hir.interpreter.backends.process_groups import run_scope


def mem(shape, dtype: str = "f32", layout: str = "") -> str:
    dims = "".join(f"{'?' if d is None else d}x" for d in shape)
    return f"memref<{dims}{dtype}{', ' + layout if layout else ''}>"


def program(text: str, **options) -> Program:
    options.setdefault("device", "cpu")
    return Program(hir.parse(text, "test.mlir"), source_name="test.mlir", **options)


def run(text: str, inputs, **options) -> list:
    """``text`` compiled and run once. As with :func:`hir.run`, a one-rank process group the run
    creates (a program with a team) ends with it: left alive, it would give later tests of the
    process world size 1 (an import onto a 2-device mesh refused)."""
    with run_scope():
        return program(text, **options)(inputs)


def unary_func(body: str, args: str, results: str = "", ret: str = "return") -> str:
    arrow = f" -> {results}" if results else ""
    return f"func.func @main({args}){arrow} {{\n{body}\n  {ret}\n}}"


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-5)


def gelu_generic(result: str, source: str, init: str = "%e", shape: str = "tensor<8x16xf32>") -> str:
    """The erf-gelu ``linalg.generic`` that the FX importer (and so shard-partition) emits;
    the caller defines the f32 constants ``%c1`` (1.0), ``%ch`` (0.5) and ``%cs`` (sqrt 2)."""
    identity = "affine_map<(d0, d1) -> (d0, d1)>"
    return f"""  {result} = linalg.generic
      {{indexing_maps = [{identity}, {identity}], iterator_types = ["parallel", "parallel"]}}
      ins({source} : {shape}) outs({init} : {shape}) {{
  ^bb0(%in: f32, %o: f32):
    %0 = arith.divf %in, %cs : f32
    %1 = math.erf %0 : f32
    %2 = arith.addf %1, %c1 : f32
    %3 = arith.mulf %2, %ch : f32
    %4 = arith.mulf %in, %3 : f32
    linalg.yield %4 : f32
  }} -> {shape}"""
