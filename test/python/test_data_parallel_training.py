"""Data-parallel training on Gloo ranks: ``hir.train_step(..., mesh=, data_parallel=)`` with
torch's AdamW, and a step module (loss, ``torch.autograd.grad``, the update in place) imported
with :mod:`hir.frontend.data_parallel`'s placements: the batch split on dim 0, the
parameters replicated (``"replicate"``) or split on dim 0 and gathered (``"fully_shard"``),
lowered to collectives (and scheduled by hir-schedule-data-parallel's options) and run on
each rank for 10 steps of AdamW (and SGD); every step's loss and the final (gathered)
parameters equal single-process eager training on the global batch. Tiny random Llama and
GPT-2 (no download).

The test launches this file once per rank; ``python test_data_parallel_training.py
ARCH:MODE:OPTIMIZER[:SCHEDULE]... | train_step:MODE`` is the per-rank worker.
"""

import os
import re
import sys

import pytest

from data_parallel_util import BETAS, DECAY, EPS, model_for, step_module
from multirank_util import launch_workers, run_gloo_cases
from training_util import steps_equal_eager

STEPS = 10
SCHEDULED: dict = {}  # "arch:mode:optimizer" -> {schedule: the losses of its steps}
# hir-schedule-data-parallel's option matrix (the plain schedule: none); a case's schedule
# name ending in "+keep": fully sharded with reshard_after_forward=False (each parameter
# gathered once, kept for the backward), else gathered again for the backward. Buckets of
# 8 KiB with prefetch: several buckets, each issued ahead (one bucket of every parameter
# would leave nothing to prefetch)
SCHEDULES = {
    "plain": {},
    "defer": {"defer_waits": True},
    "prefetch": {"prefetch": True},
    "both": {"defer_waits": True, "prefetch": True},
    "bucket": {"bucket_bytes": 4096},
    "early": {"optimizer_in_backward": True},
    "bucket+prefetch": {"defer_waits": True, "prefetch": True, "bucket_bytes": 8192},
    "all": {"defer_waits": True, "prefetch": True, "bucket_bytes": 8192, "optimizer_in_backward": True},
}
# AdamW's usual rate: at 0.1 its first steps move every weight by about lr whatever its gradient, so
# rounding apart flips updates
LR = {
    "sgd": 0.1,
    "adamw": 1e-3,
}


def run_train_step_case(mode: str, rank: int, world: int, schedule: str = "", keep: str = "") -> str:
    """``hir.train_step(..., mesh=, data_parallel=mode)`` with torch's own AdamW (lowered with
    the ``schedule`` of :data:`SCHEDULES` when named; ``keep``: ``reshard_after_forward=False``):
    each step's loss, and the model and optimizer state (whole on every rank after each
    call) equal eager training on the global batch. Fully sharded, each parameter is
    gathered twice (forward, backward) unless kept: once."""
    import torch
    import torch.distributed as dist

    import hir
    from hir.passes.training.schedule import data_parallel_pipeline

    model, reference = model_for("llama"), model_for("llama")
    optimizer, eager = (torch.optim.AdamW(m.parameters(), lr=LR["adamw"]) for m in (model, reference))
    torch.manual_seed(1)
    batches = [torch.randint(0, 64, (2 * world, 8)) for _ in range(STEPS)]

    def loss_fn(m, ids, labels):
        return m(ids, labels=labels).loss

    options = {"schedule": SCHEDULES[schedule]} if schedule else {}
    if keep:
        options["reshard_after_forward"] = False
    step = hir.train_step(
        model, optimizer, loss_fn, (batches[0], batches[0]), mesh=list(range(world)), data_parallel=mode, **options
    )
    if mode == "fully_shard" and world > 1:
        program = next(iter(step.programs.values()))  # lowered with the schedule by train_step when it has one
        lowered = (
            program.module
            if program.lowered
            else hir.lower(hir.parse(str(program.module), "step.mlir"), data_parallel_pipeline())
        )
        gathers, parameters = str(lowered).count('"hir.allgather"'), len(list(model.parameters()))
        # the embedding's backward reads only its indices: gathered once either way; in
        # buckets, fewer gathers
        unbucketed = parameters if keep else 2 * parameters - 1
        if gathers >= unbucketed if SCHEDULES[schedule or "plain"].get("bucket_bytes") else gathers != unbucketed:
            return (
                f"train_step {mode}: {gathers} all-gathers of {parameters} "
                f"parameters (reshard_after_forward={not keep})\n{lowered}"
            )
    problem = steps_equal_eager(
        step,
        loss_fn,
        [(ids, ids) for ids in batches],
        model,
        optimizer,
        reference,
        eager,
        f"train_step {mode}",
        moment="exp_avg_sq",
    )
    if problem:
        return problem
    dist.barrier()
    return ""


