# A pre-norm transformer block for hir-import on a 2-device mesh with tensor-parallel heads
# and MLP (q/k/v and fc1 column-parallel, proj and fc2 row-parallel); see
# test/python/test_from_torch_block.py, which runs it on 1, 2 and 4 ranks.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

import torch

from test_from_torch_block import block, tp_placements

module = block()
example_args = (torch.randn(2, 8, 16),)
mesh = [0, 1]
placements = tp_placements()
