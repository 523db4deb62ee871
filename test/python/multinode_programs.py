"""The programs of test_multinode.py and test_node_layout.py: a small MLP module (the
``hir-import`` input file) and a looping dp allgather on the 2x2 mesh of two nodes."""

MLP = """\
import torch
from torch.distributed.tensor import Replicate, Shard

torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
example_args = (torch.randn(8, 16),)
mesh = [[0, 1], [2, 3]]  # mesh axis 0: dp, across the nodes; mesh axis 1: tp, inside a node
tp = {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1), "2.bias": Replicate()}
placements = {name: (Replicate(), p) for name, p in tp.items()}
placements |= {"input0": (Shard(0), Replicate()), "output0": (Replicate(), Replicate())}
"""

# The 2x2 program's dp allgather, n times, then once more without a wait: each run of the
# program (hir-run --warmup runs it again and again) then prints, under HIR_DEBUG=1, a
# warning about that unwaited work: the sign that the ranks are exchanging data.
LOOP = """\
!s = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
!o = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
module attributes {hir.ranks_per_node = 2 : i64} {
  func.func @main(%s: !s, %n: index) -> !o {
    %o = memref.alloc() : !o
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    "hir.for"(%c0, %n, %c1) ({
    ^bb0(%i: index):
      %w = "hir.allgather"(%s, %o) {axis = 0 : i64, backend = "nccl", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>}
          : (!s, !o) -> !hir.work
      "hir.wait"(%w) : (!hir.work) -> ()
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
    %last = "hir.allgather"(%s, %o) {axis = 0 : i64, backend = "nccl", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>}
        : (!s, !o) -> !hir.work
    return %o : !o
  }
}
"""
