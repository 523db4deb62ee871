# An MLP for hir-import with a dynamic token count: `dynamic` marks dim 0 of the input.
import torch

torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(64, 16))
example_args = (torch.randn(8, 16),)
dynamic = {"input0": {0: "tokens"}}
