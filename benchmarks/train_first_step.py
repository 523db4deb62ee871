"""The first call of ``hir.train_step`` on a small Llama, part by part: the import (export,
lowering), inductor's compile of the step's compute regions, and the rest of the first call;
with Adam's update as ``hir.adam_update`` (the op, outside the compiled region) or traced into
the program (``--update traced``: its arithmetic in the region, as a step on a mesh keeps it).

    python benchmarks/train_first_step.py --device cpu            # inductor's CPU backend (compile_kernels=True)
    python benchmarks/train_first_step.py --device cpu --update traced

Each run is one fresh process with an empty inductor cache (``TORCHINDUCTOR_CACHE_DIR`` in a
temporary folder) that compiles in itself (``TORCHINDUCTOR_COMPILE_THREADS=1``), so that its CPU
seconds (the process's and its C++ compilers', which a loaded machine leaves unchanged where it
stretches the wall times) count all of inductor's work. The Llama: ``--layers`` layers of hidden
``--hidden`` (intermediate 4x, heads hidden / 64, half as many key-value heads), vocab 1024,
float32, batch ``--batch`` x ``--seq``, ``AdamW(fused=True)``; the step is compiled with
``compile_kernels=True`` (on the CPU the default, ``"auto"``, compiles nothing). ``step`` is the
best of three calls after the first. ``--regional off``: each compute region compiles whole
(``regional=False``), instead of its repeated layers once.
"""

import argparse
import json
import os
import resource
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch
import transformers

import hir
from hir.frontend import optimizer_update
from narrow_llama import narrow_llama_config


def cpu_seconds() -> float:
    """CPU time of this process and its waited-for children (the C++ compilers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--update", choices=("op", "traced"), default="op")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--regional", choices=("on", "off"), default="on", help="hir's regional compilation")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    if args.update == "traced":  # the update traced into the program, as before the op took it over
        optimizer_update.applies = lambda *_: False  # type: ignore[assignment]
    torch.manual_seed(0)
    config = narrow_llama_config(args.hidden, args.layers)
    model = transformers.LlamaForCausalLM(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, 1024, (args.batch, args.seq), device=args.device)
    labels = ids.clone()  # a batch's own tensor: arguments that share memory would run op by op

    def loss_fn(m, ids, labels):
        return m(ids, labels=labels).loss

    start, cpu_start = time.perf_counter(), cpu_seconds()
    regional = args.regional == "on"
    step = hir.train_step(model, optimizer, loss_fn, (ids, labels), compile_kernels=True, regional=regional)
    imported, cpu_imported = time.perf_counter(), cpu_seconds()
    step(ids, labels)
    first, cpu_first = time.perf_counter(), cpu_seconds()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        step(ids, labels).item()
        times.append(time.perf_counter() - t0)
    (compiled, _) = next(iter(step._compiled.values()))
    stats = compiled.kernel_compile
    module = next(iter(step.programs.values())).module
    main_func = next(op for op in module.body.operations if op.operation.name == "func.func")
    result = {
        "update": args.update,
        "ops_in_main": len(list(main_func.regions[0].blocks[0].operations)),
        "import_cpu_s": round(cpu_imported - cpu_start, 1),
        "first_call_cpu_s": round(cpu_first - cpu_imported, 1),
        "import_s": round(imported - start, 2),
        "first_call_s": round(first - imported, 2),
        "inductor_s": round(stats.seconds, 2),
        "first_call_rest_s": round(first - imported - stats.seconds, 2),
        "first_step_s": round(first - start, 2),
        "regional": args.regional,
        "regions": stats.regions,
        "repeats": stats.repeats,
        "compiles": stats.compiles,
        "fallbacks": stats.fallbacks,
        "step_ms": round(1000 * min(times), 1),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
