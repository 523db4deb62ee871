# A LLaMA-style decoder block as a plain nn.Module: RMSNorm, rotary embeddings by
# slice/cat, grouped-query attention (k/v heads repeated by expand + reshape) through
# scaled_dot_product_attention, and a SwiGLU MLP. `llama_block()` builds it; as an
# hir-import input it is tensor-parallel on 2 devices (HIR_TP=parallelize_module reads the
# plan of a module parallelized with torch.distributed.tensor.parallel instead).
import torch
import torch.nn.functional as F


class LlamaBlock(torch.nn.Module):
    def __init__(self, d: int = 32, heads: int = 8, kv_heads: int = 4, hidden: int = 64, seq: int = 8) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.norm1, self.norm2 = torch.nn.RMSNorm(d, eps=1e-6), torch.nn.RMSNorm(d, eps=1e-6)
        self.q = torch.nn.Linear(d, heads * self.head_dim, bias=False)
        self.k = torch.nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v = torch.nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(heads * self.head_dim, d, bias=False)
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv)
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def rotate(self, x):
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * self.cos + self.rotate(q) * self.sin
        k = k * self.cos + self.rotate(k) * self.sin
        groups = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, s, -1))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def llama_block(**sizes) -> LlamaBlock:
    torch.manual_seed(0)
    return LlamaBlock(**sizes).eval()


def tp_plan() -> dict:
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return {n: ColwiseParallel() for n in ("q", "k", "v", "gate", "up")} | {n: RowwiseParallel() for n in ("o", "down")}


def tp_placements() -> dict:
    from torch.distributed.tensor import Shard

    return {f"{n}.weight": Shard(0) for n in ("q", "k", "v", "gate", "up")} | {
        f"{n}.weight": Shard(1) for n in ("o", "down")
    }


module = llama_block()
example_args = (torch.randn(2, 8, 32),)
mesh = [0, 1]
placements = tp_placements()


def sp_placements() -> dict:
    """The sequence-parallel form: tp_placements() with the tokens (dim 1) split in and out."""
    from torch.distributed.tensor import Shard

    return tp_placements() | {"input0": Shard(1), "output0": Shard(1)}


sequence_placements = sp_placements()  # hir-import --placements sequence_placements
