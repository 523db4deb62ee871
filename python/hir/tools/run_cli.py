"""``hir-run``: execute an hir module with torch and print or save its outputs.

Errors are printed as ``file:line:col: error: ...`` on stderr with exit status 1."""

import argparse
import os
import sys
from typing import Optional, Sequence

HELP_EPILOG = """\
inputs (one per entry-function argument, in order; unspecified ones are random):
  random[:SHAPE]  normal (floats) or integers in [-8, 8] from --seed   (default)
  zeros[:SHAPE] | ones[:SHAPE] | arange[:SHAPE]
  FILE.pt | FILE.npy   a saved global tensor
  NUMBER          the value of an index / integer / float argument
  N=SPEC          gives SPEC to argument N (later plain specs continue from N+1)
  SHAPE is the GLOBAL shape, like 8x4; it is required for types with dynamic dims
  (memref<?x4xf32> needs e.g. --input random:8x4). Each rank keeps its shard of
  every global input (#hir.shard memory space), so all ranks see one global tensor.

multi-process runs:
  hir-run --nproc 4 prog.mlir             4 local processes (gloo on CPU by default)
  torchrun --nproc_per_node 4 --no-python hir-run prog.mlir   (or: torchrun ... -m hir.tools.run_cli)
  Outputs print per rank ("rank R: " prefix), in rank order. If a rank fails the
  others are stopped; collectives give up after $HIR_DIST_TIMEOUT s (default 60).

environment: HIR_DEVICE sets the default device (else cuda if available, else cpu).
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hir-run",
        description="Run an hir module's entry function with torch (SPMD over torch.distributed ranks).",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the .mlir module ('-' for stdin)")
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="input specs (see below)")
    p.add_argument("-i", "--input", action="append", default=[], metavar="SPEC", help="an input spec (repeatable; after positional ones)")
    p.add_argument("--entry", help="entry function (default: @main, else the only public non-kernel function)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: $HIR_DEVICE, else cuda if available, else cpu)")
    p.add_argument("--num-streams", type=int, default=None, help="size of the stream pool when the module has no hir.num_streams (default 4); must agree with it otherwise")
    p.add_argument("--backend", choices=("gloo", "nccl"), help="process-group backend (default: nccl on cuda, gloo on cpu)")
    p.add_argument("--nproc", type=int, help="start this many local processes as the ranks of the run")
    p.add_argument("--timeout", type=float, default=None, help="with --nproc: stop the run after this many seconds")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    p.add_argument("--print", dest="print_outputs", action="store_true", help="print the outputs")
    p.add_argument("--save", metavar="OUT.pt", help="save the outputs (a list of tensors) with torch.save; ranks > 0 of a multi-process run write OUT.rankR.pt")
    p.add_argument("--compile-kernels", action="store_true", help="run hir.kernel functions through torch.compile")
    graph = p.add_mutually_exclusive_group()
    graph.add_argument(
        "--cuda-graph", dest="cuda_graph", action="store_const", const=True,
        help="capture the program as a CUDA graph (multi-stream) on the first run and replay it (cuda, nccl only; an error elsewhere)",
    )
    graph.add_argument(
        "--no-cuda-graph", dest="cuda_graph", action="store_const", const=False,
        help="run every op eagerly (default with no --warmup; with --warmup N the default captures a graph where it can, like Program(graph='auto'))",
    )
    p.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace (torch.profiler; CUDA kernels per stream on cuda) of the run; ranks > 0 write OUT.rankR.json")
    p.add_argument("--warmup", type=int, default=0, metavar="N", help="run the program N times before the (traced) run, on the same inputs (default 0)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    if args.nproc is not None and "HIR_LAUNCHED" not in os.environ:
        return launch_ranks(args, argv)
    from hir.core import HirError

    from hir.tools.launch import note_failure

    ok = False
    try:
        rc = run_file(args)
        ok = rc == 0
        return rc
    except HirError as err:
        note_failure()
        print(str(err), file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - a CLI reports, it does not dump tracebacks
        note_failure()
        print(f"hir-run: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    finally:
        if "torch" in sys.modules:
            from hir.interpreter.backends.process_groups import shutdown

            shutdown(wait_for_peers=ok)


def launch_ranks(args: argparse.Namespace, argv: list[str]) -> int:
    """``--nproc N``: rerun this command line as N ranks and report in rank order."""
    from hir.tools.launch import launch

    if args.nproc < 1:
        print(f"hir-run: error: --nproc must be >= 1, got {args.nproc}", file=sys.stderr)
        return 1
    env = dict(os.environ, HIR_LAUNCHED="1")
    result = launch(args.nproc, [sys.executable, "-m", "hir.tools.run_cli", *argv], timeout_s=args.timeout, env=env)
    for rank in result.ranks:
        sys.stdout.write(rank.stdout)
    if result.first_failure is not None:
        failed = result.ranks[result.first_failure]
        sys.stderr.write(failed.stderr)
        if args.nproc > 1:
            others = [r.rank for r in result.ranks if r.returncode not in (0, None) and not r.stopped and r.rank != failed.rank]
            also = f" (then rank(s) {', '.join(map(str, others))} failed too)" if others else ""
            print(f"hir-run: rank {failed.rank} failed{also}; stopped the other ranks", file=sys.stderr)
    elif result.timed_out:
        print(f"hir-run: the run did not finish within {args.timeout} s; stopped all ranks", file=sys.stderr)
    else:
        for rank in result.ranks:
            sys.stderr.write(rank.stderr)
    return result.returncode


def run_file(args: argparse.Namespace) -> int:
    import torch

    from hir.core import HirError, parse
    from hir.interpreter import Program
    from hir.interpreter.formatting import format_output
    from hir.interpreter.inputs import InputError, build_inputs, parse_assignments

    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file).read()
    except OSError as err:
        raise HirError(f"{name}: error: cannot read: {err.strerror}") from None
    module = parse(text, name)
    program = Program(
        module,
        entry=args.entry,
        device=args.device,
        num_streams=args.num_streams,
        backend=args.backend,
        compile_kernels=args.compile_kernels,
        source_name=name,
        graph=graph_mode(args),
    )
    with module.context:
        arg_types = program.plan.arg_types
        try:
            specs = parse_assignments(list(args.inputs) + list(args.input), len(arg_types))
            inputs = build_inputs(arg_types, specs, rank=program.rank, seed=args.seed, device=program.device)
        except InputError as err:
            raise HirError(f"{program.plan.location}: error: @{program.entry} {err}") from None
    world = program.runtime.world_size
    for _ in range(max(0, args.warmup)):
        program(inputs)
    if args.trace:
        outputs = traced_run(program, inputs, rank_path(args.trace, program.rank, world, ".json"))
    else:
        outputs = program(inputs)
    if program.device.type == "cuda":
        torch.cuda.synchronize(program.device)
    if args.print_outputs:
        prefix = f"rank {program.rank}: " if world > 1 else ""
        for i, value in enumerate(outputs):
            for line in format_output(i, value).splitlines():
                print(prefix + line)
    if args.save:
        path = rank_path(args.save, program.rank, world, ".pt")
        torch.save([v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in outputs], path)
    return 0


def graph_mode(args: argparse.Namespace):
    """``--cuda-graph`` / ``--no-cuda-graph``, else "auto" when the program runs more than
    once (``--warmup``): a single run gains nothing from a capture."""
    if args.cuda_graph is not None:
        return args.cuda_graph
    return "auto" if args.warmup > 0 else False


def rank_path(path: str, rank: int, world: int, default_ext: str) -> str:
    """``path`` for rank 0 (or a single process); ``ROOT.rankR.EXT`` for the other ranks."""
    if world > 1 and rank > 0:
        root, ext = os.path.splitext(path)
        return f"{root}.rank{rank}{ext or default_ext}"
    return path


def traced_run(program, inputs, path: str) -> list:
    """Run once under torch.profiler (CPU activity, plus CUDA kernels and copies with their
    streams on cuda) and write a Chrome trace (chrome://tracing, ui.perfetto.dev)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from hir.core import HirError

    cuda = program.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        outputs = program(inputs)
        if cuda:
            torch.cuda.synchronize(program.device)
    try:
        prof.export_chrome_trace(path)
    except OSError as err:
        raise HirError(f"{path}: error: cannot write the trace: {err.strerror}") from None
    return outputs


if __name__ == "__main__":
    sys.exit(main())
