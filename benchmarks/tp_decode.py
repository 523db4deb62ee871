"""Tensor-parallel decode per token of a ~1B Llama on N GPUs (issue 36): one token through
the model and its static KV cache, each rank holding its heads of the cache and its part of
every weight, as ``hir.from_torch`` imports it from HF's own runtime plan (``model.tp_plan``:
embedding_rowwise, colwise / rowwise projections, lm_head colwise_gather_output; the cache
split by kv heads) through :class:`hir.frontend.hf_decode.StaticCacheStep`, against the same
model under DTensor ``parallelize_module`` with HF's plan as torch styles, eager and
compiled (``torch.compile(mode="reduce-overhead")``), all in one run.

    python benchmarks/tp_decode.py --emit DIR [--worlds 2,4] [--small]      # import here
    torchrun --nproc_per_node=N benchmarks/tp_decode.py --from DIR          # run (N GPUs)
    # the CPU check (Gloo; --small)
    python -m torch.distributed.run --nproc_per_node=2 benchmarks/tp_decode.py --from DIR --device cpu

The model: d_model 2048, 16 layers, 32 heads / 8 kv heads, MLP 5632, vocab 32000 (TinyLlama's
shape, 1.1B parameters), bf16; ``--small``: d_model 64, 2 layers, 8 / 4 heads, vocab 256.
``--emit`` builds it on the meta device (no weights) and imports one decode step per world
size; the GPU side (transformers 5.17 there: only ``LlamaConfig`` / ``LlamaForCausalLM``)
builds it from the config and seed 0 on each rank, so no weights travel. Before the timing
every row decodes the same ``--prompt`` tokens one at a time into its cache; a row's call
is then the step at the next position (its cache slot rewritten alike each call). Each row:
the best over ``--rounds`` rounds of a median of ``--iters`` steps (CUDA events, max over
ranks), its ratio to the compiled DTensor row, and the relative error of its logits against
the unsharded model in float32 (tolerance 3e-2: 16 bf16 layers); a row above it prints
WRONG and the script exits 1; a row that cannot run, or is not built within ``--budget``
seconds of set-up, prints n/a and why.
"""

import argparse
import copy
import faulthandler
import json
import os
import sys
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

import hir
from dist_timing import (
    add_emit_run_arguments,
    bench_in_turns,
    emit_or_run,
    init_ranks,
    lowered_collectives,
    relerr,
    selected,
)
from hir.frontend.hf_decode import cache_keyword
from hir.interpreter import compile as compile_program
from hir.interpreter import local_arguments
from hir.interpreter.backends.process_groups import shutdown
from timing import Verdicts, worst

WHOLE = "hir-convert-to-communication{backend=nccl},hir-lower"
ONE_SHOT = (
    "hir-convert-to-communication{backend=cuda},hir-lower"  # the all-reduces as one-shot kernels on symmetric memory
)
SIZES = {
    "default": dict(
        vocab_size=32000,
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
    ),
    "small": dict(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=4,
    ),
}
TOLERANCE = 3e-2  # bf16 logits after 16 layers against float32


