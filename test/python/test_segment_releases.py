"""An eager kernel segment inlined into its caller's plan releases each intermediate tensor
after its last use (hir.interpreter.releases): the bytes alive at once while a program runs,
counted per storage over every torch op's outputs, stay near what eager PyTorch holds
(before, every intermediate of every segment stayed referenced by the env until the run
returned: a training step held its whole backward's temporaries at once)."""

import copy

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

import hir
from hir.interpreter import Program
from training_util import TOL, eager_step, make, optimizer


class LiveBytes(TorchDispatchMode):
    """Bytes of the storages made by torch ops while it is active and still alive, and their
    peak (each storage counted once, dropped when torch frees it)."""

    def __init__(self) -> None:
        super().__init__()
        self.current = self.peak = 0
        self._held: dict[int, tuple] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for key in [k for k, (ref, _) in self._held.items() if ref.expired()]:
            self.current -= self._held.pop(key)[1]
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self._held:
                storage = t.untyped_storage()
                self._held[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())
                self.current += storage.nbytes()
                self.peak = max(self.peak, self.current)
        return out


def chain(length: int) -> str:
    """@main calling a kernel segment of ``length`` squarings of a 256x256 tensor."""
    t, v = "tensor<256x256xf32>", "!torch.vtensor<[256,256],f32>"
    body = "\n".join(f"  %v{i + 1} = torch.aten.mul.Tensor %v{i}, %v{i} : {v}, {v} -> {v}" for i in range(length))
    return f"""func.func @main(%x: memref<256x256xf32>) -> memref<256x256xf32> {{
  %o = memref.alloc() : memref<256x256xf32>
  call @s(%x, %o) : (memref<256x256xf32>, memref<256x256xf32>) -> ()
  return %o : memref<256x256xf32>
}}
func.func private @s(%arg0: memref<256x256xf32>, %arg1: memref<256x256xf32>) attributes {{hir.kernel}} {{
  %0 = bufferization.to_tensor %arg0 restrict : memref<256x256xf32> to {t}
  %v0 = builtin.unrealized_conversion_cast %0 : {t} to {v}
{body}
  %r = builtin.unrealized_conversion_cast %v{length} : {v} to {t}
  bufferization.materialize_in_destination %r in restrict writable %arg1 : ({t}, memref<256x256xf32>) -> ()
  return
}}"""


def test_a_segment_chain_holds_two_intermediates_at_once():
    program = Program(hir.parse(chain(8), "chain.mlir"), graph=False, device="cpu")
    assert list(program.compiler.plans) == ["main"]  # the segment is inlined
    x = torch.rand(256, 256)
    with LiveBytes() as live:
        (out,) = program([x])
    torch.testing.assert_close(out, x**256)
    # each squaring reads the one before: two alive at once (without releases, all eight)
    assert live.peak == 2 * x.nbytes, live.peak / x.nbytes


def test_an_unlowered_eager_training_step_holds_about_what_eager_torch_holds():
    """A training step through hir eager (op by op, no compiled kernels): its peak live bytes
    beside eager PyTorch's on the same step (bf16 autocast; both after a first step, so the
    optimizer state exists): about 1.5x here, 3.5x when every intermediate stayed alive."""
    model, loss_fn, batches = make("llama")
    ref = copy.deepcopy(model)
    opt, ref_opt = optimizer("adamw", model), optimizer("adamw", ref)
    (first, second) = batches(2, size=4)

    def autocast_loss(m, ids, labels):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return loss_fn(m, ids, labels)

    step = hir.train_step(model, opt, autocast_loss, first, graph=False, compile_kernels=False)
    torch.testing.assert_close(step(*first), eager_step(ref, ref_opt, autocast_loss, first), **TOL)
    with LiveBytes() as hir_live:
        loss = step(*second)
    with LiveBytes() as eager_live:
        expected = eager_step(ref, ref_opt, autocast_loss, second)
    torch.testing.assert_close(loss, expected, **TOL)
    assert hir_live.peak <= 2 * eager_live.peak, (hir_live.peak, eager_live.peak)