def run_autocast_case(rank: int, world: int) -> str:
    """A fully sharded step of an MLP with ``torch.autocast("cpu", dtype=torch.bfloat16)`` in
    its loss: each step equals eager autocast training on the global batch within bf16's
    precision, and the backward makes the bf16 copy of the second layer's weight again from
    a second gather of its shard: no bf16 copy of a parameter is live across that gather
    (the forward's was freed), and the parameters are gathered 4 + 1 times."""
    import torch

    import hir
    from hir.passes.training.schedule import data_parallel_pipeline

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 6))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 6))
    reference.load_state_dict(model.state_dict())
    optimizer, eager = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference))

    def loss_fn(m, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = m(x)
        return torch.nn.functional.cross_entropy(logits.float(), y)

    torch.manual_seed(1)
    batches = [(torch.randn(2 * world, 8), torch.randint(0, 6, (2 * world,))) for _ in range(STEPS)]
    step = hir.train_step(model, optimizer, loss_fn, batches[0], mesh=list(range(world)), data_parallel="fully_shard")
    imported = str(next(iter(step.programs.values())).module)
    problem = steps_equal_eager(
        step,
        loss_fn,
        batches,
        model,
        optimizer,
        reference,
        eager,
        "autocast fully_shard",
        tol={"rtol": 2e-2, "atol": 2e-2},
    )
    if problem:
        return problem
    lowered = str(
        hir.lower(
            hir.parse(imported, "step.mlir"),
            data_parallel_pipeline().split(",hir-stream-lowering")[0] + ",hir-insert-deallocations",
        )
    )
    main = lowered[lowered.index("func.func @main") :]
    main = main[: main.index("\n  }\n")].splitlines()
    gathers = [i for i, line in enumerate(main) if '"hir.allgather"' in line]
    if len(gathers) != 5:
        return f"autocast fully_shard: {len(gathers)} all-gathers, want 4 and one again for the backward\n{lowered}"
    copies = [p.shape for p in model.parameters() if p.dim() == 2]
    kept = []
    for i, line in enumerate(main):  # a replicated bf16 buffer of a weight's shape (or its transpose)
        found = re.match(
            r"\s*(%\w+) = memref.alloc\(\) : memref<(\d+)x(\d+)xbf16, #hir.shard<array<i64: [\d, ]+>, -1", line
        )
        if found and any((int(found[2]), int(found[3])) in (tuple(s), tuple(s)[::-1]) for s in copies):
            end = next((k for k in range(i, len(main)) if f"memref.dealloc {found[1]} " in main[k]), len(main))
            if i < gathers[-1] < end:
                kept.append(line.strip())
    if kept or not any("xbf16" in line for line in main[gathers[-1] :]):
        return f"autocast fully_shard: bf16 copies of parameters kept across the backward's gather: {kept}\n{lowered}"
    return ""


def run_case(case: str, rank: int, world: int) -> str:
    if case.startswith("train_step:"):
        return run_train_step_case(*case.split(":")[1:2], rank, world, *case.split(":")[2:])
    if case == "autocast":
        return run_autocast_case(rank, world)
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import Replicate

    import hir
    from hir.frontend import data_parallel
    from hir.passes.training.schedule import data_parallel_pipeline

    arch, mode, optimizer_name, *schedule = case.split(":")
    keep = bool(schedule) and schedule[0].endswith("+keep")
    options = SCHEDULES[schedule[0].removesuffix("+keep")] if schedule else {}
    model, reference = model_for(arch), model_for(arch)
    torch.manual_seed(1)
    batches = [torch.randint(0, 64, (2 * world, 8)) for _ in range(STEPS)]
    module = step_module(model, mode, optimizer_name, reshard_after_forward=not keep)
    state = {f"model.{n}": p for n, p in model.named_parameters()} | {
        n: b for n, b in module.named_buffers() if n.startswith("exp_avg")
    }
    scalars = {f"input{i}": Replicate() for i in (2, 3, 4)}
    placements = data_parallel.placements(mode, state, batches[0:1] * 2, world, sharded=list(state)) | scalars
    program = hir.from_torch(
        module,
        (batches[0], batches[0], *scalars(LR[optimizer_name], 1)),
        mesh=list(range(world)),
        placements=placements,
        keep_composites=False,
        replicate_fallback=False,
    )
    text = str(program.module)
    lowered = hir.parse(text, f"{case}.mlir")
    hir.lower(lowered, "hir-convert-to-communication{backend=gloo}")
    counts = {op: str(lowered).count(f'"hir.{op}"') for op in ("allgather", "allreduce", "reduce_scatter")}
    # fully_shard: each parameter gathered, each gradient reduce-scattered; replicate: each
    # gradient allreduced; and the loss's two sums (over the rows, and their count). GPT-2's
    # tied embedding sums two partial gradients (its lookup's, the head's), each allreduced
    # whole (and a second gradient of it in fully_shard). Resharded after the forward, the
    # parameters the backward reads (Llama: all but the embedding) are gathered again
    tied = 1 if arch == "gpt2" else 0
    parameters = sum(1 for _ in model.parameters())
    want = (
        {"allgather": parameters, "reduce_scatter": parameters - 2 * tied}
        if mode == "fully_shard"
        else {"allgather": 0, "reduce_scatter": 0, "allreduce": parameters + 2 + tied}
    )
    if mode == "fully_shard" and not keep:
        want["allgather"] = 2 * parameters - 1 if arch == "llama" else counts["allgather"]
        if counts["allgather"] <= parameters:
            return (
                f"{case}: {counts['allgather']} all-gathers of {parameters} "
                f"parameters: none again for the backward\n{text}"
            )
    if world > 1 and any(counts[op] != n for op, n in want.items()):
        return f"{case}: collectives {counts}, want {want}\n{text}"
    if schedule:  # hir-schedule-data-parallel's options; the losses equal the plain schedule's (bitwise)
        lowered = program.lower(pipeline=data_parallel_pipeline(**options))
        if (
            options.get("defer_waits")
            and world > 1
            and not re.search(r'-> !hir.work\n(?!\s*"hir.wait").*\n', str(lowered))
        ):
            return f"{case}: no wait deferred past another op\n{lowered}"
        # Llama's weight gradients are reduce-scattered transposed and read back (a transpose
        # in a kernel segment with the backward's next ops) before the next one exists: no
        # bucket of them forms; GPT-2's (Conv1D: no transpose) do
        bucketed = (
            ("allreduce",)
            if mode == "replicate"
            else ("allgather", "reduce_scatter")
            if arch == "gpt2"
            else ("allgather",)
        )
        if (
            options.get("bucket_bytes")
            and world > 1
            and any(str(lowered).count(f'"hir.{op}"') >= counts[op] for op in bucketed)
        ):
            return f"{case}: no {' or '.join(bucketed)} bucketed\n{lowered}"
        if (
            options.get("prefetch")
            and mode == "fully_shard"
            and world > 1
            and not re.search(r'"hir.synchronize".*\n.*"hir.allgather".*\n.*"hir.set_current_stream"', str(lowered))
        ):
            return f"{case}: no all-gather issued on the comm stream\n{lowered}"
    step = program.compile(program.state(module), device="cpu")
    optimizer = (
        torch.optim.SGD(reference.parameters(), lr=LR[optimizer_name])
        if optimizer_name == "sgd"
        else torch.optim.AdamW(reference.parameters(), lr=LR[optimizer_name], betas=BETAS, eps=EPS, weight_decay=DECAY)
    )
    seen = torch.zeros(STEPS)
    for i, ids in enumerate(batches):
        loss = step(ids, ids, *scalars(LR[optimizer_name], i + 1))
        seen[i] = loss
        optimizer.zero_grad()
        want = reference(ids, labels=ids).loss
        want.backward()
        optimizer.step()
        try:
            torch.testing.assert_close(loss, want.detach(), rtol=1e-5, atol=1e-6)
        except AssertionError as err:
            return f"{case}: step {i}: loss {loss.item()} vs eager {want.item()}: {err}"
    if schedule:
        losses = SCHEDULED.setdefault(case.rpartition(":")[0], {})
        losses[schedule[0]] = seen
        # bit for bit, but for buckets past 2 ranks: Gloo's ring all-reduce sums an element in
        # an order set by where it sits in the buffer, and a bucket moves it
        exact = world == 2 or not options.get("bucket_bytes")
        if "plain" in losses and not (
            torch.equal(losses["plain"], seen) if exact else torch.allclose(losses["plain"], seen, rtol=1e-5, atol=1e-6)
        ):
            return f"{case}: losses {seen.tolist()} differ from the plain schedule's {losses['plain'].tolist()}"
    for name, want in reference.named_parameters():
        held = step.state[f"model.{name}"]
        if mode == "fully_shard":
            parts = [torch.empty_like(held) for _ in range(world)]
            dist.all_gather(parts, held.contiguous())
            held = torch.cat(parts)
        try:
            torch.testing.assert_close(held, want.detach(), rtol=1e-5, atol=1e-6)
        except AssertionError as err:
            return f"{case}: final {name}: {err}"
    dist.barrier()
    return ""


@pytest.mark.parametrize(
    "world, cases",
    [
        (2, ["train_step:fully_shard:all", "autocast"]),
        pytest.param(
            2,
            [
                "train_step:fully_shard",
                "train_step:fully_shard::keep",
                "train_step:fully_shard:all:keep",
                "train_step:replicate",
                "llama:fully_shard:adamw",
                "llama:replicate:adamw",
                "gpt2:replicate:adamw",
                "gpt2:fully_shard:adamw",
                "llama:fully_shard:sgd",
                "gpt2:replicate:sgd",
            ],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            2,
            [
                f"llama:fully_shard:adamw:{s}"
                for s in (
                    "plain",
                    "defer",
                    "prefetch",
                    "both",
                    "early",
                    "all",
                    "plain+keep",
                    "all+keep",
                    "bucket",
                    "bucket+prefetch",
                    "bucket+keep",
                )
            ]
            + [f"gpt2:replicate:adamw:{s}" for s in ("plain", "defer", "bucket", "early", "all")],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            2,
            [
                f"gpt2:fully_shard:adamw:{s}"
                for s in ("plain", "bucket", "bucket+prefetch", "all", "plain+keep", "bucket+keep")
            ],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            4,
            [
                f"{arch}:{mode}:adamw:{s}"
                for arch, mode in (("gpt2", "replicate"), ("llama", "fully_shard"), ("gpt2", "fully_shard"))
                for s in ("plain", "all")
            ],
            marks=pytest.mark.slow,
        ),
        pytest.param(
            4,
            ["llama:replicate:adamw", "llama:fully_shard:adamw", "gpt2:replicate:adamw", "gpt2:fully_shard:adamw"],
            marks=pytest.mark.slow,
        ),
    ],
)
def test_data_parallel_steps_equal_eager_on_the_global_batch(world, cases):
    checked, report = launch_workers(world, __file__, *cases, timeout_s=900, env=dict(os.environ))
    assert checked == len(cases) * world, report


if __name__ == "__main__":
    sys.exit(run_gloo_cases(sys.argv[1:], run_case))
