"""The rows of ``benchmarks/train.py`` (also built by ``train_memory.py``, ``profile_train.py``
and ``train_parallel.py``): the Llama configs, the seed-0 weights and batch every row trains
on, each row's step, and the measurement of a row's first steps (time to the first loss and
peak memory) in the process that calls it.
"""

import argparse
import copy
import gc
import time
from collections.abc import Callable

import torch

FULL = dict(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)
TINY = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    tie_word_embeddings=False,
)
ROWS = ["eager", "torch.compile", "hir eager", "hir default", "hir default (whole region)"]


def workload(args: argparse.Namespace, layers: int | None = None) -> tuple:
    """(config, weights on the CPU, (ids, labels) on ``args.device``, device sync) for
    ``args.tiny``, ``args.batch`` and ``args.seq`` (None: the config's defaults, 4 x 2048 or
    2 x 32 tiny): the same seed-0 weights and batch in every process."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**{**(TINY if args.tiny else FULL), **({"num_hidden_layers": layers} if layers else {})})
    batch_size, seq = args.batch or (2 if args.tiny else 4), args.seq or (32 if args.tiny else 2048)
    torch.manual_seed(0)
    base = LlamaForCausalLM(config)  # on the CPU: each row copies it to the device
    ids = torch.randint(0, config.vocab_size, (batch_size, seq), generator=torch.Generator().manual_seed(1))
    ids = ids.to(args.device)
    sync = (lambda: torch.cuda.synchronize(args.device)) if args.device.startswith("cuda") else (lambda: None)
    return config, base, (ids, ids.clone()), sync


def loss_fn_for(device: str) -> Callable:
    kind = "cuda" if device.startswith("cuda") else "cpu"

    def loss_fn(model, ids, labels):
        with torch.autocast(kind, dtype=torch.bfloat16):
            return model(ids, labels=labels).loss

    return loss_fn


def make_optimizer(model: torch.nn.Module, device: str, fused: bool = False) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=fused or device.startswith("cuda"))


def build(row: str, model: torch.nn.Module, args: argparse.Namespace, batch: tuple) -> Callable[[], torch.Tensor]:
    """The row's step: a callable running one training step on ``batch``, returning the loss."""
    import hir

    loss_fn = loss_fn_for(args.device)
    opt = make_optimizer(model, args.device, getattr(args, "fused", False))
    if row == "eager":

        def step():
            loss = loss_fn(model, *batch)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()

        return step
    if row == "torch.compile":
        compiled = torch.compile(model)
        opt_step = torch.compile(opt.step)

        def step():
            loss = loss_fn(compiled, *batch)
            loss.backward()
            opt_step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()

        return step
    options = {
        "hir eager": {"graph": False, "compile_kernels": False},
        "hir default (whole region)": {"regional": False},
    }.get(row, {})
    train = hir.train_step(model, opt, loss_fn, batch, **options)

    def step():
        return train(*batch)

    step.hir_step = train  # (benchmarks/profile_train.py reads its programs)
    return step


def memory(device: str) -> tuple[Callable[[], None], Callable[[], tuple[int, int]], Callable[[], tuple[int, int]]]:
    """(reset the peaks, bytes (requested, allocated) now, peak bytes (requested, allocated))
    on ``device`` (zeros on the CPU)."""
    if device.startswith("cuda"):

        def stats(kind: str) -> tuple[int, int]:
            s = torch.cuda.memory_stats(device)
            return s[f"requested_bytes.all.{kind}"], s[f"allocated_bytes.all.{kind}"]

        return torch.cuda.reset_peak_memory_stats, lambda: stats("current"), lambda: stats("peak")
    return (lambda: None), (lambda: (0, 0)), (lambda: (0, 0))


def prepare(row: str, base: torch.nn.Module, args: argparse.Namespace, batch: tuple, sync) -> dict:
    """Build the row on its own copy of the weights, run its first steps; what it measured
    (``first_s``, ``first_loss``, ``peak_gib``, ``alloc_peak_gib``) and its ``step``."""
    reset, allocated, peak = memory(args.device)
    gc.collect()  # the rows before this one leave no garbage that this row's compile would free
    sync()
    reset()
    before = allocated()
    model = copy.deepcopy(base).to(args.device)
    sync()
    start = time.perf_counter()
    step = build(row, model, args, batch)
    first_loss = step().item()
    first = time.perf_counter() - start
    for _ in range(2):
        step()
    sync()
    (requested, blocks), (requested_before, blocks_before) = peak(), before
    return {
        "step": step,
        "first_s": first,
        "first_loss": first_loss,
        "peak_gib": (requested - requested_before) / 2**30,
        "alloc_peak_gib": (blocks - blocks_before) / 2**30,
    }


def failure(err: BaseException) -> str:
    """A row's failure in one line of the table."""
    return f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"


def flops_per_step(config, params: int, tokens: int, seq: int) -> float:
    return 6.0 * params * tokens + 12.0 * config.num_hidden_layers * config.hidden_size * seq * tokens