def llama(config: dict, device: str):
    """The Llama of ``config`` in bf16 on ``device`` ("meta": no weights), seed 0."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        **config["model"], max_position_embeddings=config["cache"], bos_token_id=0, eos_token_id=None, pad_token_id=0
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    return model.to(torch.bfloat16).eval(), cfg


def emit(args: argparse.Namespace) -> None:
    from hir.frontend.hf_decode import StaticCacheStep

    os.makedirs(args.emit, exist_ok=True)
    size = SIZES["small" if args.small else "default"]
    for world in (int(w) for w in args.worlds.split(",")):
        config = {
            "model": size,
            "cache": 64 if args.small else 256,
            "prompt": 8 if args.small else 32,
            "dtype": "bf16",
            "world": world,
        }
        if size["num_key_value_heads"] % world:
            raise SystemExit(f"error: {world} ranks do not divide {size['num_key_value_heads']} k/v heads")
        model, cfg = llama(config, "meta")
        model.to_empty(device="cpu")  # memory, not initialized: the GPU side makes the weights
        model.model.rotary_emb = type(model.model.rotary_emb)(config=cfg).to(torch.bfloat16)
        step = StaticCacheStep(model, batch_size=1, max_cache_len=config["cache"])
        program = hir.from_torch(
            step, (torch.tensor([[1]]), torch.tensor([0])), mesh=list(range(world)), placements=model.tp_plan
        )
        text = str(program.module)
        with open(os.path.join(args.emit, f"decode_w{world}.mlir"), "w") as f:
            f.write(text)
        # the state the GPU side makes: the model's entries (under the step's "model."), the cache's (zeros)
        state = program.state(step)
        config["state"] = [
            [name, list(state[name].shape), str(state[name].dtype).split(".")[-1]] for name in program.state_names
        ]
        config["collectives"] = lowered_collectives(text, WHOLE)
        with open(os.path.join(args.emit, f"config_w{world}.json"), "w") as f:
            json.dump(config, f)
        print(
            f"wrote {args.emit}/decode_w{world}.mlir ({len(text) // 1024} KB): "
            f"collectives per step {config['collectives']}",
            flush=True,
        )


def state_values(config: dict, model: torch.nn.Module, dev: torch.device) -> list:
    """``@main``'s state entries: the model's tensors by name, zeros for the cache."""
    values = []
    for name, shape, dtype in config["state"]:
        if name.startswith(("key_cache_", "value_cache_", "cumulative_length_")):
            values.append(torch.zeros(shape, dtype=getattr(torch, dtype), device=dev))
            continue
        path, _, attr = name.removeprefix("model.").rpartition(".")
        # a tensor attribute in older transformers (rotary's original_inv_freq) is a buffer in newer ones
        tensor = getattr(model.get_submodule(path), attr, None) if path else getattr(model, attr, None)
        if not isinstance(tensor, torch.Tensor) or list(tensor.shape) != shape:
            raise KeyError(f"state entry {name!r} ({shape}) is neither the model's nor the cache's")
        values.append(tensor.detach().to(getattr(torch, dtype)))
    return values


class Decode:
    """One row's decoding: ``step(token, position)`` runs one token and returns the logits
    (the cache kept inside); :meth:`prefill` feeds the prompt; :meth:`call` is the timed step."""

    def __init__(self, step: Callable[[int, int], torch.Tensor], prompt: list[int]) -> None:
        self.step, self.prompt = step, prompt

    def prefill(self) -> torch.Tensor:
        for position, token in enumerate(self.prompt):
            logits = self.step(token, position)
        return logits

    def call(self) -> torch.Tensor:
        return self.step(self.prompt[-1], len(self.prompt) - 1)


def hir_decode(
    text: str, values: list, dev: torch.device, graph: bool, kernels, pipeline: str = WHOLE
) -> Callable[[int, int], torch.Tensor]:
    """The imported step lowered by ``pipeline`` (collectives whole), run by hir: as a
    CUDA-graph replay on the graph's static inputs (the cache among them) when ``graph``."""
    module = hir.parse(text, "decode.mlir")
    hir.lower(module, pipeline if dev.type == "cuda" else WHOLE.replace("nccl", "gloo"))  # Gloo for the CPU check
    rank = dist.get_rank()
    args = [t.to(dev) if isinstance(t, torch.Tensor) else t for t in local_arguments(module, values, rank)]
    program = compile_program(module, device=str(dev), graph=graph, static_outputs=graph, compile_kernels=kernels)
    program(args)
    args = program.graph.static_inputs if graph else args
    token, position = args[-2], args[-1]

    def step(t: int, p: int) -> torch.Tensor:
        token.fill_(t)
        position.fill_(p)
        return program(args)[0][0, -1]

    return step


