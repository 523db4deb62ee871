"""Every communication pattern of hir-convert-to-communication, and the seed 003 stream
pipelines, lowered by hir-lower (Gloo backend) and run by the interpreter on 2 and 4 CPU
ranks: each rank checks its local output against a single-process torch reference.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_passes_multirank.py`` is the per-rank worker.
"""

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from multirank_util import finish_worker, launch_workers

PIPELINE = (
    "hir-convert-to-communication{backend=gloo},hir-stream-lowering,"
    "hir-fuse-loops,hir-insert-deallocations,canonicalize,cse"
)


@dataclass
class Buf:
    """A program buffer: global shape, mesh, split axis (None: replicated)."""

    shape: list
    mesh: list
    axis: int | None = None

    @property
    def type(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        mesh = ", ".join(str(d) for d in self.mesh)
        return f"memref<{dims}xf32, #hir.shard<array<i64: {mesh}>, {-1 if self.axis is None else self.axis} : i64>>"

    def local(self, tensor, rank: int):
        """This rank's shard of the global ``tensor`` (None where the rank holds nothing)."""
        if rank not in self.mesh:
            return None
        if self.axis is None:
            return tensor.clone()
        return tensor.chunk(len(self.mesh), self.axis)[self.mesh.index(rank)].contiguous()


@dataclass
class Case:
    name: str
    inputs: list  # Buf
    output: Buf
    body: list  # (op text with {in0}, {in1}, {tmp}, {out} and types filled by build)
    reference: Callable


def _program(case: Case, temps: list) -> str:
    args = ", ".join(f"%arg{i}: {b.type}" for i, b in enumerate(case.inputs))
    lines = []
    env = {f"in{i}": f"%arg{i}" for i in range(len(case.inputs))}
    env.update({f"t_in{i}": b.type for i, b in enumerate(case.inputs)})
    for i, t in enumerate(temps):
        lines.append(f"%tmp{i} = memref.alloc() : {t.type}")
        env[f"tmp{i}"], env[f"t_tmp{i}"] = f"%tmp{i}", t.type
    lines.append(f"%out = memref.alloc() : {case.output.type}")
    env["out"], env["t_out"] = "%out", case.output.type
    lines += [line.format(**env) for line in case.body]
    lines.append(f"return %out : {case.output.type}")
    return f"func.func @main({args}) -> {case.output.type} {{\n  " + "\n  ".join(lines) + "\n}\n"


def cases(world: int) -> list[tuple[Case, list]]:
    import torch

    every, root = list(range(world)), [0]
    set_op = ['"hir.set"({in0}, {out}) {attrs} : ({t_in0}, {t_out}) -> ()']

    def reduce_op(axis: int, stream: str = "") -> list:
        return [
            '"hir.reduction"({in0}, {out}) {{kind = "sum", axes = array<i64: %d>%s}} : ({t_in0}, {t_out}) -> ()'
            % (axis, stream)
        ]

    def plain(name, src, dst, body, ref, temps=()):
        return Case(name, [src], dst, body, ref), list(temps)

    no_attrs = [line.replace("{attrs}", "") for line in set_op]
    streamed = [line.replace("{attrs}", "{{stream_axis = 0 : i64}}") for line in set_op]
    s, m, k, n = 3, 2 * world, 4, 5
    out = [
        plain("allgather", Buf([m, 3], every, 0), Buf([m, 3], every), no_attrs, lambda x: x),
        plain("scatter", Buf([m, 3], root), Buf([m, 3], every, 0), no_attrs, lambda x: x),
        plain("gather", Buf([m, 3], every, 0), Buf([m, 3], root), no_attrs, lambda x: x),
        plain("broadcast", Buf([m, 3], root), Buf([m, 3], every), no_attrs, lambda x: x),
        plain("allreduce", Buf([world, 3], every, 0), Buf([3], every), reduce_op(0), lambda x: x.sum(0)),
        plain("reduce", Buf([world, 3], every, 0), Buf([3], root), reduce_op(0), lambda x: x.sum(0)),
        plain("reduce_scatter", Buf([world, m, 3], every, 0), Buf([m, 3], every, 0), reduce_op(0), lambda x: x.sum(0)),
        # Inner axes: gathered / scattered into strided chunks of the buffer.
        plain("allgather_inner", Buf([2, m, 3], every, 1), Buf([2, m, 3], every), no_attrs, lambda x: x),
        plain(
            "reduce_scatter_inner",
            Buf([world, 3, m], every, 0),
            Buf([3, m], every, 1),
            reduce_op(0),
            lambda x: x.sum(0),
        ),
        # Seed 003 pipelines (stream axis 0).
        plain("stream_allgather", Buf([s, m], every, 1), Buf([s, m], every), streamed, lambda x: x),
        plain(
            "stream_allreduce",
            Buf([s, world, 3], every, 1),
            Buf([s, 3], every),
            reduce_op(1, ", stream_axis = 0 : i64"),
            lambda x: x.sum(1),
        ),
        plain(
            "stream_reduce_scatter",
            Buf([s, world, m, 3], every, 1),
            Buf([s, m, 3], every, 1),
            reduce_op(1, ", stream_axis = 0 : i64"),
            lambda x: x.sum(1),
        ),
    ]
    ag = Buf([s, m, k], every)
    out.append(
        (
            Case(
                "ag_matmul",
                [Buf([s, m, k], every, 1), Buf([k, n], every)],
                Buf([s, m, n], every),
                [
                    '"hir.set"({in0}, {tmp0}) {{stream_axis = 0 : i64}} : ({t_in0}, {t_tmp0}) -> ()',
                    '"hir.matmul"({tmp0}, {in1}, {out}) {{stream_axis = 0 : i64}} : ({t_tmp0}, {t_in1}, {t_out}) -> ()',
                ],
                lambda a, b: a @ b,
            ),
            [ag],
        )
    )
    partial = Buf([s, world, m, n], every, 1)
    matmul_then = '"hir.matmul"({in0}, {in1}, {tmp0}) {{stream_axis = 0 : i64}} : ({t_in0}, {t_in1}, {t_tmp0}) -> ()'
    reduce_then = (
        '"hir.reduction"({tmp0}, {out}) {{kind = "sum", axes = array<i64: '
        "1>, stream_axis = 0 : i64}} : ({t_tmp0}, {t_out}) -> ()"
    )
    out.append(
        (
            Case(
                "matmul_allreduce",
                [Buf([s, world, m, k], every, 1), Buf([world, k, n], every, 0)],
                Buf([s, m, n], every),
                [matmul_then, reduce_then],
                lambda a, b: (a @ b).sum(1),
            ),
            [partial],
        )
    )
    out.append(
        (
            Case(
                "matmul_reduce_scatter_through_bcast",
                [Buf([s, world, m, k], every, 1), Buf([1, world, k, n], every, 1)],
                Buf([s, m, n], every, 1),
                [matmul_then, reduce_then],
                lambda a, b: (a @ b).sum(1),
            ),
            [partial],
        )
    )
    del torch
    return out


def worker() -> int:
    import torch

    import hir
    from hir.interpreter import run

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = os.environ.get("HIR_DEVICE", "cpu")
    if device == "cuda":  # this rank's GPU, as the interpreter picks it
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    failures = []
    for case, temps in cases(world):
        gen = torch.Generator().manual_seed(len(case.name))
        globals_ = [torch.randn(b.shape, generator=gen) for b in case.inputs]
        expected = case.reference(*globals_)
        module = hir.parse(_program(case, temps), f"{case.name}.mlir")
        hir.lower(module, PIPELINE)
        assert "stream_axis" not in str(module), case.name
        local = [b.local(t, rank) for b, t in zip(case.inputs, globals_)]
        (got,) = run(module, [None if t is None else t.to(device) for t in local], device=device)
        got = None if got is None else got.cpu()
        want = case.output.local(expected, rank)
        if want is None:
            continue
        if got is None or not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
            failures.append(f"rank {rank}: {case.name}: got {got}, want {want}")
        else:
            print(f"rank {rank}: {case.name} ok")
    return finish_worker(failures)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.parametrize(
    "world,device",
    [
        (2, "cpu"),
        pytest.param(4, "cpu", marks=pytest.mark.slow),  # the same pipelines as 2 ranks; 4 CPU processes
        pytest.param(
            4,
            "cuda",
            marks=[pytest.mark.gpu, pytest.mark.multigpu, pytest.mark.skipif(_gpus() < 4, reason="needs 4 GPUs")],
        ),
    ],
)
def test_communication_patterns(world, device):
    """The lowered seed-003 pipelines (Gloo on CPU; NCCL on 4 GPUs: AG+matmul, matmul+RS, ...)."""
    pytest.importorskip("torch")
    checked, report = launch_workers(world, __file__, timeout_s=240, env={**os.environ, "HIR_DEVICE": device})
    assert checked == 15 + 13 * (world - 1), report  # gather/reduce outputs live on rank 0 only


if __name__ == "__main__":
    sys.exit(worker())
