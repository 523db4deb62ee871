"""CUDA graph capture of a compiled program (``Program(module, graph=True)``,
``hir-run --cuda-graph``): the whole multi-stream program is captured once and replayed,
so a run costs one graph launch instead of one host call per op.

The first call (1) copies the inputs into static input buffers, (2) runs the program once
eagerly on a side stream (warm-up: lazy initialisations -- cuBLAS handles, NCCL
communicators, pool streams -- must not happen during capture), (3) captures it with
``torch.cuda.graph``: every pool stream forks from the capturing stream before the program
runs and joins back into it afterwards (a capture must end with every stream it touched
joined; the lowered program's own sync loop and loop epilogues fork and join too), then
replays. Later calls copy the inputs into the static buffers and replay. Outputs are the
graph's static buffers: the next call overwrites them (clone to keep them).

Host scalars (index / integer / float arguments) are baked into the graph: a later call
with other values is an error. Not capturable: CPU runs and Gloo collectives (host-side
transfers); NCCL collectives are captured.
"""

from typing import Optional

import torch
from torch_mlir import ir

from hir.dialect import OP_CLASSES
from hir.dialect.base import get_str
from hir.dialect.context import HirError


def check_capturable(module: ir.Module, device: torch.device, backend: Optional[str], has_comm: bool) -> None:
    """Raise a clear error when ``module`` cannot be captured on ``device``."""
    if device.type != "cuda":
        raise HirError(f"error: graph=True (CUDA graph capture) needs a CUDA device; this program runs on {device}")
    if has_comm and backend not in (None, "nccl"):
        raise HirError(f"error: graph=True cannot capture collectives of the '{backend}' backend (host-side transfers); use nccl")
    bad: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        cls = OP_CLASSES.get(op.name)
        if cls is not None and cls.TEAM_ATTR is not None:  # a communication: it has a backend
            if get_str(op, "backend") == "gloo":
                bad.append(f"{op.location}: '{op.name}' uses the gloo backend")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if bad:
        raise HirError("error: graph=True cannot capture Gloo collectives (host-side transfers; use backend nccl): " + "; ".join(bad))


class GraphRunner:
    """Captures ``execute(values) -> outputs`` once and replays it."""

    def __init__(self, execute, device: torch.device, pool) -> None:
        self.execute = execute
        self.device = device
        self.pool = pool
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.static_inputs: list = []
        self.static_outputs: list = []

    def __call__(self, values: list) -> list:
        if self.graph is None:
            self.capture(values)
        else:
            self.load(values)
        self.graph.replay()
        return list(self.static_outputs)

    def load(self, values: list) -> None:
        for index, (static, value) in enumerate(zip(self.static_inputs, values)):
            if isinstance(static, torch.Tensor):
                if static.data_ptr() != value.data_ptr():
                    static.copy_(value)
            elif static != value:
                raise HirError(
                    f"error: graph=True: argument #{index} is {value!r} but the graph was captured with {static!r} "
                    "(host scalars are baked into a CUDA graph; compile another program for other values)"
                )

    def capture(self, values: list) -> None:
        dev = self.device
        self.static_inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
        caller = torch.cuda.current_stream(dev)
        streams = [self.pool.get(i) for i in range(self.pool.num_streams)]
        side = torch.cuda.Stream(dev)
        side.wait_stream(caller)
        with torch.cuda.stream(side):  # warm-up, off the caller's stream (torch's recipe)
            self.execute(self.static_inputs)
        caller.wait_stream(side)
        torch.cuda.synchronize(dev)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                capture = torch.cuda.current_stream(dev)
                for stream in streams:  # fork every pool stream from the capture stream
                    stream.wait_stream(capture)
                outputs = self.execute(self.static_inputs)
                for stream in streams:  # and join it back
                    capture.wait_stream(stream)
        except HirError as err:
            raise HirError(f"{err}\nerror: graph=True: the program could not be captured as a CUDA graph") from None
        except RuntimeError as err:
            raise HirError(f"error: graph=True: CUDA graph capture failed: {err}") from None
        self.graph = graph
        self.static_outputs = outputs
        # A replay reads the static inputs; the capture run itself did not execute.
        self.load(values)