def dtensor_decode(
    model: torch.nn.Module, world: int, config: dict, dev: torch.device, compiled: bool
) -> Callable[[int, int], torch.Tensor]:
    """A copy of ``model`` under ``parallelize_module`` with HF's runtime plan as torch styles
    (embedding: RowwiseParallel with the ids replicated; lm_head: ColwiseParallel gathering the
    logits), heads per rank from the local projections, its own StaticCache of local heads."""
    from torch.distributed.tensor import DeviceMesh, Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from transformers import StaticCache

    styles = {
        "colwise": ColwiseParallel(),
        "rowwise": RowwiseParallel(),
        "embedding_rowwise": RowwiseParallel(input_layouts=Replicate()),
        "colwise_gather_output": ColwiseParallel(output_layouts=Replicate()),
    }
    plan = {name: styles[style] for name, style in (getattr(model, "tp_plan", None) or model._tp_plan).items()}
    tp = parallelize_module(copy.deepcopy(model), DeviceMesh(dev.type, list(range(world))), plan)
    cache = StaticCache(config=tp.config, max_cache_len=config["cache"])  # lazily sized by the first (local) keys
    keyword = cache_keyword(tp)
    token, position = torch.zeros(1, 1, dtype=torch.long, device=dev), torch.zeros(1, dtype=torch.long, device=dev)

    def forward(ids: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        return tp(input_ids=ids, cache_position=at, use_cache=True, **{keyword: cache}).logits

    if compiled:
        # HF's StaticCache allocates its layers at the first call: run that call eagerly, so the
        # compiled graph neither allocates the cache (into the CUDA-graph pool, where later
        # replays would overwrite it) nor is compiled twice (before and after the allocation).
        forward(token, position)
    run = torch.compile(forward, mode="reduce-overhead", fullgraph=False) if compiled else forward

    def step(t: int, p: int) -> torch.Tensor:
        token.fill_(t)
        position.fill_(p)
        for layer in getattr(cache, "layers", []):  # transformers >= 5.2x writes at its own count, not cache_position
            count = getattr(layer, "cumulative_length", None)
            if isinstance(count, torch.Tensor):
                count.fill_(p)
        return run(token, position)[0, -1]

    return step


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    faulthandler.enable()  # a crashing rank (SIGSEGV in a compile) prints its Python stack
    faulthandler.dump_traceback_later(args.timeout, exit=True)  # a hung rank dumps stacks and exits
    dev = init_ranks(args.device)
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(args.from_dir, f"config_w{world}.json")
    if not os.path.exists(path):
        if rank == 0:
            print(f"skipped: no decode step imported for {world} ranks in {args.from_dir} (emit with --worlds {world})")
        dist.destroy_process_group()
        return 0
    with open(path) as f:
        config = json.load(f)
    with open(os.path.join(args.from_dir, f"decode_w{world}.mlir")) as f:
        text = f.read()
    model, _ = llama(config, str(dev))
    prompt = torch.randint(
        1, config["model"]["vocab_size"], (config["prompt"],), generator=torch.Generator().manual_seed(1)
    ).tolist()
    with torch.no_grad():
        reference = copy.deepcopy(model).float()(torch.tensor([prompt], device=dev)).logits[0, -1]
    cuda = dev.type == "cuda"
    values = state_values(config, model, dev) + [torch.tensor([[prompt[0]]], device=dev), torch.tensor([0], device=dev)]
    pipeline = WHOLE if cuda else WHOLE.replace("nccl", "gloo")
    rows: list[
        tuple[str, Callable[[], Callable | None]]
    ] = [  # built in this order (--budget may leave the last unbuilt)
        (
            f"hir TP decode [{pipeline}] ({'CUDA graph, compiled kernels' if cuda else 'eager: no CUDA'})",
            lambda: hir_decode(text, values, dev, cuda, cuda),
        ),
        (
            f"hir TP decode [{ONE_SHOT}] (CUDA graph, compiled kernels)",
            lambda: hir_decode(text, values, dev, True, True, ONE_SHOT) if cuda else None,
        ),
        (
            "DTensor parallelize_module, HF's plan, torch.compile reduce-overhead",
            lambda: dtensor_decode(model, world, config, dev, True),
        ),
        ("DTensor parallelize_module, HF's plan, eager", lambda: dtensor_decode(model, world, config, dev, False)),
        (
            f"hir TP decode [{pipeline}] (CUDA graph, eager kernels)",
            lambda: hir_decode(text, values, dev, cuda, False) if cuda else None,
        ),
    ]
    built, notes = [], []
    with torch.no_grad():
        for label, build in selected(rows, args.rows):
            start = time.perf_counter()
            ok = torch.tensor([float(time.perf_counter() - started < args.budget)], device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)  # one decision for all ranks
            if not ok.item():
                built.append((label, None, None, f"not built: the set-up passed --budget {args.budget:.0f} s"))
                continue
            try:
                step = build()
                if step is None:
                    built.append((label, None, None, "needs CUDA"))
                    continue
                decode = Decode(step, prompt)
                error = relerr(decode.prefill(), reference)
                built.append((label, decode, error, ""))
            except Exception as err:  # an API this torch or transformers lacks: say why
                built.append(
                    (label, None, None, f"{type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}")
                )
            notes.append(f"row {len(built)} {time.perf_counter() - start:.1f}")
            if rank == 0:  # as it goes: a run killed by its cap still says how far it got
                print(f"  {label}: {built[-1][3] or 'ready'} after {time.perf_counter() - start:.1f} s", flush=True)
        timed = [b for b in built if b[1] is not None]
        times = bench_in_turns([b[1].call for b in timed], rounds=args.rounds, iters=args.iters)
        results = {b[0]: (ms, worst(b[2], relerr(b[1].call(), reference))) for b, ms in zip(timed, times)}
    verdicts = Verdicts(TOLERANCE)
    verdicts.table = f"TP decode, {world} rank(s)"
    base = next((results[label][0] for label in results if "reduce-overhead" in label), None)
    if rank == 0:
        name = torch.cuda.get_device_name() if cuda else "CPU, Gloo"
        m = config["model"]
        print(
            f"\nLlama TP decode per token, {world} rank(s), bf16, d_model {m['hidden_size']}, {m['num_hidden_layers']} "
            f"layers, heads {m['num_attention_heads']} (k/v {m['num_key_value_heads']}), vocab {m['vocab_size']}, "
            f"position {config['prompt']} of a {config['cache']}-slot cache ({name}, torch {torch.__version__}); best "
            f"of {args.rounds} rounds\n| row | ms | x DTensor compiled | rel. error |\n|---|---:|---:|---:|"
        )
    verdicts.print_rows(
        [(label, *results[label], "") if label in results else (label, None, None, why) for label, _, _, why in built],
        base,
        show=rank == 0,
    )
    if rank == 0:
        print(
            "hir's collectives per step (hir-lower, imported here): "
            f"{config['collectives']}; set-up s (rank 0): {', '.join(notes)}",
            flush=True,
        )
    shutdown()
    return verdicts.finish(show=rank == 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_emit_run_arguments(
        p,
        emits="DIR/decode_w<N>.mlir + config_w<N>.json",
        runs="DIR's steps",
        small="the small model",
        rounds=3,
        iters=20,
        iters_help="timed steps per row and round (the median counts)",
        budget=80,
        timeout=170,
    )
    return emit_or_run(p, emit, run)


if __name__ == "__main__":
    sys.exit(main())
