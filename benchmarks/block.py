"""Transformer blocks through hir against eager torch and ``torch.compile``, side by side in
one process: the single-GPU table of issue 22.

    python benchmarks/block.py [--device cpu|cuda] [--cases host,llama]   # import here and run
    python benchmarks/block.py --emit DIR [--cases ...]    # import here, write DIR/<case>.mlir
    python benchmarks/block.py --from DIR --device cuda    # run DIR's modules (no torch-mlir needed)
    python benchmarks/block.py --shape 2,16,64 --eager-only --threads 1   # CPU proxy of host overhead

The CPU proxy: at tiny shapes compute is negligible, so hir eager / eager torch measures the
interpreter's per-op host cost against nn.Module's (``--shape`` replaces every case's
[batch, seq, d_model]; ``--eager-only`` times only eager torch and hir eager).

Cases (``--cases``, default all): the pre-norm block (LayerNorm, causal softmax attention,
GELU MLP) host-bound ``host`` [4, 128, 256] f32, ``mid`` [8, 256, 512] f32, GPU-bound ``gpu``
[8, 1024, 1024] bf16, and ``llama``, test/Frontend/Inputs/llama_block.py's LLaMA-style block
(RMSNorm, rotary, grouped-query SDPA, SwiGLU) at [8, 256, 512] f32. Weights and inputs are
made from seed 0 on the device that runs the case (the GPU machine makes them itself;
``--emit`` writes only the modules and ``cases.json``), so every row computes on the same
tensors. Rows: eager torch, ``torch.compile`` (default mode), ``torch.compile(mode=
"reduce-overhead")`` (CUDA graphs), hir eager (``graph=False, compile_kernels=False``: op by
op) and hir default (``Program(module)``: ``graph="auto"``, kernel segments compiled where
``compile_kernels="auto"`` says so: compute regions, :mod:`hir.interpreter.regions`;
``--compile-kernels true`` compiles them on the CPU too). Each time is the best of ``--repeat``
timings of ``--number`` synchronized calls (the rows timed in turns); the ratio is to eager
torch; the error is the relative error of the row's output (after its timed calls) against
the block computed in float32. A row whose error is above its tolerance (bf16: 1e-2, f32:
1e-4) prints WRONG instead of its time, and the script exits 1 listing them. Compile times
are printed under each table.
"""

import argparse
import copy
import json
import math
import os
import runpy
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

import hir
from hir.interpreter import Program
from timing import TOLERANCES, Verdicts, best

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA = os.path.join(ROOT, "test", "Frontend", "Inputs", "llama_block.py")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
CASES = {
    "host": {"kind": "prenorm", "shape": [4, 128, 256], "heads": 8, "dtype": "f32"},
    "mid": {"kind": "prenorm", "shape": [8, 256, 512], "heads": 8, "dtype": "f32"},
    "gpu": {"kind": "prenorm", "shape": [8, 1024, 1024], "heads": 16, "dtype": "bf16"},
    "llama": {"kind": "llama", "shape": [8, 256, 512], "heads": 8, "dtype": "f32"},
}


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


