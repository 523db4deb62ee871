"""``hir-run``: execute an hir module with torch and print or save its outputs.

Errors are printed as ``file:line:col: error: ...`` on stderr with exit status 1."""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hir import progress
from hir.interrupts import cli_main, pause_point
from hir.tools.cli_common import (
    ArgumentParser,
    CliError,
    check_device,
    check_writable,
    non_negative_int,
    positive_float,
    positive_int,
    write_atomically,
    write_stdout,
)
from hir.tools.run_ranks import check_nproc, launch_ranks, launched_rank, mark_up, rank_path, stop_rank_after
from hir.tools.run_state import check_writes_state, save_state
from hir.tools.run_trace import traced_run

if TYPE_CHECKING:  # the interpreter imports torch: hir-run imports it after parsing its arguments
    from hir.interpreter import Program

HELP_EPILOG = """\
inputs (one per entry-function argument, in order; unspecified ones are random; an imported
model's weights (the safetensors file hir-import wrote, named in the module) fill the
arguments that read them, and plain specs fill the others: hir-run model.mlir x.pt):
  random[:SHAPE]  normal (floats) or integers in [-8, 8] from --seed   (default)
  zeros[:SHAPE] | ones[:SHAPE] | arange[:SHAPE]
  FILE.pt | FILE.npy   a saved global tensor
  NUMBER          the value of an index / integer / float argument
  N=SPEC          gives SPEC to argument N (later plain specs continue from N+1)
  SHAPE is the GLOBAL shape, like 8x4; it is required for types with dynamic dims
  (memref<?x4xf32> needs e.g. --input random:8x4). Each rank keeps its shard of
  every global input (#hir.shard memory space), so all ranks see one global tensor.

lowering: hir-run runs the module as written (a stream-parallel op computes whole, on the
current stream). A resharding op (hir.set between different shardings) needs the
communication that lowering inserts, so on several ranks it is refused unlowered;
--lower lowers the module first (default pipeline hir-lower; --lower=PIPELINE for another, e.g.
--lower='hir-lower-reuse' or --lower='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)').

multi-process runs:
  hir-run --nproc 4 prog.mlir             4 local processes (gloo on CPU by default)
  torchrun --nproc_per_node 4 --no-python hir-run prog.mlir   (or: torchrun ... -m hir.tools.run_cli)
  several nodes: torchrun --nnodes 2 --node-rank R --nproc-per-node 2 --rdzv-backend c10d
  --rdzv-endpoint HOST:PORT --no-python hir-run prog.mlir ...   (docs/multi-node.md)
  Outputs print per rank ("rank R: " prefix), in rank order. If a rank fails the
  others are stopped; collectives give up after $HIR_DIST_TIMEOUT s (default 60).

environment: HIR_DEVICE sets the default device (else cuda if available, else cpu).

exit status: 0 on success; 1 on any error (bad command line, file, input or program, or
a failing rank), reported as "file:line:col: error: ..." or "hir-run: error: ...";
124 when --timeout expired. --save and --trace files are written only by a successful run.
"""


