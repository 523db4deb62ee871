"""An all-reduce of one block per rank runs in its dead input's storage
(hir/interpreter/result_in_input.py): the tensor-parallel matmul's partial is all-reduced in
place and becomes the output, with no output allocation and no copy of the partial into it;
where the input is still read, is the caller's, is communicated, holds two blocks per rank or
goes over copy engines, or an alias of the input made before the all-reduce (a kernel
segment's view of it, a ``to_tensor``) is read after it, the output keeps its own buffer. Every case runs on 2 Gloo
ranks and equals the sum of the ranks' partials; in place, the program's peak memory is one buffer.

The test launches this file as a script (one process per rank); ``python
test_result_in_input.py`` is the per-rank worker."""

import gc
import os
import sys

import pytest

from multirank_util import finish_worker, gpu_count, launch_gpu_workers, launch_workers, run_gloo_cases

T, K, N = 8, 16, 12


def _types(world: int, blocks: int) -> tuple[str, str, str, str]:
    """The activation, weight, partial ([world * blocks, T, N] split on axis 0) and output types."""
    mesh = ", ".join(str(r) for r in range(world))
    split, whole = f"#hir.shard<array<i64: {mesh}>, 0 : i64>", f"#hir.shard<array<i64: {mesh}>, -1 : i64>"
    d = world * blocks
    return (
        f"memref<{d}x{T}x{K // d}xf32, {split}>",
        f"memref<{d}x{K // d}x{N}xf32, {split}>",
        f"memref<{d}x{T}x{N}xf32, {split}>",
        f"memref<{T}x{N}xf32, {whole}>",
    )


def matmul_allreduce(
    world: int, *, blocks: int = 1, backend: str = "nccl", partial_returned: bool = False, sent_before: bool = False
) -> str:
    """The TP matmul as hir-lower leaves it: partial, its all-reduce, its dealloc.
    ``partial_returned``: the partial is also a result (read after the all-reduce);
    ``sent_before``: an all-gather of the partial is in flight across the all-reduce."""
    a, w, p, o = _types(world, blocks)
    gathered = f"memref<{world * blocks}x{T}x{N}xf32>"
    team = ", ".join(str(r) for r in range(world))
    results = f"{o}, {p}" if partial_returned else o
    send = (
        f"  %copy = memref.alloc() : {gathered}\n"
        f'  %sent = "hir.allgather"(%partial, %copy) {{axis = 0 : i64, backend '
        f'= "gloo", team = array<i64: {team}>}} : ({p}, {gathered}) -> !hir.work\n'
        if sent_before
        else ""
    )
    after = (
        '  "hir.wait"(%sent) : (!hir.work) -> ()\n  memref.dealloc %copy : ' + gathered + "\n" if sent_before else ""
    )
    end = (
        f"  return %out, %partial : {o}, {p}"
        if partial_returned
        else f"  memref.dealloc %partial : {p}\n  return %out : {o}"
    )
    return f"""func.func @main(%a: {a}, %w: {w}) -> ({results}) {{
  %partial = memref.alloc() : {p}
  "hir.matmul"(%a, %w, %partial) : ({a}, {w}, {p}) -> ()
{send}  %out = memref.alloc() : {o}
  %done = "hir.allreduce"(%partial, %out) {{axis = 0 : i64, backend = "{backend}", reduction = "sum",
      team = array<i64: {team}>}} : ({p}, {o}) -> !hir.work
  "hir.wait"(%done) : (!hir.work) -> ()
{after}{end}
}}"""


def allreduce_argument(world: int) -> str:
    """The all-reduce of the caller's own partial (a function argument)."""
    _, _, p, o = _types(world, 1)
    team = ", ".join(str(r) for r in range(world))
    return f"""func.func @main(%partial: {p}) -> {o} {{
  %out = memref.alloc() : {o}
  %done = "hir.allreduce"(%partial, %out) {{axis = 0 : i64, backend = "nccl", reduction = "sum",
      team = array<i64: {team}>}} : ({p}, {o}) -> !hir.work
  "hir.wait"(%done) : (!hir.work) -> ()
  return %out : {o}
}}"""


