"""``hir-run --save-state OUT.safetensors``: after the run, the weights of a program that
writes them (a training step from ``hir.train_step``: its parameters, optimizer state and
hyper-parameters), as the run left them, by their ``hir.weight`` keys: the file
``hir-run --weights OUT.safetensors`` (or ``hir.load(path, weights=...)``) runs the next step
from."""

import sys
from typing import TYPE_CHECKING

from hir.tools.cli_common import CliError, write_atomically

if TYPE_CHECKING:  # the interpreter imports torch: hir-run imports it only once it runs
    from hir.interpreter import Program


def check_writes_state(program: "Program", world: int) -> None:
    """``--save-state`` needs one process and a program that writes some of its weights."""
    from hir.interpreter.graph_checks import written_arguments  # imports torch: the CLI starts without it

    if world > 1:
        raise CliError("--save-state applies to single-process runs only (the state of a sharded program is in shards)")
    keys = program.recorded_weights.keys
    functions = program.compiler.functions
    if not set(keys) & written_arguments(functions[program.entry].regions[0].blocks[0], functions):
        what = "reads no weights (no argument has an hir.weight key)" if not keys else "writes none of its weights"
        raise CliError(
            f"--save-state: @{program.entry} {what}: there is no state "
            "to save (a training step's program writes its weights)"
        )


def save_state(program: "Program", inputs: list, path: str) -> None:
    """Write every weight argument, as the run left it, under its key (safetensors)."""
    from safetensors.torch import save_file  # safetensors loads only when weights are read or written

    tensors = {
        key: inputs[i].detach().to("cpu", copy=True).contiguous() for i, key in program.recorded_weights.keys.items()
    }
    write_atomically(path, lambda tmp: save_file(tensors, tmp, metadata={"format": "pt"}))
    print(f"hir-run: {len(tensors)} state tensor(s) saved to {path}", file=sys.stderr)
