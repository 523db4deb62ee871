"""Helpers for the interpreter tests: memref type spelling and one-call compile + run."""

import torch

import hir
from hir.interpreter import Program


def mem(shape, dtype: str = "f32", layout: str = "") -> str:
    dims = "".join(f"{'?' if d is None else d}x" for d in shape)
    return f"memref<{dims}{dtype}{', ' + layout if layout else ''}>"


def program(text: str, **options) -> Program:
    options.setdefault("device", "cpu")
    return Program(hir.parse(text, "test.mlir"), source_name="test.mlir", **options)


def run(text: str, inputs, **options) -> list:
    return program(text, **options)(inputs)


def unary_func(body: str, args: str, results: str = "", ret: str = "return") -> str:
    arrow = f" -> {results}" if results else ""
    return f"func.func @main({args}){arrow} {{\n{body}\n  {ret}\n}}"


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
