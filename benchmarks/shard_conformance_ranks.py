"""The Gloo-rank side of benchmarks/shard_conformance.py: ``run_jobs`` launches this file on
``world`` ranks; each rank (``python shard_conformance_ranks.py JOBS.pkl``) runs every job's
hir program on its inputs and prints ``VERDICT key ok|wrong: ...`` against the job's
reference (global outputs it shards, or per-rank outputs of the SPMD reference)."""

import os
import pickle
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # shard_conformance beside this script


def run_jobs(jobs: list, world: int) -> dict:
    """Run the jobs of one world size on ``world`` Gloo ranks; {case key: "ok" or failure}."""
    from hir.tools.launch import launch

    mine = [j for j in jobs if j[1] == world]
    if not mine:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jobs.pkl")
        with open(path, "wb") as f:
            pickle.dump(
                [(key, text, inputs, reference, per_rank) for key, _, text, inputs, reference, per_rank in mine], f
            )
        result = launch(world, [sys.executable, __file__, path], timeout_s=600, env=dict(os.environ))
    verdicts: dict = {key: None for key, *_ in mine}
    for rank in result.ranks:
        for line in rank.stdout.splitlines():
            if line.startswith("VERDICT "):
                _, key, verdict = line.split(" ", 2)
                if verdict != "ok" or verdicts[key] is None:
                    verdicts[key] = verdicts[key] if verdicts[key] not in (None, "ok") else verdict
    return {key: verdict or "wrong: no verdict from the ranks" for key, verdict in verdicts.items()}


def worker(path: str) -> int:
    """One rank: run every job, print ``VERDICT key ok|wrong: ...``."""
    import torch
    import torch.distributed as dist

    import hir
    from hir.dialect import sharding_of
    from hir.interpreter.inputs import shard
    from shard_conformance import entry

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    with open(path, "rb") as f:
        jobs = pickle.load(f)
    for key, text, inputs, reference, per_rank in jobs:
        try:
            module = hir.parse(text, f"{key}.mlir")
            fn = entry(module)
            arg_types = [a.type for a in fn.regions[0].blocks[0].arguments]
            locals_ = inputs[rank] if per_rank else [shard(x, sharding_of(t), rank) for x, t in zip(inputs, arg_types)]
            outputs = hir.run(module, locals_, device="cpu")
            results = [v.type for v in list(fn.regions[0].blocks[0].operations)[-1].operands]
            bad = []
            wants = (
                reference[rank] if per_rank else [shard(w, sharding_of(t), rank) for w, t in zip(reference, results)]
            )
            for i, (got, want) in enumerate(zip(outputs, wants)):
                if isinstance(want, int) or isinstance(got, int):
                    same = int(got) == int(want)
                else:  # a partial sum's local value carries a unit device axis
                    same = got.numel() == want.numel() and torch.allclose(
                        got.reshape(want.shape).double(), want.double(), rtol=1e-4, atol=1e-4
                    )
                if not same:
                    bad.append(f"output {i} differs on rank {rank}")
            verdict = "ok" if not bad else "wrong: " + "; ".join(bad)
        except Exception as err:  # noqa: BLE001
            verdict = f"wrong: {type(err).__name__} on rank {rank}: {str(err).splitlines()[0][:120]}"
        print(f"VERDICT {key} {verdict}", flush=True)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1]))
