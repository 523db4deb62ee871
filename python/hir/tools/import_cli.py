"""``hir-import``: import a PyTorch module from a Python file as a program-level hir module.
The file is executed as Python, as ``python FILE`` would (whatever it does, it does).

The file defines the module and its example inputs as module-level names (defaults
``module`` and ``example_args``; ``--module``/``--args`` pick others). A callable is called
with no arguments first (so a file may define ``def module(): return MLP()``). Optional
``mesh`` and ``placements`` names in the file (or ``--mesh``/``--placements`` naming others)
shard the program, and ``dynamic`` / ``dynamic_shapes`` mark dims dynamic (see
``hir.from_torch``). The module's parameters and buffers go to a safetensors file beside
``-o`` (``model.mlir`` -> ``model.safetensors``; ``--weights FILE`` another), recorded in the
IR so that ``hir-run model.mlir INPUT`` runs the model on its own weights. An existing
weights file that hir did not write (its safetensors header says who did) is not
overwritten unless ``--force``. ``-o`` and the weights file are checked before FILE runs.
Running FILE executes it, as ``python FILE`` would: import only files you trust. Errors
print as ``error: ...`` with exit status 1.
"""

import argparse
import os
import runpy
import sys
from collections.abc import Sequence
from typing import Any

from hir import progress
from hir.interrupts import cli_main
from hir.tools.cli_common import (
    ArgumentParser,
    CliError,
    check_writable,
    flush_stdout,
    write_atomically,
    write_stdout,
    write_text,
)


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="hir-import",
        description="Import a torch.nn.Module (torch.export + torch-mlir's FX importer) as an hir module. "
        "FILE is executed as Python, as `python FILE` would: import only files you would run.",
    )
    p.add_argument(
        "file", help="a Python file defining the module and its example inputs (executed, as by `python FILE`)"
    )
    p.add_argument(
        "--module",
        default="module",
        help="name of the nn.Module (or a function returning one) in the file (default: module)",
    )
    p.add_argument(
        "--args",
        default="example_args",
        help="name of the example inputs (a tuple, or a function returning one) (default: example_args)",
    )
    p.add_argument("--mesh", default="mesh", help="name of the device mesh in the file, if any (default: mesh)")
    p.add_argument(
        "--placements",
        default="placements",
        help="name of the placements dict in the file, if any (default: placements)",
    )
    p.add_argument("-o", "--output", default="-", help="output .mlir file (default: stdout)")
    p.add_argument(
        "--weights",
        metavar="FILE",
        help="write the module's parameters and buffers (safetensors) to FILE "
        "(default: the output's name with suffix .safetensors; with output to stdout, none unless given)",
    )
    p.add_argument(
        "--no-weights",
        action="store_true",
        help="write no weights: hir-run then needs every argument (or runs on random ones)",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing weights file that hir did not write")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say on stderr what the import is doing (default: when stderr is a terminal)",
    )
    return p


def weights_file(args: argparse.Namespace) -> str | None:
    """Where the weights go: --weights, else beside -o, else nowhere (stdout, --no-weights)."""
    if args.no_weights:
        if args.weights:
            raise CliError("--weights and --no-weights contradict each other")
        return None
    if args.weights:
        if args.output != "-" and os.path.abspath(args.weights) == os.path.abspath(args.output):
            raise CliError(f"--weights {args.weights}: is also the -o file; write the weights to another file")
        return args.weights
    from hir.dialect.compute import default_weights_path  # not the frontend's: it imports torch

    if args.output == "-":
        return None
    weights = default_weights_path(args.output)
    if os.path.abspath(weights) == os.path.abspath(args.output):
        raise CliError(
            f"-o {args.output}: is where the weights would go ({os.path.basename(weights)} beside it); "
            "write the program to a .mlir file (or name the weights with --weights FILE)"
        )
    return weights