DEFAULT_LOWERING = "hir-lower"


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="hir-run",
        description="Run an hir module's entry function with torch (SPMD over torch.distributed ranks).",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .mlir module ('-' for stdin)")
    p.add_argument("inputs", nargs="*", default=[], metavar="INPUT", help="input specs (see below)")
    p.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="SPEC",
        help="an input spec (repeatable; after positional ones)",
    )
    p.add_argument(
        "--lower",
        nargs="?",
        const=DEFAULT_LOWERING,
        metavar="PIPELINE",
        help=f"lower the module before running it (default pipeline: {DEFAULT_LOWERING}; "
        "another one as --lower=PIPELINE)",
    )
    p.add_argument("--entry", help="entry function (default: @main, else the only public non-kernel function)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: $HIR_DEVICE, else cuda if available, else cpu)")
    p.add_argument(
        "--num-streams",
        type=positive_int,
        default=None,
        help="size of the stream pool when the module has no hir.num_streams (default 4); must agree with it otherwise",
    )
    p.add_argument(
        "--backend", choices=("gloo", "nccl"), help="process-group backend (default: nccl on cuda, gloo on cpu)"
    )
    p.add_argument(
        "--nproc",
        type=positive_int,
        help="start this many local processes as the ranks of the run "
        "(at most 4 per CPU core on cpu, one per GPU on cuda, unless --max-nproc says otherwise)",
    )
    p.add_argument(
        "--max-nproc", type=positive_int, metavar="N", help="allow --nproc up to N instead of the machine's limit"
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        metavar="S",
        help="with --nproc: stop every rank after S seconds and exit with status 124; "
        "on a rank of a torchrun launch: stop this rank after S seconds (status 124)",
    )
    p.add_argument(
        "--weights",
        metavar="FILE",
        help="read the arguments that name weight keys (hir.weight) from this safetensors "
        "file instead of the one the module names (hir.weights; hir-import writes both)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    p.add_argument("--print", dest="print_outputs", action="store_true", help="print the outputs")
    p.add_argument(
        "--save",
        metavar="OUT.pt",
        help="save the outputs (a list of tensors) with torch.save; "
        "ranks > 0 of a multi-process run write OUT.rankR.pt",
    )
    p.add_argument(
        "--save-state",
        metavar="OUT.safetensors",
        help="after the run, write the weights (hir.weight arguments) as the program left them, by their keys, to this "
        "safetensors file: the updated weights and optimizer state of a training step (hir.train_step's save); "
        "only for a single process and a program that writes some of its weights",
    )
    p.add_argument(
        "--compile-kernels",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run every compute region and hir.kernel segment compiled by inductor "
        "(--no-compile-kernels: none, op by op; default: those of several ops on cuda, none on cpu)",
    )
    graph = p.add_mutually_exclusive_group()
    graph.add_argument(
        "--cuda-graph",
        dest="cuda_graph",
        action="store_const",
        const=True,
        help="capture the program as a CUDA graph (multi-stream) on the "
        "first run and replay it (cuda, nccl only; an error elsewhere)",
    )
    graph.add_argument(
        "--no-cuda-graph",
        dest="cuda_graph",
        action="store_const",
        const=False,
        help="run every op eagerly (default with no --warmup; with --warmup N the "
        "default captures a graph where it can, like Program(graph='auto'))",
    )
    p.add_argument(
        "--trace",
        metavar="OUT.json",
        help="write a Chrome trace (torch.profiler; CUDA kernels per "
        "stream on cuda) of the run; ranks > 0 write OUT.rankR.json",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say on stderr what the run is doing: ranks starting, "
        "kernels compiling (default: when stderr is a terminal)",
    )
    p.add_argument(
        "--warmup",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="run the program N times before the (traced) run, on the same inputs (default 0)",
    )
    return p


@cli_main("hir-run")
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # A bare --lower must not swallow the file name that follows it: the pipeline is only
    # ever given as --lower=PIPELINE.
    # Intermixed: options may come between the program and its inputs (hir-run p.mlir --print x.pt).
    args = parser().parse_intermixed_args([f"--lower={DEFAULT_LOWERING}" if a == "--lower" else a for a in argv])
    progress.configure("hir-run", args.progress)
    try:
        check_args(args)
    except CliError as err:
        print(f"hir-run: error: {err}", file=sys.stderr)
        return 1
    if args.nproc is not None and "HIR_LAUNCHED" not in os.environ:
        return launch_ranks(args, argv)
    from hir.core import HirError  # after the argument checks: a bad command line is answered without loading MLIR
    from hir.tools.launch import note_failure  # after the argument checks, as hir.core above

    if args.timeout is not None and args.nproc is None:
        stop_rank_after(args.timeout)
    ok = False
    try:
        rc = run_file(args)
        ok = rc == 0
        return rc
    except HirError as err:
        note_failure()
        print(err.message, file=sys.stderr)
        return 1
    except CliError as err:
        note_failure()
        print(f"hir-run: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - a CLI reports, it does not dump tracebacks
        note_failure()
        print(f"hir-run: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    finally:
        if "torch" in sys.modules:
            from hir.interpreter.backends.process_groups import shutdown  # imports torch: the CLI starts without it

            shutdown(wait_for_peers=ok)


def check_args(args: argparse.Namespace) -> None:
    """What can be checked before anything runs: flag combinations and output paths."""
    if args.lower is not None:
        from hir.passes import parse_pipeline  # the passes load only when a pipeline runs or is listed

        try:
            parse_pipeline(args.lower)
        except ValueError as err:
            raise CliError(f"--lower={args.lower}: {err}") from None
    if args.nproc is not None and "HIR_LAUNCHED" not in os.environ:
        check_nproc(args)
        if os.environ.get("HIR_DIST_TIMEOUT") is not None:  # refused here, not by every rank
            from hir.core import (
                HirError,  # after the argument checks: a bad command line is answered without loading MLIR
            )
            from hir.interpreter.backends.process_groups import timeout  # imports torch: the CLI starts without it

            try:
                timeout()
            except HirError as err:
                raise CliError(err.message.removeprefix("error: ")) from None
    if not os.path.exists(args.file) and args.file != "-":
        check_not_a_pipeline(args.file)
    if args.timeout is not None and args.nproc is None and not launched_rank():
        raise CliError(
            "--timeout applies to --nproc runs only, or to the ranks of "
            "a torchrun launch (add --nproc 1 to time-limit one process)"
        )
    # Input specs are files (FILE.pt, N=FILE.npy) or values that name no file.
    inputs = (
        [args.file]
        + [spec.split("=", 1)[-1] for spec in [*args.inputs, *args.input]]
        + ([args.weights] if args.weights else [])
    )
    if args.save_state and args.nproc is not None:
        raise CliError("--save-state applies to single-process runs only (the state of a sharded program is in shards)")
    for flag, path in (("--save", args.save), ("--trace", args.trace), ("--save-state", args.save_state)):
        if path:
            check_writable(flag, path, inputs)


def check_not_a_pipeline(name: str) -> None:
    """``hir-run --lower hir-lower prog.mlir`` takes hir-lower as the program (a bare
    --lower takes no value): when the missing "file" is a pass or pipeline, say so."""
    from hir.passes import PIPELINES, REGISTRY  # the passes load only when a pipeline runs or is listed

    head = name.split("{", 1)[0].split("(", 1)[0]
    if head in REGISTRY or head in PIPELINES or head == "builtin.module":
        raise CliError(
            f"'{name}' is a pass pipeline, not a file: a pipeline for --lower is written with '=': "
            f"--lower={name} (a bare --lower runs {DEFAULT_LOWERING})"
        )


def run_file(args: argparse.Namespace) -> int:
    from hir.core import (  # after the argument checks: a bad command line is answered without loading MLIR
        HirError,
        parse,
        read_source,
    )

    # The file is read, parsed and lowered before torch is imported (seconds): a missing
    # file or a bad program is reported at once.
    name, text = read_source(args.file)
    module = parse(text, name)
    if args.lower is not None:
        from hir.passes import run_pipeline  # the passes load only when a pipeline runs or is listed

        run_pipeline(module, args.lower, source_name=name)

    import torch  # imports torch: the CLI starts without it

    from hir.interpreter import Program  # imports torch: the CLI starts without it
    from hir.interpreter.formatting import format_output, summarize_output  # imports torch: the CLI starts without it
    from hir.interpreter.inputs import (  # imports torch: the CLI starts without it
        InputError,
        make_input,
        parse_assignments,
    )

    device = args.device or os.environ.get("HIR_DEVICE")
    if device:
        check_device("--device" if args.device else "$HIR_DEVICE", device)
    program = Program(
        module,
        entry=args.entry,
        device=args.device,
        num_streams=args.num_streams,
        backend=args.backend,
        compile_kernels="auto" if args.compile_kernels is None else args.compile_kernels,
        source_name=name,
        graph=graph_mode(args),
        weights=args.weights,
    )
    with module.context:
        arg_types = program.plan.arg_types
        if args.weights and not program.recorded_weights.keys:
            raise CliError(
                f"--weights {args.weights}: @{program.entry} reads no weights (no argument has an hir.weight key)"
            )
        try:
            specs = parse_assignments(
                list(args.inputs) + list(args.input), len(arg_types), frozenset(program.recorded_weights.keys)
            )
            weights = program.read_weights({i for i, spec in enumerate(specs) if spec is None})
            inputs = [
                weights[i]
                if spec is None
                else make_input(i, t, spec, rank=program.rank, seed=args.seed, device=program.device)
                for i, (t, spec) in enumerate(zip(arg_types, specs))
            ]
        except InputError as err:
            raise HirError(f"{program.plan.location}: error: @{program.entry} {err}") from None
    world = program.runtime.world_size
    if args.save_state:
        check_writes_state(program, world)
    mark_up(program.rank)
    pause_point("run")  # the test hook: every rank is up, its inputs built
    for _ in range(max(0, args.warmup)):
        program(inputs)
    if args.trace:
        outputs = traced_run(program, inputs, rank_path(args.trace, program.rank, world, ".json"))
    else:
        outputs = program(inputs)
    if program.device.type == "cuda":
        torch.cuda.synchronize(program.device)
    report_compile(program)
    prefix = f"rank {program.rank}: " if world > 1 else ""
    if args.print_outputs:
        write_stdout(
            "".join(
                prefix + line + "\n" for i, value in enumerate(outputs) for line in format_output(i, value).splitlines()
            )
        )
    elif not args.save:  # say what came out: a line per output
        write_stdout("".join(f"{prefix}{summarize_output(i, value)}\n" for i, value in enumerate(outputs)))
    if args.save:
        saved = [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in outputs]
        path = rank_path(args.save, program.rank, world, ".pt")
        write_atomically(path, lambda tmp: torch.save(saved, tmp))
        if not args.print_outputs:
            print(f"{prefix}hir-run: {len(saved)} output(s) saved to {path}", file=sys.stderr)
    if args.save_state:
        save_state(program, inputs, args.save_state)
    return 0


def report_compile(program: "Program") -> None:
    """A stderr line when the runs compiled regions or kernel segments: how many, in how long."""
    stats = program.kernel_compile
    if stats.compiles:
        prefix = f"rank {program.rank}: " if program.runtime.world_size > 1 else ""
        print(f"{prefix}hir-run: {stats.summary()}", file=sys.stderr)


def graph_mode(args: argparse.Namespace):
    """``--cuda-graph`` / ``--no-cuda-graph``, else "auto" when the program runs more than
    once (``--warmup``): a single run gains nothing from a capture."""
    if args.cuda_graph is not None:
        return args.cuda_graph
    return "auto" if args.warmup > 0 else False


if __name__ == "__main__":
    sys.exit(main())
