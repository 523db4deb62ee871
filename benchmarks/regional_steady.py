"""Steady-state cost of regional compilation (``regional=True``: a region cut at its repeated
layers, each distinct piece compiled once) against each region compiled whole
(``regional=False``): the training step of ``hir.train_step`` and the decode step of
``hir.compile`` on a small Llama, both compiled (``compile_kernels=True``), timed in one
process, the two alternating call by call so that a loaded machine slows both alike.

    python benchmarks/regional_steady.py --device cpu --layers 8 --hidden 256
    python benchmarks/regional_steady.py --device cuda --layers 16 --hidden 2048 --calls 50

The Llama: ``--layers`` of hidden ``--hidden`` (intermediate 4x, heads hidden / 64, half as
many key-value heads), vocab 1024, float32 (bf16 with ``--dtype bfloat16``); training: batch
2 x ``--seq``, ``AdamW(fused=True)``; decode: batch 1, a 256-position static cache. Each row:
median and best of ``--calls`` calls after two warm-up calls (the first compiles).
"""

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))

import torch
import transformers

import hir
from hir.frontend.hf_decode import StaticCacheStep
from narrow_llama import narrow_llama_config


def llama(args: argparse.Namespace) -> transformers.LlamaForCausalLM:
    torch.manual_seed(0)
    config = narrow_llama_config(args.hidden, args.layers, eos_token_id=None)
    return transformers.LlamaForCausalLM(config).to(args.device, getattr(torch, args.dtype))


def train_calls(args: argparse.Namespace, regional: bool):
    model = llama(args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, 1024, (2, args.seq), device=args.device)
    labels = ids.clone()

    def loss_fn(m, ids, labels):
        return m(ids, labels=labels).loss

    step = hir.train_step(model, optimizer, loss_fn, (ids, labels), compile_kernels=True, regional=regional)
    return lambda: step(ids, labels).item()


def decode_calls(args: argparse.Namespace, regional: bool):
    step = StaticCacheStep(llama(args).eval(), batch_size=1, max_cache_len=256)
    ids, pos = torch.tensor([[5]], device=args.device), torch.tensor([100], device=args.device)
    fn: Any = hir.compile(step, (ids, pos), device=args.device, compile_kernels=True, regional=regional)
    return lambda: fn(ids, pos).sum().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--steps", default="train,decode", help="comma-separated: train, decode")
    args = parser.parse_args()
    print(f"| step | regional | median ms | best ms |  ({args.layers} layers, hidden {args.hidden}, {args.device})")
    print("|---|---|---:|---:|")
    for name in args.steps.split(","):
        make = {"train": train_calls, "decode": decode_calls}[name]
        calls = {regional: make(args, regional) for regional in (True, False)}
        times: dict = {True: [], False: []}
        for i in range(args.calls + 2):
            for regional, call in calls.items():
                start = time.perf_counter()
                call()
                if i >= 2:
                    times[regional].append(1000 * (time.perf_counter() - start))
        for regional, ms in times.items():
            print(f"| {name} | {regional} | {statistics.median(ms):.2f} | {min(ms):.2f} |", flush=True)


if __name__ == "__main__":
    main()
