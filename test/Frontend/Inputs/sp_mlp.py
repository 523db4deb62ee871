# A [B, S, D] norm + MLP block with sequence parallelism on 2 devices, as
# torch.distributed.tensor.parallel writes it: the norm (LayerNorm, or RMSNorm with
# HIR_NORM=rms) runs on the sequence shards (SequenceParallel), fc1 column-parallel, fc2
# row-parallel back onto the sequence shards; input and output split along S (dim 1).
import os

import torch
from torch.distributed.tensor import Shard


class NormMLP(torch.nn.Module):
    def __init__(self, d: int = 16, hidden: int = 32, rms: bool = False) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(d) if rms else torch.nn.LayerNorm(d)
        self.fc1, self.fc2 = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


def norm_mlp(rms: bool = False) -> NormMLP:
    torch.manual_seed(0)
    return NormMLP(rms=rms).eval()


def sp_placements() -> dict:
    from torch.distributed.tensor import Replicate

    return {
        "fc1.weight": Shard(0),
        "fc1.bias": Shard(0),
        "fc2.weight": Shard(1),
        "fc2.bias": Replicate(),
        "input0": Shard(1),
        "output0": Shard(1),
    }


module = norm_mlp(rms=os.environ.get("HIR_NORM") == "rms")
example_args = (torch.randn(2, 8, 16),)
mesh = [0, 1]
placements = sp_placements()
