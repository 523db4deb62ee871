"""What a new cache-length bucket or batch size costs ``hir.generate`` on the CPU: the first
call (export, import, lowering, plan), the same call again, a call that needs a longer
cache (a new bucket) and one with another batch size, each followed by the same call again
so that the set-up (the difference) is apart from the decoding.

    python benchmarks/generate_buckets.py                       # tiny and small Llamas, both modes
    python benchmarks/generate_buckets.py --configs small --modes shared
    python benchmarks/generate_buckets.py --configs deep --modes shared   # the tiny one with 16 layers

Modes: ``shared`` is hir.generate as it is (each bucket imports its own step, every dim
static; one prefill import with the batch size and cache length dynamic, every bucket
compiling it: :mod:`hir.frontend.generators`); ``per-bucket`` forces what a model whose
prefill cannot be imported with those dims dynamic gets: each bucket imports the prefill too.
Each (config, mode) runs in a fresh process with an empty import cache (``HIR_CACHE_DIR`` in
a temporary folder) and one torch thread, greedy, a prompt of 8 tokens: first call batch 1 with 8 new tokens
(cache 64), new bucket batch 1 with 70 new tokens (cache 128), new batch size batch 2 with 8
new tokens (cache 64). Each figure is the process's CPU seconds (``time.process_time``: on a
machine shared with other work, what an idle machine's wall clock would show), the wall
seconds beside it in the per-call lines. With ``--repeat N`` each (config, mode) runs in N
processes; the table shows each figure's median (a set-up: the median of the differences).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {
    "tiny": dict(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    ),
    "small": dict(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    ),
}
CONFIGS["deep"] = {**CONFIGS["tiny"], "num_hidden_layers": 16}  # the export's cost grows with the layers
CALLS = [  # (label, batch, new tokens)
    ("first call", 1, 8),
    ("again", 1, 8),
    ("new bucket", 1, 70),
    ("again", 1, 70),
    ("new batch size", 2, 8),
    ("again", 2, 8),
]


def child(config: str, mode: str) -> dict:
    import transformers

    import hir
    from hir.frontend import generators

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            **CONFIGS[config], max_position_embeddings=512, bos_token_id=0, eos_token_id=None, pad_token_id=0
        )
    ).eval()
    if mode == "per-bucket":
        programs = generators.ModelPrograms(model, padded=False)
        programs.prefill_per_bucket = "benchmark: imported per bucket"
        generators._GENERATORS.setdefault(model, {})[("programs", "cpu", False)] = programs
    prompt = torch.randint(1, CONFIGS[config]["vocab_size"], (2, 8), generator=torch.Generator().manual_seed(1))
    torch.set_num_threads(1)
    times, walls = [], []
    for _, batch, new in CALLS:
        start, wall = time.process_time(), time.perf_counter()
        hir.generate(model, prompt[:batch], max_new_tokens=new, do_sample=False)
        times.append(time.process_time() - start)
        walls.append(time.perf_counter() - wall)
    return {"times": times, "walls": walls}


def run_child(config: str, mode: str) -> dict:
    with tempfile.TemporaryDirectory() as caches:
        env = {**os.environ, "HIR_CACHE_DIR": os.path.join(caches, "hir")}
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", config, mode],
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        sys.exit(f"{config}/{mode} child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default="tiny,small")
    parser.add_argument("--modes", default="shared,per-bucket")
    parser.add_argument("--repeat", type=int, default=1, help="processes per (config, mode): the median is shown")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(
        "\n| config | mode | first call (cpu s) | again "
        "| new bucket | again | set-up | new batch size | again | set-up |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    walls: list = []
    for config in args.configs.split(","):
        for mode in args.modes.split(","):
            results = [run_child(config, mode) for _ in range(args.repeat)]
            t = [statistics.median(run["times"][i] for run in results) for i in range(len(CALLS))]
            setups = [statistics.median(run["times"][i] - run["times"][i + 1] for run in results) for i in (2, 4)]
            print(
                f"| {config} | {mode} | {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} | {t[3]:.2f} | "
                f"**{setups[0]:.2f}** | {t[4]:.2f} | {t[5]:.2f} | **{setups[1]:.2f}** |",
                flush=True,
            )
            for run in results:
                walls.append(f"{config}/{mode} wall s: " + ", ".join(f"{w:.2f}" for w in run["walls"]))
                walls.append(f"{config}/{mode} cpu s: " + ", ".join(f"{w:.2f}" for w in run["times"]))
    print("\n".join(walls))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
