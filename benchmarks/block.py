"""A pre-norm transformer block through hir, against eager torch and ``torch.compile`` of the
same module, side by side in one process (issue 13).

    python benchmarks/block.py [--device cpu|cuda] [--batch 2 --seq 64 --d-model 128 --heads 4]
    python benchmarks/block.py --emit DIR          # also write DIR/block.mlir + weights
    python benchmarks/block.py --from DIR --device cuda   # no torch-mlir needed (GPU machine)

Prints the import (torch.export + FX importer + partitioning) and hir-lower times (and the
lower time as a ratio to the import), then the forward time of: eager torch, torch.compile
(default mode), hir eager (``graph=False``) and, on CUDA, hir with the default
``graph="auto"`` (a CUDA graph replayed on the same buffers); each is the best of
``--repeat`` timings of ``--number`` calls, synchronized, with its ratio to eager torch and
the largest difference from eager torch's output. ``--from`` reads a module written by
``--emit`` (the machine with GPUs has no torch-mlir): the weights are saved with it.
"""

import argparse
import json
import math
import os
import sys
import time
from typing import Optional

import torch
import torch.nn.functional as F

import hir
from hir.interpreter import Program
from timing import best


class Block(torch.nn.Module):
    """Pre-norm transformer block: LayerNorm, causal multi-head self-attention with softmax,
    residual, LayerNorm, GELU MLP, residual."""

    def __init__(self, d_model: int, heads: int, hidden: int, seq: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.qkv = torch.nn.Linear(d_model, 3 * d_model)
        self.proj = torch.nn.Linear(d_model, d_model)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.fc1 = torch.nn.Linear(d_model, hidden)
        self.fc2 = torch.nn.Linear(hidden, d_model)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads) + self.mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def build(args: argparse.Namespace) -> tuple[Block, torch.Tensor, str, Optional[tuple[float, float]]]:
    """The block, an input, the lowered hir module's text, and (import s, lower s) when imported here."""
    if args.from_dir:
        with open(os.path.join(args.from_dir, "config.json")) as f:
            config = json.load(f)
        model = Block(**config)
        model.load_state_dict(torch.load(os.path.join(args.from_dir, "state.pt")))
        x = torch.load(os.path.join(args.from_dir, "input.pt"))
        with open(os.path.join(args.from_dir, "block.mlir")) as f:
            return model, x, f.read(), None
    config = {"d_model": args.d_model, "heads": args.heads, "hidden": 4 * args.d_model, "seq": args.seq}
    torch.manual_seed(0)
    model = Block(**config).eval()
    x = torch.randn(args.batch, args.seq, args.d_model)
    start = time.perf_counter()
    program = hir.from_torch(model, (x,))
    imported = time.perf_counter() - start
    start = time.perf_counter()
    hir.lower(program.module, "hir-lower")
    lowered = time.perf_counter() - start
    text = str(program.module)
    if args.emit:
        os.makedirs(args.emit, exist_ok=True)
        with open(os.path.join(args.emit, "block.mlir"), "w") as f:
            f.write(text)
        with open(os.path.join(args.emit, "config.json"), "w") as f:
            json.dump(config, f)
        torch.save(model.state_dict(), os.path.join(args.emit, "state.pt"))
        torch.save(x, os.path.join(args.emit, "input.pt"))
    return model, x, text, (imported, lowered)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--number", type=int, default=20)
    p.add_argument("--emit", metavar="DIR", help="write the imported module, weights and input to DIR")
    p.add_argument("--from", dest="from_dir", metavar="DIR", help="read them from DIR instead of importing")
    args = p.parse_args()
    dev = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    model, x, text, times = build(args)
    model = model.to(dev).eval()
    x = x.to(dev)
    arguments = [t.to(dev) for t in model.state_dict().values()] + [x]  # @main's documented order
    print(f"device: {dev}, torch {torch.__version__}, block d_model={model.ln1.normalized_shape[0]} heads={model.heads} input {list(x.shape)} f32")
    if times is not None:
        imported, lowered = times
        print(f"import (torch.export + FX importer + partition): {imported:.3f} s; hir-lower: {lowered:.3f} s ({lowered / imported:.3f}x import)")
    with torch.no_grad():
        want = model(x)
        rows = [("eager torch", lambda: model(x))]
        try:
            compiled = torch.compile(model)
            compiled(x)
            rows.append(("torch.compile", lambda: compiled(x)))
        except Exception as err:  # e.g. no C++ compiler for inductor on this machine
            print(f"torch.compile unavailable here: {type(err).__name__}: {str(err).splitlines()[0][:160]}")
        eager = Program(hir.parse(text, "block.mlir"), device=str(dev), graph=False)
        rows.append(("hir eager (graph=False)", lambda: eager(arguments)))
        if dev.type == "cuda":
            auto = Program(hir.parse(text, "block.mlir"), device=str(dev))
            rows.append(("hir graph='auto' (CUDA graph)", lambda: auto(arguments)))
        print("| run | ms per forward | x eager torch | max abs diff vs eager torch |")
        print("|---|---:|---:|---:|")
        base = None
        for name, fn in rows:
            seconds = best(fn, args.repeat, args.number, sync)
            out = fn()
            out = out[0] if isinstance(out, list) else out
            base = base or seconds
            print(f"| {name} | {seconds * 1e3:.3f} | {seconds / base:.2f}x | {(out - want).abs().max().item():.1e} |")
        if dev.type == "cuda":
            print(f"hir graph='auto' state: {auto.graph_state.last}")


if __name__ == "__main__":
    sys.exit(main())
