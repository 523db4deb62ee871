# Bad inputs for hir-import, picked by $HIR_CASE.
import os

import torch
from torch.distributed.tensor import Shard


class DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export cannot trace it
            return x
        return -x


case = os.environ["HIR_CASE"]
module = DataDependent() if case == "untraceable" else torch.nn.Linear(6, 4)
example_args = (torch.randn(3, 6),)
if case == "indivisible":
    mesh = [0, 1, 2, 3]
    placements = {"weight": Shard(1)}
if case == "unknown":
    mesh = [0, 1]
    placements = {"wieght": Shard(0)}
if case == "no-module":
    del module