def make(case: dict, device: torch.device) -> tuple[torch.nn.Module, torch.Tensor]:
    """The case's module and input, from seed 0, made on ``device``."""
    batch, seq, d = case["shape"]
    torch.manual_seed(0)
    with torch.device(device):
        if case["kind"] == "llama":  # LLaMA's sizes unless the case gives them (benchmarks/layer.py)
            kv_heads, hidden = case.get("kv_heads", case["heads"] // 2), case.get("hidden", round(8 * d / 3 / 64) * 64)
            model = runpy.run_path(LLAMA)["LlamaBlock"](
                d=d, heads=case["heads"], kv_heads=kv_heads, hidden=hidden, seq=seq
            )
        else:
            model = Block(d, case["heads"], 4 * d, seq)
        x = torch.randn(batch, seq, d)
    dtype = DTYPES[case["dtype"]]
    return model.eval().to(dtype), x.to(dtype)


def with_shape(case: dict, shape: str) -> dict:
    """``case`` at ``shape`` ("batch,seq,d_model"), keeping its structure (heads, dtype)."""
    return {**case, "shape": [int(n) for n in shape.split(",")]}


def imported(case: dict) -> str:
    """The case imported with ``hir.from_torch`` and lowered by hir-lower (on the CPU)."""
    model, x = make(case, torch.device("cpu"))
    start = time.perf_counter()
    program = hir.from_torch(model, (x,))
    hir.lower(program.module, "hir-lower")
    print(f"{case['name']}: import + hir-lower {time.perf_counter() - start:.1f} s", flush=True)
    return str(program.module)


def run_case(case: dict, text: str, dev: torch.device, args: argparse.Namespace, verdicts: Verdicts) -> None:
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    model, x = make(case, dev)
    arguments = list(model.state_dict().values()) + [x]  # @main's documented order
    rows: list[tuple[str, Callable]] = [("eager torch", lambda: model(x))]
    compile_s: dict[str, float] = {}

    def timed(name: str, build: Callable[[], Callable]) -> None:
        start = time.perf_counter()
        try:
            fn = build()
            fn()
            fn()
        except Exception as err:  # e.g. no C++ compiler for inductor on this machine
            print(
                f"{name}: unavailable here: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
            )
            return
        sync()
        compile_s[name] = time.perf_counter() - start
        rows.append((name, fn))

    with torch.no_grad():
        want = copy.deepcopy(model).float()(x.float())
        if not args.eager_only:
            timed("torch.compile", lambda: (lambda f: lambda: f(x))(torch.compile(model)))
            if dev.type == "cuda":
                timed(
                    "torch.compile reduce-overhead",
                    lambda: (lambda f: lambda: f(x).clone())(torch.compile(model, mode="reduce-overhead")),
                )
        eager = Program(hir.parse(text, f"{case['name']}.mlir"), device=str(dev), graph=False, compile_kernels=False)
        rows.append(("hir eager", lambda: eager(arguments)))
        if not args.eager_only:
            mode = {"auto": "auto", "true": True}[args.compile_kernels]
            default = Program(hir.parse(text, f"{case['name']}.mlir"), device=str(dev), compile_kernels=mode)
            timed("hir default" if mode == "auto" else "hir compile_kernels=True", lambda: lambda: default(arguments))
        _table(case, dev, rows, want, args, sync, verdicts)
    if not args.eager_only:
        stats = default.kernel_compile
        print(
            f"first calls incl. compile: {', '.join(f'{k} {v:.1f} s' for k, v in compile_s.items())}; hir default: "
            f"{stats.summary()}{f' ({stats.regions_reason})' if stats.regions_reason else ''},"
            f" graph {default.graph_state.last}"
        )


def _table(
    case: dict,
    dev: torch.device,
    rows: list,
    want: torch.Tensor,
    args: argparse.Namespace,
    sync: Callable,
    verdicts: Verdicts,
) -> None:
    """Time every row and print the case's table (ratios to the first row, eager torch; errors
    relative to ``want``, the float32 output)."""
    batch, seq, d = case["shape"]
    print(
        f"\n{case['name']}: {case['kind']} block [{batch}, {seq}, {d}] "
        f"{case['dtype']}, {case['heads']} heads ({dev}, torch {torch.__version__})"
    )
    print("| run | ms per forward | x eager torch | rel. error |")
    verdicts.table = case["name"]
    print("|---|---:|---:|---:|")
    # Rows take turns, one timing each per round, so a load change on the machine hits
    # every row alike; each row's best round is reported.
    rounds = [[best(fn, 1, args.number, sync) for _, fn in rows] for _ in range(args.repeat)]
    base = None
    for (name, fn), seconds in zip(rows, map(min, zip(*rounds))):
        out = fn()
        out = out[0] if isinstance(out, list) else out
        base = base or seconds * 1e3
        error = ((out.float() - want).norm() / want.norm()).item()
        print(verdicts.row((name, seconds * 1e3, error, ""), base, TOLERANCES[case["dtype"]]), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--number", type=int, default=20)
    p.add_argument(
        "--compile-kernels",
        choices=["auto", "true"],
        default="auto",
        help="the hir default row's compile_kernels ('true' compiles on CPU too: a CPU stand-in for the GPU rows)",
    )
    p.add_argument("--emit", metavar="DIR", help="import here and write DIR/<case>.mlir + DIR/cases.json")
    p.add_argument(
        "--shape", metavar="B,S,D", help="every case at [batch, seq, d_model] B,S,D (the CPU proxy: e.g. 2,16,64)"
    )
    p.add_argument("--eager-only", action="store_true", help="time only eager torch and hir eager")
    p.add_argument("--threads", type=int, help="torch.set_num_threads (the CPU proxy: 1, so timings are host time)")
    p.add_argument("--from", dest="from_dir", metavar="DIR", help="run the modules in DIR instead of importing")
    args = p.parse_args()
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.from_dir:
        with open(os.path.join(args.from_dir, "cases.json")) as f:
            cases = {n: c for n, c in json.load(f).items() if n in names}
        texts = {}
        for n in cases:
            with open(os.path.join(args.from_dir, f"{n}.mlir")) as f:
                texts[n] = f.read()
    else:
        cases = {n: {**(with_shape(CASES[n], args.shape) if args.shape else CASES[n]), "name": n} for n in names}
        texts = {n: imported(c) for n, c in cases.items()}
    if args.emit:
        os.makedirs(args.emit, exist_ok=True)
        for n, text in texts.items():
            with open(os.path.join(args.emit, f"{n}.mlir"), "w") as f:
                f.write(text)
        with open(os.path.join(args.emit, "cases.json"), "w") as f:
            json.dump(cases, f, indent=1)
        print(f"wrote {', '.join(f'{n}.mlir' for n in texts)} and cases.json to {args.emit}")
        return 0
    verdicts = Verdicts(TOLERANCES["f32"])
    for n, case in cases.items():
        try:
            run_case(case, texts[n], torch.device(args.device), args, verdicts)
        except Exception as err:  # one failing case must not lose the others' rows
            print(f"{n}: failed: {type(err).__name__}: {err}", flush=True)
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
