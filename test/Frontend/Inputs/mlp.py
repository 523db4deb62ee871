# An MLP for hir-import: Linear + GELU + Linear.
import torch

torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(64, 16))
example_args = (torch.randn(8, 16),)
