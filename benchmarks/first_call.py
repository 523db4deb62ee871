"""The first call of ``hir.compile`` on a Llama, phase by phase (issue 34): where the time
from the ``nn.Module`` to the first result goes, against ``torch.compile`` of the same step.

    python benchmarks/first_call.py                          # ~1B Llama (16 layers), bf16, cpu or cuda
    python benchmarks/first_call.py --layers 2 --dtype float32 --device cpu --compile-kernels on
    python benchmarks/first_call.py --engines hir --profile /tmp/hir.prof   # cProfile of hir's child

Each engine runs in a fresh process with empty caches (``HIR_CACHE_DIR`` and
``TORCHINDUCTOR_CACHE_DIR`` in a temporary folder), exactly what
``benchmarks/generate.py --sections first`` times: ``StaticCacheStep`` of a random-weight
Llama (``--layers`` of the ~1B config: d 2048, 32 / 8 heads, vocab 32000), decode batch 1,
cache ``--cache``; hir: ``hir.compile(step, (ids, pos), device=...)`` then the first call;
torch: ``torch.compile(step, mode="reduce-overhead")`` then the first call. ``--second``
runs each engine again on its first process's caches. ``--engines generate,hf-generate``:
the first ``generate`` call instead (``--prompt`` tokens, ``--new`` greedy tokens, batch 1),
``hir.generate`` (its ``compile_options`` from ``--compile-kernels``) against HF ``generate``
with its static cache (HF compiles its decode step; on the CPU too here).

The phases are timed by wrapping the functions that do them (an outermost-only timer: a
phase called inside another counts for the outer one); "other" is what no phase covers
(argument layout, checks, the step's execution). ``--compile-kernels on`` compiles hir's
regions on the CPU too (the default, ``auto``, compiles on CUDA only), so that the CPU
breakdown has the GPU's phases; inductor's own time is its row, the rest is hir's.
"""

import argparse
import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from decode_setup import FULL, GENERATE_ENGINES, generate_call  # noqa: E402