def alias_read_after(world: int, through: str) -> str:
    """The partial ``%p`` = x + x is all-reduced while an alias of it made before, read after,
    lives on: ``through`` "segment", a kernel segment's result bound as a view of it
    (``detach``); "to_tensor", a ``to_tensor`` of it (sharing its slot) added to itself after
    the all-reduce. The alias must still read the local partial (``c`` = 4 x)."""
    mesh = ", ".join(str(r) for r in range(world))
    p, o = (
        f"memref<{world}x4x8xf32, #hir.shard<array<i64: {mesh}>, 0 : i64>>",
        f"memref<4x8xf32, #hir.shard<array<i64: {mesh}>, -1 : i64>>",
    )
    vt, t = f"!torch.vtensor<[{world},4,8],f32>", f"tensor<{world}x4x8xf32>"
    allreduce = (
        f"  %out = memref.alloc() : {o}\n"
        f'  %w = "hir.allreduce"(%p, %out) {{axis = 0 : i64, backend = "gloo", '
        f'reduction = "sum", team = array<i64: {mesh}>}} : ({p}, {o}) -> !hir.work\n'
        f'  "hir.wait"(%w) : (!hir.work) -> ()\n'
    )
    if through == "segment":
        body = (
            f"  %v = memref.alloc() : {p}\n  call @view(%p, %v) : ({p}, {p}) -> ()\n"
            f"{allreduce}  memref.dealloc %p : {p}\n"
            f'  %c = memref.alloc() : {p}\n  "hir.binary"(%v, %v, %c) {{kind = "add"}} : ({p}, {p}, {p}) -> ()\n'
        )
    else:
        body = (
            f"  %t0 = bufferization.to_tensor %p restrict : {p} to {t}\n"
            f"  %t1 = builtin.unrealized_conversion_cast %t0 : {t} to {vt}\n{allreduce}"
            f"  %c = memref.alloc() : {p}\n  %int1 = torch.constant.int 1\n"
            f"  %t2 = torch.aten.add.Tensor %t1, %t1, %int1 : {vt}, {vt}, !torch.int -> {vt}\n"
            f"  %t3 = builtin.unrealized_conversion_cast %t2 : {vt} to {t}\n"
            f"  bufferization.materialize_in_destination %t3 in restrict writable %c : ({t}, {p}) -> ()\n"
            f"  memref.dealloc %p : {p}\n"
        )
    return f"""func.func @main(%x: {p}) -> ({o}, {p}) {{
  %p = memref.alloc() : {p}
  "hir.binary"(%x, %x, %p) {{kind = "add"}} : ({p}, {p}, {p}) -> ()
{body}  return %out, %c : {o}, {p}
}}
func.func private @view(%arg0: {p}, %arg1: {p}) attributes {{hir.kernel}} {{
  %0 = bufferization.to_tensor %arg0 restrict : {p} to {t}
  %1 = builtin.unrealized_conversion_cast %0 : {t} to {vt}
  %2 = torch.aten.detach %1 : {vt} -> {vt}
  %3 = builtin.unrealized_conversion_cast %2 : {vt} to {t}
  bufferization.materialize_in_destination %3 in restrict writable %arg1 : ({t}, {p}) -> ()
  return
}}"""


# case -> (module text for a world, whether the output takes the partial's storage)
CASES = {
    "imported_tp_mlp": (None, True),  # hir.from_torch's TP MLP, fc2's all-reduce (run_imported)
    "in_place": (lambda world: matmul_allreduce(world), True),
    "partial_read_after": (lambda world: matmul_allreduce(world, partial_returned=True), False),
    "partial_in_flight": (lambda world: matmul_allreduce(world, sent_before=True), False),
    "two_blocks_per_rank": (lambda world: matmul_allreduce(world, blocks=2), False),
    "copy_engines": (lambda world: matmul_allreduce(world, backend="cuda"), False),
    "caller_partial": (allreduce_argument, False),
    "segment_view_read_after": (lambda world: alias_read_after(world, "segment"), False),
    "to_tensor_read_after": (lambda world: alias_read_after(world, "to_tensor"), False),
}


def _allreduce_output(module) -> object:
    from hir.dialect.irutils import blocks_postorder, func_ops

    return next(
        op.operation.operands[1]
        for fn in func_ops(module)
        for block in blocks_postorder(fn)
        for op in block.operations
        if op.operation.name == "hir.allreduce"
    )


def imported_tp_mlp(world: int) -> tuple:
    """(module lowered by hir-lower, its arguments on this rank, the model's output): fc1
    column-parallel, fc2 row-parallel, its sum all-reduced."""
    import torch
    from torch.distributed.tensor import Replicate, Shard

    import hir

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(K, 4 * K), torch.nn.GELU(), torch.nn.Linear(4 * K, K))
    x = torch.randn(T, K)
    placements = {"0.weight": Shard(0), "0.bias": Shard(0), "2.weight": Shard(1), "2.bias": Replicate()}
    program = hir.from_torch(model, (x,), mesh=list(range(world)), placements=placements)
    hir.lower(program.module, "hir-lower")
    return program.module, program.arguments(model.state_dict(), x), model(x).detach()


