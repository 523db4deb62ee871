"""The four forms of test_p2p_matrix_gpu.py, each ``build(world, rank, device)`` -> (the
program, this rank's inputs, the float32 reference): AG+matmul and matmul+RS built with the
builder, the imported sequence-parallel MLP of ``Inputs/sp_mlp_<world>.mlir``, and the
tensor-parallel matmul+AR."""

from pathlib import Path

INPUTS = Path(__file__).parent / "Inputs"
# The MLP of Inputs/: tokens split over the mesh, fc1 column-parallel, fc2 row-parallel.
MLP = {"tokens": 512, "d_model": 128, "hidden": 512}
AG = {"M": 512, "K": 256, "N": 512}  # A [D, M/D, K] split on 0, B [K, N] split on N
RS = {"M": 512, "K": 512, "N": 256}  # A [D, D, M/D, K/D], B [1, D, K/D, N] split on axis 1
AR = {"M": 512, "K": 512, "N": 256}  # A [D, M, K/D], B [D, K/D, N] split on axis 0, the sum replicated


def _mlp_model():
    import torch

    torch.manual_seed(0)
    d, hidden = MLP["d_model"], MLP["hidden"]
    model = torch.nn.Sequential(
        torch.nn.Linear(d, hidden), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(hidden, d)
    )
    return model.to(torch.bfloat16).eval(), torch.randn(MLP["tokens"], d).to(torch.bfloat16)


def emit_sp_mlp(world: int) -> str:
    """The SP MLP imported for ``world`` ranks (weights as arguments, in state_dict order, then x)."""
    from torch.distributed.tensor import Replicate, Shard

    import hir

    model, x = _mlp_model()
    placements = {
        "0.weight": Shard(0),
        "0.bias": Shard(0),
        "2.weight": Shard(1),
        "2.bias": Replicate(),
        "input0": Shard(0),
        "output0": Shard(0),
    }
    return str(hir.from_torch(model, (x,), mesh=list(range(world)), placements=placements).module)


# ----- the forms: (module builder, global inputs, float32 reference of this rank's output) ---


def _ag_matmul(world: int, rank: int, dev):
    import torch

    from hir.builder import Builder, Shard

    D, (M, K, N) = world, AG.values()
    mesh = list(range(D))

    def build():
        b = Builder()
        a = b.input([D, M // D, K], "bf16", sharding=Shard(mesh, 0))
        w = b.input([K, N], "bf16", sharding=Shard(mesh, 1))
        a_full = b.set(a, sharding=Shard(mesh), stream_axis=0)
        b.output(b.matmul(a_full, w, sharding=Shard(mesh, 2), stream_axis=0))
        return b.finish()

    gen = torch.Generator().manual_seed(1)
    a, w = torch.randn(D, M // D, K, generator=gen), torch.randn(K, N, generator=gen) / K**0.5
    reference = (a @ w).chunk(D, 2)[rank]
    return build, [a.bfloat16(), w.bfloat16()], reference.to(dev)


def _matmul_rs(world: int, rank: int, dev):
    import torch

    from hir.builder import Builder, Shard

    D, (M, K, N) = world, RS.values()
    mesh = list(range(D))

    def build():
        b = Builder()
        a = b.input([D, D, M // D, K // D], "bf16", sharding=Shard(mesh, 1))
        w = b.input([1, D, K // D, N], "bf16", sharding=Shard(mesh, 1))
        partial = b.matmul(a, w, sharding=Shard(mesh, 1), stream_axis=0)
        b.output(b.sum(partial, [1], sharding=Shard(mesh, 0), stream_axis=0))
        return b.finish()

    gen = torch.Generator().manual_seed(2)
    a, w = torch.randn(D, D, M // D, K // D, generator=gen), torch.randn(1, D, K // D, N, generator=gen) / K**0.5
    reference = (a @ w).sum(1).chunk(D, 0)[rank]
    return build, [a.bfloat16(), w.bfloat16()], reference.to(dev)


def _matmul_ar(world: int, rank: int, dev):
    import torch

    from hir.builder import Builder, Shard

    D, (M, K, N) = world, AR.values()
    mesh = list(range(D))

    def build():
        b = Builder()
        a = b.input([D, M, K // D], "bf16", sharding=Shard(mesh, 0))
        w = b.input([D, K // D, N], "bf16", sharding=Shard(mesh, 0))
        partial = b.matmul(a, w, sharding=Shard(mesh, 0))
        b.output(b.sum(partial, [0], sharding=Shard(mesh)))
        return b.finish()

    gen = torch.Generator().manual_seed(3)
    a, w = torch.randn(D, M, K // D, generator=gen), torch.randn(D, K // D, N, generator=gen) / K**0.5
    reference = (a @ w).sum(0)
    return build, [a.bfloat16(), w.bfloat16()], reference.to(dev)


def _sp_mlp(world: int, rank: int, dev):
    import torch

    import hir

    text = (INPUTS / f"sp_mlp_{world}.mlir").read_text()
    model, x = _mlp_model()
    with torch.no_grad():
        reference = model.float()(x.float()).chunk(world)[rank]
    return (
        (lambda: hir.parse(text, f"sp_mlp_{world}.mlir")),
        [*model.bfloat16().state_dict().values(), x],
        reference.to(dev),
    )


FORMS = {"AG+matmul": _ag_matmul, "matmul+RS": _matmul_rs, "SP MLP": _sp_mlp, "matmul+AR": _matmul_ar}