ENGINES = {"hir": "hir.compile", "torch": "torch.compile reduce-overhead", **GENERATE_ENGINES}
PHASES: dict = {}  # phase -> [seconds, calls, CPU seconds]
_ACTIVE: list = []  # the phase running now (outermost only)


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (inductor's C++ compiles): on a
    shared machine, what an idle one's wall clock would show."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(phase: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _ACTIVE:
            return fn(*args, **kwargs)
        _ACTIVE.append(phase)
        start, cpu = time.perf_counter(), cpu_seconds()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = PHASES.setdefault(phase, [0.0, 0, 0.0])
            entry[0] += time.perf_counter() - start
            entry[1] += 1
            entry[2] += cpu_seconds() - cpu
            _ACTIVE.pop()

    return wrapper


def _patch(owner: Any, name: str, phase: str) -> None:
    setattr(owner, name, _timed(phase, getattr(owner, name)))


def _timed_tracer(make_fx: Callable) -> Callable:
    """``make_fx(f)`` returns the tracer; the trace happens when that is called."""

    @functools.wraps(make_fx)
    def wrapper(*args, **kwargs):
        return _timed("region trace (make_fx)", make_fx(*args, **kwargs))

    return wrapper


PASS_TIMES: dict = {}  # pass -> seconds, from the PassManager's timing report
_REPORT = re.compile(r"^\s*([\d.]+) \(\s*[\d.]+%\)\s+(\S.*)$")


def _lower_with_timing(lower: Callable) -> Callable:
    def wrapper(module, pipeline="hir-lower", **options):
        report = io.StringIO()
        result = lower(module, pipeline, timing=True, out=report, **options)
        for line in report.getvalue().splitlines():
            m = _REPORT.match(line)
            if m and m[2].strip() != "Total":
                PASS_TIMES[m[2].strip()] = PASS_TIMES.get(m[2].strip(), 0.0) + float(m[1])
        return result

    return wrapper


def instrument_hir() -> None:
    import torch._inductor.compile_fx as inductor
    import torch._inductor.fx_passes.joint_graph as joint_graph
    import torch.fx.experimental.proxy_tensor as proxy_tensor
    from torch_mlir.extras.fx_importer import FxImporter

    import hir
    import hir.frontend.fx_rewrites as rewrites
    import hir.frontend.import_cache as import_cache
    from hir.frontend.partition import Partitioner
    from hir.frontend.placer import Placer
    from hir.interpreter import Program

    _patch(import_cache, "fingerprint", "import cache key")
    _patch(import_cache, "store_entry", "import cache store")
    import hir.frontend.export as export

    if hasattr(export, "functional_export"):
        _patch(export, "functional_export", "export (torch.export)")
    _patch(torch.export, "export", "export (torch.export)")  # before functional_export (its fallback)
    _patch(torch.export.ExportedProgram, "run_decompositions", "export (torch.export)")
    _patch(rewrites, "group_query_heads", "FX rewrites")
    _patch(rewrites, "fuse_projections", "FX rewrites")
    _patch(FxImporter, "import_stateless_graph", "MLIR import (FX importer)")
    _patch(Placer, "plan", "placement + partition")
    _patch(Partitioner, "build", "placement + partition")
    hir.lower = _timed("lowering (one PassManager)", _lower_with_timing(hir.lower))
    _patch(Program, "__init__", "plan build (Program)")
    proxy_tensor.make_fx = _timed_tracer(proxy_tensor.make_fx)
    # hir's regions: inductor's passes and compile_fx_inner after hir's own functional trace
    # (hir.interpreter.inductor_graph), compile_fx (AOT autograd, then inductor) where that cannot
    _patch(inductor, "compile_fx", "inductor compile (compile_fx)")
    _patch(inductor, "compile_fx_inner", "inductor compile (compile_fx)")
    _patch(joint_graph, "joint_graph_passes", "inductor compile (compile_fx)")


def instrument_torch() -> None:
    import torch._inductor.compile_fx as inductor

    _patch(inductor, "compile_fx", "inductor compile (compile_fx)")


def child(args: argparse.Namespace) -> dict:
    import transformers

    from hir.frontend.hf_decode import StaticCacheStep

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        **{**FULL, "num_hidden_layers": args.layers}, bos_token_id=0, eos_token_id=None, pad_token_id=0
    )
    with torch.device(args.device):
        model = transformers.LlamaForCausalLM(config)
    model = model.eval().to(getattr(torch, args.dtype))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    options = {} if args.compile_kernels == "auto" else {"compile_kernels": args.compile_kernels == "on"}
    if args.engine in ("hir", "generate") and args.regional == "off":
        options["regional"] = False
    if args.engine in ("hir", "generate"):
        instrument_hir()
    else:
        instrument_torch()
    if args.engine in ("hir", "torch"):
        step = StaticCacheStep(model, 1, args.cache)
        ids, pos = torch.tensor([[5]], device=args.device), torch.tensor([args.cache // 2], device=args.device)
        build = compile_step(args, step, (ids, pos), options)
        first = lambda fn: fn(ids, pos)  # noqa: E731
    else:
        prompt = torch.randint(1, 1000, (1, args.prompt), generator=torch.Generator().manual_seed(1)).to(args.device)
        build, call = (lambda: None), generate_call(args.engine, model, prompt, args.new, options)
        first = lambda _: call()  # noqa: E731
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
    sync()
    start, cpu = time.perf_counter(), cpu_seconds()
    with torch.no_grad(), profiler or contextlib.nullcontext():
        fn = build()
        built = time.perf_counter() - start
        first(fn)
        sync()
    total = time.perf_counter() - start
    if profiler is not None:
        profiler.dump_stats(args.profile)
    return {"total_s": total, "built_s": built, "cpu_s": cpu_seconds() - cpu, "phases": PHASES, "passes": PASS_TIMES}


def compile_step(args: argparse.Namespace, step: torch.nn.Module, example: tuple, options: dict) -> Callable:
    """``hir.compile`` / ``torch.compile`` of the decode step (what ``generate.py --sections first`` times)."""
    if args.engine == "hir":
        import hir

        return lambda: hir.compile(step, example, device=args.device, **options)
    return lambda: torch.compile(step, mode="reduce-overhead")


def run_child(args: argparse.Namespace, engine: str, caches: str) -> dict:
    env = {
        **os.environ,
        "HIR_CACHE_DIR": os.path.join(caches, "hir"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor"),
    }
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        engine,
        "--layers",
        str(args.layers),
        "--dtype",
        args.dtype,
        "--device",
        args.device,
        "--cache",
        str(args.cache),
        "--compile-kernels",
        args.compile_kernels,
        "--regional",
        args.regional,
        "--prompt",
        str(args.prompt),
        "--new",
        str(args.new),
    ]
    if args.profile and engine in ("hir", "generate"):
        command += ["--profile", args.profile]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{engine} child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(label: str, result: dict) -> None:
    total, cpu = result["total_s"], result["cpu_s"]
    print(f"\n| {label}: phase | s | CPU s | CPU share |\n|---|---:|---:|---:|")
    covered = [0.0, 0.0]
    for phase, (seconds, calls, cpu_s) in sorted(result["phases"].items(), key=lambda kv: -kv[1][2]):
        covered = [covered[0] + seconds, covered[1] + cpu_s]
        print(
            f"| {phase}{f' ({calls} calls)' if calls > 1 else ''} | {seconds:.2f} | {cpu_s:.2f} | {cpu_s / cpu:.0%} |"
        )
    print(
        f"| other (arguments, checks, the execution) | {total - covered[0]:.2f} | {cpu - covered[1]:.2f} | "
        f"{(cpu - covered[1]) / cpu:.0%} |"
    )
    print(f"| **to the first result** | **{total:.2f}** | **{cpu:.2f}** | 100% |")
    if result["passes"]:
        print(
            "lowering by pass (MLIR timing; Rest: verification and the manager): "
            + ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(result["passes"].items(), key=lambda kv: -kv[1]) if v >= 0.005
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--cache", type=int, default=1024, help="static cache positions")
    parser.add_argument(
        "--compile-kernels",
        default="auto",
        choices=["auto", "on", "off"],
        help="hir's compile_kernels (auto: on CUDA only)",
    )
    parser.add_argument(
        "--regional", default="on", choices=["on", "off"], help="hir's regional compilation (off: regions whole)"
    )
    parser.add_argument(
        "--engines", default="hir,torch", help="comma-separated: hir, torch, generate (hir.generate), hf-generate"
    )
    parser.add_argument("--prompt", type=int, default=128, help="generate engines: prompt tokens")
    parser.add_argument("--new", type=int, default=32, help="generate engines: new tokens")
    parser.add_argument("--second", action="store_true", help="also a second process of each on the first one's caches")
    parser.add_argument("--profile", default=None, help="write a cProfile of hir's (first) process here")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.child:
        args.engine = args.child
        print(json.dumps(child(args)))
        return
    print(
        f"Llama, {args.layers} layers of the ~1B config, {args.dtype}, {args.device}, cache "
        f"{args.cache}, hir compile_kernels={args.compile_kernels} regional={args.regional}, torch {torch.__version__}",
        flush=True,
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="hir-first-call-") as scratch:
        for engine in args.engines.split(","):
            caches = os.path.join(scratch, engine)
            runs = [("first process", run_child(args, engine, caches))]
            if args.second:
                args.profile = None
                runs.append(("second process", run_child(args, engine, caches)))
            for which, result in runs:
                label = f"{ENGINES[engine]}, {which}"
                results[label] = result
                print_table(label, result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
