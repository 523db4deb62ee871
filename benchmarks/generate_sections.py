"""The sections of ``benchmarks/generate.py`` beside its step tables: the first call in
fresh processes, ``hir.generate`` against HF ``generate``, and the documented decode loop
(see generate.py's docstring)."""

import argparse
import json
import os
import subprocess
import sys
import time

import torch

from decode_setup import GENERATE_ENGINES, Clock, generate_call, inputs, make_model, sync_of
from timing import best

GENERATE_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generate.py")


FIRST_ROWS = {"hir": "hir.compile", "torch": "torch.compile reduce-overhead", **GENERATE_ENGINES}


def first_rows(value: str) -> list:
    """``--first-rows``: the rows of the first section, each a key of :data:`FIRST_ROWS`."""
    rows = [row for row in value.split(",") if row]
    if set(rows) - set(FIRST_ROWS):
        raise argparse.ArgumentTypeError(
            f"unknown {', '.join(sorted(set(rows) - set(FIRST_ROWS)))}; choose from {', '.join(FIRST_ROWS)}"
        )
    return rows


def first_call(args: argparse.Namespace, engine: str) -> dict:
    """In this (fresh) process: the model's first calls through ``engine``: the decode step's
    first three (``hir.compile`` / ``torch.compile``), or the first two ``generate`` calls."""
    from hir.frontend.hf_decode import StaticCacheStep

    model = make_model(args)
    if engine in GENERATE_ENGINES:
        return first_generate_calls(args, engine, model)
    step = StaticCacheStep(model, 1, args.cache)
    ids, pos = inputs(args, 1, 1, args.cache // 2)
    sync = sync_of(args.device)
    sync()
    start = time.perf_counter()
    with torch.no_grad():
        if engine == "hir":
            import hir

            fn = hir.compile(step, (ids, pos), device=args.device)
        else:
            fn = torch.compile(step, mode="reduce-overhead")
        fn(ids, pos)
        sync()
        first = time.perf_counter() - start
        fn(ids, pos)
        fn(ids, pos)
        sync()
    return {"first_result_s": first, "replaying_s": time.perf_counter() - start}


def first_generate_calls(args: argparse.Namespace, engine: str, model) -> dict:
    """``generate`` (``engine``: hir's or HF's, :func:`decode_setup.generate_call`) of
    ``--new`` tokens after a ``--prompt``-token prompt, batch 1: the first call, then a second
    one of the same prompt length (HF's replays its compiled step; hir's compiles its
    prefill program for that length)."""
    prompt, _ = inputs(args, 1, args.prompt, 0)
    call = generate_call(engine, model, prompt, args.new)
    sync = sync_of(args.device)
    sync()
    start = time.perf_counter()
    with torch.no_grad():
        call()
        sync()
        first = time.perf_counter() - start
        call()
        sync()
    return {"first_result_s": first, "replaying_s": time.perf_counter() - start}


def first_section(args: argparse.Namespace, clock: Clock, second: bool) -> list:
    """First processes (empty caches) or, with ``second``, second processes on their caches."""
    rows = []
    for engine in args.first_rows:
        label = f"{FIRST_ROWS[engine]} {'second process' if second else 'first process'}"
        if (second or engine in GENERATE_ENGINES) and not clock.allows(label, 60):
            continue
        caches = os.path.join(args.scratch, engine)
        env = {
            **os.environ,
            "HIR_CACHE_DIR": os.path.join(caches, "hir"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor"),
        }
        command = [
            sys.executable,
            GENERATE_PY,
            "--child",
            engine,
            "--device",
            args.device,
            "--cache",
            str(args.cache),
            "--arch",
            args.arch,
            "--prompt",
            str(args.prompt),
            "--new",
            str(args.new),
        ] + (["--small"] if args.small else [])
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  {label} FAILED:\n{done.stderr[-3000:]}", flush=True)
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append({"row": label, **result})
        print(
            f"  {label}: first result {result['first_result_s']:.1f} s, replaying {result['replaying_s']:.1f} s",
            flush=True,
        )
    which = "on the first processes' caches" if second else "fresh process, empty caches"
    print(
        f"\n| first call, decode batch 1 ({which}) | to the first result (s) | until graphs replay (s) "
        "|\n|---|---:|---:|"
    )
    for row in rows:
        print(f"| {row['row']} | {row['first_result_s']:.1f} | {row['replaying_s']:.1f} |")
    if any(engine in GENERATE_ENGINES for engine in args.first_rows):
        print(
            f"generate rows: {args.prompt}-token prompt, {args.new} new tokens, greedy; 'until graphs replay': through "
            "a second call of the same prompt length"
        )
    return rows


def generate_section(model, args: argparse.Namespace, clock: Clock, batches: list) -> list:
    sync = sync_of(args.device)
    rows = []
    for batch in batches:
        if not clock.allows(f"generate batch {batch}", 120):
            continue
        try:
            rows.append(generate_batch(model, args, batch, sync))
        except Exception as err:  # noqa: BLE001 - reported, the run goes on
            print(f"  generate batch {batch} FAILED: {type(err).__name__}: {str(err)[:500]}", flush=True)
    print(
        f"\n| generate, {args.prompt}-token prompt, {args.new} new tokens | hir.generate tok/s | HF generate (static "
        "cache) tok/s | hir / HF | first call: hir, HF (2 calls) (s) | tokens agreeing "
        "|\n|---|---:|---:|---:|---:|---:|"
    )
    for row in rows:
        print(
            f"| batch {row['batch']} | {row['hir_tokens_per_s']:.0f} | {row['hf_tokens_per_s']:.0f} | "
            f"{row['hir_tokens_per_s'] / row['hf_tokens_per_s']:.2f}x | {row['hir_first_s']:.1f}, "
            f"{row['hf_first_two_s']:.1f} | {row['agree']:.0%} |"
        )
    if args.generate_kernels:
        print(
            "\n| hir.generate tok/s by HIR_DECODE_KERNELS, timed in turns | "
            + " | ".join(["default", *args.generate_kernels])
            + " |\n|---|"
            + "---:|" * (1 + len(args.generate_kernels))
        )
        for row in rows:
            speeds = [f"{v:.0f} ({v / row['by_kernels'][0]:.2f}x)" for v in row["by_kernels"]]
            print(f"| batch {row['batch']} | " + " | ".join(speeds) + " |")
    return rows


def generate_by_kernels(model, ids, options: dict, args: argparse.Namespace, batch: int, sync) -> list:
    """``hir.generate``'s tokens per second with ``HIR_DECODE_KERNELS`` unset, then set to each
    of ``--generate-kernels``, each with programs of its own (imported and planned under it:
    the model's cached generators are dropped in between), timed in turns."""
    import hir
    from hir.frontend import generators

    settings = [None, *args.generate_kernels]
    saved = os.environ.get("HIR_DECODE_KERNELS")
    calls = []
    for setting in settings:
        generators._GENERATORS.pop(model, None)
        _set_kernels(setting)
        hir.generate(model, ids, **options)  # its programs built, compiled and captured
        calls.append(generators._GENERATORS.pop(model))
    times = [float("inf")] * len(settings)
    try:
        for _ in range(args.generate_repeat):
            for i, (setting, cached) in enumerate(zip(settings, calls)):
                _set_kernels(setting)
                generators._GENERATORS[model] = cached
                times[i] = min(times[i], best(lambda: hir.generate(model, ids, **options), 1, 1, sync))
    finally:
        generators._GENERATORS.pop(model, None)
        _set_kernels(saved)
    return [batch * args.new / t for t in times]


def _set_kernels(value: str | None) -> None:
    if value is None:
        os.environ.pop("HIR_DECODE_KERNELS", None)
    else:
        os.environ["HIR_DECODE_KERNELS"] = value


def generate_batch(model, args: argparse.Namespace, batch: int, sync) -> dict:
    """One batch size's row of the generate table."""
    import hir

    ids, _ = inputs(args, batch, args.prompt, 0)
    options = dict(max_new_tokens=args.new, min_new_tokens=args.new, do_sample=False)
    start = time.perf_counter()
    ours = hir.generate(model, ids, **options)
    sync()
    hir_first = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        theirs = model.generate(ids, attention_mask=torch.ones_like(ids), cache_implementation="static", **options)
        model.generate(ids, attention_mask=torch.ones_like(ids), cache_implementation="static", **options)
    sync()
    hf_first = time.perf_counter() - start
    new = ours[:, args.prompt :] == theirs[:, args.prompt :]
    with torch.no_grad():
        t_hir = best(lambda: hir.generate(model, ids, **options), args.generate_repeat, 1, sync)
        t_hf = best(
            lambda: model.generate(ids, attention_mask=torch.ones_like(ids), cache_implementation="static", **options),
            args.generate_repeat,
            1,
            sync,
        )
    row = {
        "batch": batch,
        "hir_tokens_per_s": batch * args.new / t_hir,
        "hf_tokens_per_s": batch * args.new / t_hf,
        "hir_first_s": hir_first,
        "hf_first_two_s": hf_first,
        "agree": new.float().mean().item(),
    }
    if args.generate_kernels:
        row["by_kernels"] = generate_by_kernels(model, ids, options, args, batch, sync)
    print(
        f"  generate batch {batch}: hir {row['hir_tokens_per_s']:.0f} tok/s, HF {row['hf_tokens_per_s']:.0f} tok/s",
        flush=True,
    )
    return row


def loop_section(model, args: argparse.Namespace) -> dict:
    """The documented decode loop, per token (see the module docstring)."""
    import hir
    from hir.frontend.hf_decode import StaticCacheStep

    step = StaticCacheStep(model, 1, args.cache)
    decode = hir.from_torch(step, (torch.tensor([[1]], device=args.device), torch.tensor([0], device=args.device)))
    decode_fn = decode.compile(decode.state(step), device=args.device)
    tokens = args.new

    def loop(call) -> None:
        token = 1
        for position in range(tokens):
            logits = call(torch.tensor([[token]]), torch.tensor([position]))
            token = int(logits[0, -1].argmax())

    def hf_step(ids, pos):
        return step(ids.to(args.device), pos.to(args.device))

    prompt = torch.tensor([[1]], device=args.device)
    rows = {
        "hir: compiled decode program": lambda: loop(decode_fn),
        "HF eager: the same step (StaticCacheStep forward)": lambda: loop(hf_step),
        "HF generate (static cache)": lambda: model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=tokens,
            min_new_tokens=tokens,
            do_sample=False,
            cache_implementation="static",
        ),
    }
    sync = sync_of(args.device)
    with torch.no_grad():
        for fn in rows.values():
            fn()
        rounds = [[best(fn, 1, 1, sync) for fn in rows.values()] for _ in range(args.repeat)]
    per_token = {name: min(r[i] for r in rounds) / tokens * 1e3 for i, name in enumerate(rows)}
    reference = per_token["HF eager: the same step (StaticCacheStep forward)"]
    print(f"\n| decode loop, {tokens} tokens, batch 1 | ms per token | / HF eager |\n|---|---:|---:|")
    for name, ms in per_token.items():
        print(f"| {name} | {ms:.3f} | {ms / reference:.2f}x |")
    return per_token