def run_case(name: str, rank: int, world: int) -> str:
    import torch
    import torch.distributed as dist

    import hir
    from hir.interpreter import Program
    from hir.interpreter import compile as compile_program

    build, in_place = CASES[name]
    if build is None:
        module, inputs, want = imported_tp_mlp(world)
        program = compile_program(module, device="cpu")
        got = [program(inputs)[0] for _ in range(2)]
        failures = [
            f"call {call}: got {g}, want {want}"
            for call, g in enumerate(got)
            if not torch.allclose(g, want, rtol=1e-4, atol=1e-5)
        ]
        if not program.compiler.is_bound(_allreduce_output(module)):
            failures.append("the all-reduce's output is not bound to fc2's partial")
        return f"{name}: rank {rank}: " + "; ".join(failures) if failures else ""
    module = hir.parse(build(world), f"{name}.mlir")
    gen = torch.Generator().manual_seed(rank)
    if name == "caller_partial":
        partial = torch.randn(1, T, N, generator=gen)
        inputs, kept = [partial], partial.clone()
    elif name.endswith("_read_after") and name != "partial_read_after":  # the partial is x + x
        x = torch.randn(1, 4, 8, generator=gen)
        inputs, partial, kept = [x], 2 * x, None
    else:
        blocks = 2 if name == "two_blocks_per_rank" else 1
        a, w = (
            torch.randn(blocks, T, K // (world * blocks), generator=gen),
            torch.randn(blocks, K // (world * blocks), N, generator=gen),
        )
        inputs, partial, kept = [a, w], torch.matmul(a, w), None
    want = partial.sum(0)
    dist.all_reduce(want)
    program = Program(module, device="cpu", track_memory=True)
    failures = []
    for call in range(2):  # the second call runs the compiled plan again
        outputs = program(inputs)
        if not torch.allclose(outputs[0], want, rtol=1e-5, atol=1e-5):
            failures.append(f"call {call}: got {outputs[0]}, want {want}")
        if name == "partial_read_after" and not torch.allclose(outputs[1], partial, rtol=1e-5, atol=1e-6):
            failures.append(f"call {call}: the returned partial changed: {outputs[1]}, want {partial}")
        if name in ("segment_view_read_after", "to_tensor_read_after") and not torch.allclose(
            outputs[1], 2 * partial, rtol=1e-5, atol=1e-6
        ):
            failures.append(
                f"call {call}: the alias read after the all-reduce saw "
                f"{outputs[1]}, want the local partial doubled {2 * partial}"
            )
        if kept is not None and not torch.equal(inputs[0], kept):
            failures.append(f"call {call}: the caller's partial was overwritten")
        if call == 0:
            peak = program.memory.peak  # returned buffers stay counted: the first call's
    bound = program.compiler.is_bound(_allreduce_output(module))
    if bound != in_place:
        failures.append(f"the output {'is not' if in_place else 'is'} bound to the partial")
    if in_place and peak != T * N * 4:  # one [T, N] f32 buffer: the partial, then the output
        failures.append(f"peak memory {peak} bytes, want {T * N * 4} (the partial and the output share one buffer)")
    return f"{name}: rank {rank}: " + "; ".join(failures) if failures else ""


GPU_CALLS = 3  # graph=True: warm-up + capture + replay, then two replays


def gpu_worker() -> int:
    """NCCL on 2 GPUs: the in-place case eagerly and as a CUDA graph, each call equal to the
    sum of both ranks' partials (every rank's inputs are made here from their seeds)."""
    import torch

    import hir
    from hir.interpreter import compile as compile_program

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    inputs = []
    for r in range(world):
        gen = torch.Generator().manual_seed(r)
        inputs.append([torch.randn(1, T, K // world, generator=gen), torch.randn(1, K // world, N, generator=gen)])
    want = sum(torch.matmul(a, w).sum(0) for a, w in inputs).to(device)
    args = [t.to(device) for t in inputs[rank]]
    failures = []
    for graph in (False, True):
        module = hir.parse(matmul_allreduce(world), "in_place.mlir")
        program = compile_program(module, device=device, graph=graph, static_outputs=graph)
        for call in range(GPU_CALLS if graph else 1):
            got = program(args)[0]
            if torch.allclose(got, want, rtol=1e-4, atol=1e-4):
                print(f"rank {rank}: graph={graph} call {call} ok")
            else:
                failures.append(
                    f"rank {rank}: graph={graph} call {call}: max error {(got - want).abs().max().item():.2e}"
                )
        if not program.compiler.is_bound(_allreduce_output(module)):
            failures.append(f"rank {rank}: graph={graph}: the output is not bound to the partial")
    # a live CUDA graph that captured NCCL kernels makes destroy_process_group wait forever
    # (seen on H200, torch 2.11): drop it before finish_worker shuts the group down
    del program
    gc.collect()
    return finish_worker(failures)


def test_allreduce_in_its_input():
    checked, report = launch_workers(2, __file__, timeout_s=300, env=dict(os.environ))
    assert checked == len(CASES) * 2, report


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(gpu_count() < 2, reason="needs 2 GPUs")
def test_allreduce_in_its_input_on_2_gpus():
    """NCCL's in-place all-reduce, eager and replayed from a CUDA graph."""
    checked, report = launch_gpu_workers(2, __file__, "--gpu", timeout_s=300)
    assert checked == 2 * (1 + GPU_CALLS), report


if __name__ == "__main__":
    sys.exit(gpu_worker() if "--gpu" in sys.argv else run_gloo_cases(list(CASES), run_case))
