# The Megatron MLP for hir-import on a 2-device mesh: fc1 column-parallel, GELU, fc2
# row-parallel. HIR_SP=1 gives the sequence-parallel form (tokens split on the mesh).
import os

import torch
from torch.distributed.tensor import Replicate, Shard

torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(64, 16))
example_args = (torch.randn(8, 16),)
mesh = [0, 1]
placements = {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1), "2.bias": Replicate()}
if os.environ.get("HIR_SP") == "1":
    placements.update({"input0": Shard(0), "output0": Shard(0)})
