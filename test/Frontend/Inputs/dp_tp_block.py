# The transformer block of tp_block.py on a 2x2 mesh: batch data-parallel over mesh axis 0,
# heads and MLP tensor-parallel over mesh axis 1 (4 ranks).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch

from test_from_torch_block import block, dp_tp_placements

module = block()
example_args = (torch.randn(2, 8, 16),)
mesh = [[0, 1], [2, 3]]
placements = dp_tp_placements()
