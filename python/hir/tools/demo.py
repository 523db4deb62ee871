"""hir-demo: the main job. Builds an embedded program-level module (a stream-parallel
matmul followed by an add, as in nvFuser's stream-lowering tests), lowers it with
``hir-lower``, prints it before and after, runs both versions with the torch interpreter on
the same inputs and checks them against eager torch.

    hir-demo                 # CPU
    hir-demo --device cuda   # on a GPU, with real CUDA streams
"""

import sys
from collections.abc import Sequence

import hir
from hir.builder import Builder
from hir.interrupts import cli_main
from hir.tools.cli_common import ArgumentParser, CliError, check_device, positive_int, write_stdout


def build_program(rows: int = 16, k: int = 32, n: int = 8):
    b = Builder()
    x = b.input([None, k], "f32")
    w = b.input([k, n], "f32")
    y = b.matmul(x, w, stream_axis=0)
    b.output(b.add(y, y, stream_axis=0))
    return b.finish()


def describe_run(lowered_run, x, w, out) -> str:
    """What the demo ran, read from the run itself: device, shapes, streams, ranks."""
    device = lowered_run.device
    streams = len(lowered_run.streams.live())
    order = (
        "CUDA streams, concurrent"
        if device.type == "cuda"
        else "CPU: streams keep program order, ops run one after another"
    )
    ranks = lowered_run.runtime.world_size
    return "\n".join(
        [
            f"// ran on {device}, {ranks} rank{'s' if ranks > 1 else ''} "
            "(no torch.distributed: the program has no communication)",
            f"//   inputs x {list(x.shape)} f32, w {list(w.shape)} "
            f"f32 -> output (x @ w) + (x @ w) {list(out.shape)} f32",
            "//   program-level run: each op whole, on the current stream",
            f"//   lowered run: {x.shape[0]} stream-loop iterations on {streams} "
            f"of {lowered_run.streams.num_streams} pool streams ({order})",
        ]
    )


@cli_main("hir-demo")
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="hir-demo", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument(
        "--rows",
        type=positive_int,
        default=16,
        help="rows of the input x (the stream-parallel extent: one loop iteration per row; default 16)",
    )
    args = parser.parse_args(argv)
    try:
        check_device("--device", args.device)
    except CliError as err:
        print(f"hir-demo: error: {err}", file=sys.stderr)
        return 1
    try:
        return demo(args)
    except CliError as err:  # stdout could not be written
        print(f"hir-demo: error: {err}", file=sys.stderr)
        return 1
    except (RuntimeError, MemoryError) as err:  # torch's allocation failures
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        print(f"hir-demo: error: --rows {args.rows} on {args.device}: {first}", file=sys.stderr)
        return 1


def demo(args) -> int:
    """Build, lower and run the demo program on ``args.rows`` rows; 0 when both runs match torch."""
    import torch  # imports torch: the CLI starts without it

    program = build_program()
    before = str(program)
    say("// ===== program level =====")
    say(before)
    lowered = hir.parse(before)
    hir.lower(lowered, "hir-lower")
    say("// ===== after hir-lower =====")
    say(str(lowered))

    from hir.interpreter import Program  # imports torch: the CLI starts without it

    torch.manual_seed(0)
    x = torch.randn(args.rows, 32, device=args.device)
    w = torch.randn(32, 8, device=args.device)
    reference = ((x @ w) * 2).cpu()
    program_run = Program(program, device=args.device)
    lowered_run = Program(lowered, device=args.device)
    out_program = program_run([x, w])[0].cpu()
    out_lowered = lowered_run([x, w])[0].cpu()
    err_program = (out_program - reference).abs().max().item()
    err_lowered = (out_lowered - reference).abs().max().item()
    say(describe_run(lowered_run, x, w, out_lowered))
    say(f"// program-level run: max |error| vs torch = {err_program:.2e}")
    say(f"// lowered run:       max |error| vs torch = {err_lowered:.2e}")
    ok = torch.allclose(out_program, reference, atol=1e-4) and torch.allclose(out_lowered, reference, atol=1e-4)
    say("// demo: OK" if ok else "// demo: MISMATCH")
    return 0 if ok else 1


def say(text: str) -> None:
    """A line on stdout, checked (a full disk raises CliError)."""
    write_stdout(f"{text}\n")


if __name__ == "__main__":
    sys.exit(main())
