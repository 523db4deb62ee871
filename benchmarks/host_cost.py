"""hir's own host cost in the first ``hir.train_step`` step and the first ``hir.generate``
call, phase by phase, on the CPU: a Llama with the 1B model's op count (``--layers`` 16)
but a tiny width (``--hidden`` 64), so that what is left is the host's work per op.

    python benchmarks/host_cost.py train --reps 3      # train_step(model, AdamW, loss, batch 2 x 32)
    python benchmarks/host_cost.py generate --reps 3   # generate(model, 16 tokens, 8 new)

Each rep is a fresh process (``HIR_CACHE_DIR`` a new temporary folder: the import cache
stores, never hits) whose phases are timed by ``first_call.py``'s wrappers (outermost only),
plus the lowering (``TorchProgram.lower``) and the first call of the compiled program (the
eager run). The table gives each phase's CPU seconds, the least over the reps (CPU time is
what a loaded machine leaves unchanged, where it stretches wall times); "other" is what no
phase covers. On the CPU hir compiles no regions (``compile_kernels="auto"``). One intra-op
thread (``OMP_NUM_THREADS=1``): the tensors are tiny, and idle OpenMP threads spinning on a
shared machine only add noise to the CPU seconds.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import first_call  # noqa: E402
from narrow_llama import narrow_llama_config  # noqa: E402


def child(args: argparse.Namespace) -> dict:
    import transformers

    torch.manual_seed(0)
    token_ids = {"bos_token_id": 0, "eos_token_id": None, "pad_token_id": 0}
    config = narrow_llama_config(args.hidden, args.layers, head_dim=16, **token_ids)
    model = transformers.LlamaForCausalLM(config)
    first_call.instrument_hir()
    import hir
    import hir.frontend.compiled as compiled
    import hir.frontend.torch_import as torch_import

    first_call._patch(torch_import, "lower", "lowering (TorchProgram.lower)")
    first_call._patch(compiled.CompiledProgram, "run", "runs of the program (eager)")
    start = first_call.cpu_seconds()
    if args.what == "train":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, 1024, (2, 32))
        labels = ids.clone()
        step = hir.train_step(model, optimizer, lambda m, i, labels: m(i, labels=labels).loss, (ids, labels))
        result = [float(step(ids, labels))]
    else:
        prompt = torch.randint(1, 1000, (1, 16), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            result = hir.generate(model.eval(), prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False)
        result = result[0, -8:].tolist()
    return {"cpu_s": first_call.cpu_seconds() - start, "phases": first_call.PHASES, "result": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("train", "generate"))
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    runs = []
    for _ in range(args.reps):
        env = {**os.environ, "HIR_CACHE_DIR": tempfile.mkdtemp(prefix="hir-cache-"), "OMP_NUM_THREADS": "1"}
        command = [sys.executable, __file__, args.what, "--child", f"--layers={args.layers}", f"--hidden={args.hidden}"]
        out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    phases = sorted({p for run in runs for p in run["phases"]}, key=lambda p: -runs[0]["phases"].get(p, [0, 0, 0])[2])
    print(f"{args.what}: {args.layers} layers, hidden {args.hidden}; result {runs[0]['result']}")
    print("| phase | CPU-s (least of runs) |\n|---|---:|")
    for phase in phases:
        print(f"| {phase} | {min(run['phases'].get(phase, [0, 0, 0])[2] for run in runs):.2f} |")
    other = min(run["cpu_s"] - sum(v[2] for v in run["phases"].values()) for run in runs)
    print(f"| other | {other:.2f} |\n| **total** | **{min(run['cpu_s'] for run in runs):.2f}** |")
    print(f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.reps} runs)")


if __name__ == "__main__":
    main()
