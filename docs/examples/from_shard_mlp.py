"""The Megatron MLP from PyTorch to an hir host program through MLIR's shard dialect, run on
2 CPU processes (Gloo) and compared with PyTorch (docs/from-shard.md).

    python docs/examples/from_shard_mlp.py          # launches itself on 2 ranks
"""

import os
import sys

import torch
import torch.nn.functional as F

WORLD = 2


class MLP(torch.nn.Module):
    def forward(self, x, w1, w2):
        return F.gelu(x @ w1) @ w2


def build():
    """Import, annotate (tensor parallel: w1 column-split, w2 row-split), convert, lower."""
    from torch_mlir import fx

    import hir
    from hir.frontend.shard import add_grid, result, shard_value

    example = (torch.randn(8, 16), torch.randn(16, 64), torch.randn(64, 16))
    module = fx.export_and_import(MLP(), *example, output_type="linalg-on-tensors", func_name="mlp")
    with module.context:
        fn = add_grid(module, "tp", WORLD)
        x, w1, w2 = fn.regions[0].blocks[0].arguments
        shard_value(w1, "tp", [[], [0]])
        shard_value(w2, "tp", [[0]])
        shard_value(result(fn), "tp", [[]], for_users=True)
    hir.from_shard(module, backend="gloo")  # shard -> hir (program level)
    hir.lower(module, "hir-lower")  # hir's own lowering: streams, deallocations, ...
    return module


def rank_main() -> int:
    import hir
    from hir.interpreter.backends.process_groups import shutdown

    rank = int(os.environ["RANK"])
    module = build()
    if rank == 0:
        print(module)
    torch.manual_seed(1)
    x, w1, w2 = torch.randn(8, 16), torch.randn(16, 64), torch.randn(64, 16)
    mine = [x, w1.chunk(WORLD, 1)[rank], w2.chunk(WORLD, 0)[rank]]  # this rank's shards
    (y,) = hir.run(module, mine, device="cpu")
    ok = torch.allclose(y, MLP()(x, w1, w2), atol=1e-5)
    print(f"rank {rank}: output {tuple(y.shape)}, equal to PyTorch: {ok}")
    shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    if "RANK" in os.environ:
        sys.exit(rank_main())
    from hir.tools.launch import launch

    outcome = launch(WORLD, [sys.executable, __file__], timeout_s=300)
    for r in outcome.ranks:
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr if r.returncode else "")
    sys.exit(outcome.returncode)