def refuse_foreign_weights(weights: str, force: bool) -> None:
    """An existing ``weights`` file that hir did not write stays, unless ``force``."""
    if force or not os.path.exists(weights):
        return
    from hir.frontend.saving import written_by_hir  # imports torch: only when there is a file

    if not written_by_hir(weights):
        raise CliError(
            f"{weights}: exists and hir did not write it; pass "
            "--force to overwrite it (or --weights FILE / --no-weights)"
        )


def _get(namespace: dict, name: str, file: str, required: bool) -> Any:
    """What the user's file defines as ``name`` (called when it is a factory), which
    ``from_torch`` checks; None when it is left out and not ``required``."""
    if name not in namespace:
        if required:
            raise KeyError(f"{file}: error: defines no '{name}'")
        return None
    value = namespace[name]
    if callable(value) and not hasattr(value, "forward"):
        value = value()
    return value


@cli_main("hir-import")
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    progress.configure("hir-import", args.progress)
    from hir.core import HirError  # after the argument checks: a bad command line is answered without loading MLIR

    try:
        if args.output != "-":
            check_writable("-o", args.output, [args.file])
        weights = weights_file(args)
        if weights is not None:
            check_writable("--weights", weights, [args.file, args.output])
            refuse_foreign_weights(weights, args.force)
    except CliError as err:
        print(f"hir-import: error: {err}", file=sys.stderr)
        return 1
    if args.file.endswith(".mlir"):  # a program for hir-opt / hir-run, not Python to run
        print(f"{args.file}: error: not a Python file:{not_python_hint(args.file)}", file=sys.stderr)
        return 1
    try:
        namespace = runpy.run_path(
            args.file, run_name="__hir_import__"
        )  # before the frontend's imports: a missing file fails at once
    except SyntaxError as err:
        print(f"{args.file}: error: cannot load: {err}{not_python_hint(args.file)}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"{args.file}: error: cannot load: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - the user's file failed; say so without a traceback
        print(f"{args.file}: error: loading raised {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    from hir.frontend import from_torch  # imports torch: the CLI starts without it

    try:
        module = _get(namespace, args.module, args.file, True)
        example = _get(namespace, args.args, args.file, True)
        mesh = _get(namespace, args.mesh, args.file, False)
        placements = _get(namespace, args.placements, args.file, False)
        dynamic = {name: _get(namespace, name, args.file, False) for name in ("dynamic", "dynamic_shapes")}
        program = from_torch(module, example, mesh=mesh, placements=placements, source_name=args.file, **dynamic)
    except KeyError as err:
        print(err.args[0], file=sys.stderr)
        return 1
    except HirError as err:
        print(err.message, file=sys.stderr)
        return 1
    try:
        if weights is None:
            write_output(args.output, str(program.module))
        elif args.output == "-":
            from hir.frontend.saving import write_weights  # imports torch: the CLI starts without it

            write_weights(program.module, program.state_tensors(), weights, os.getcwd())
            write_output(args.output, str(program.module))
        else:
            program.save(args.output, weights=weights)
        flush_stdout()  # what FILE printed, checked like our own output
    except HirError as err:
        print(err.message, file=sys.stderr)
        return 1
    except CliError as err:
        print(f"hir-import: error: {err}", file=sys.stderr)
        return 1
    return 0


def not_python_hint(path: str) -> str:
    """What to say when ``path`` is not Python: hir-import takes a Python file; MLIR goes to
    hir-opt / hir-run."""
    if path.endswith(".mlir"):
        return (
            " hir-import takes a Python file defining a torch.nn.Module and its example "
            "inputs (hir-opt checks and transforms an .mlir file, hir-run runs it)"
        )
    if not path.endswith(".py"):
        return " (hir-import takes a Python file defining a torch.nn.Module and its example inputs)"
    return ""


def write_output(output: str, text: str) -> None:
    if output == "-":
        write_stdout(text)
    else:
        write_atomically(output, lambda tmp: write_text(tmp, text))


if __name__ == "__main__":
    sys.exit(main())
