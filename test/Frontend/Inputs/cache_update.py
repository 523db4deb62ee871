# A step writing two state buffers in place with index_copy_ (a KV cache's update), for
# hir-import: ``cache``'s new value is read only inside the kernel segment that computes it,
# ``seen``'s also by a reduction after that segment.
import torch


class CacheStep(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.register_buffer("cache", torch.zeros(2, 8, 4))
        self.register_buffer("seen", torch.zeros(2, 8, 4))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        k = torch.tanh(self.proj(x))
        self.cache.index_copy_(1, pos, k)
        self.seen.index_copy_(1, pos, k)
        return (self.cache * 2.0).sum(1) + self.seen.sum(1)


torch.manual_seed(0)
module = CacheStep()
example_args = (torch.randn(2, 1, 4), torch.tensor([3]))
