"""hir-demo: the main job. Builds an embedded program-level module (a stream-parallel
matmul followed by an add, as in nvFuser's stream-lowering tests), lowers it with
``hir-lower``, prints it before and after, runs both versions with the torch interpreter on
the same inputs and checks them against eager torch.

    hir-demo                 # CPU
    hir-demo --device cuda   # on a GPU, with real CUDA streams
"""

import sys
from typing import Optional, Sequence

from hir.builder import Builder
from hir.cli_common import ArgumentParser, CliError, check_device, positive_int


def build_program(rows: int = 16, k: int = 32, n: int = 8):
    b = Builder()
    x = b.input([None, k], "f32")
    w = b.input([k, n], "f32")
    y = b.matmul(x, w, stream_axis=0)
    b.output(b.add(y, y, stream_axis=0))
    return b.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="hir-demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument("--rows", type=positive_int, default=16,
                        help="rows of the input x (the stream-parallel extent: one loop iteration per row; default 16)")
    args = parser.parse_args(argv)
    try:
        check_device("--device", args.device)
    except CliError as err:
        print(f"hir-demo: error: {err}", file=sys.stderr)
        return 1

    import torch

    import hir

    program = build_program()
    before = str(program)
    print("// ===== program level =====")
    print(before)
    lowered = hir.parse(before)
    hir.lower(lowered, "hir-lower")
    print("// ===== after hir-lower =====")
    print(lowered)

    torch.manual_seed(0)
    x = torch.randn(args.rows, 32, device=args.device)
    w = torch.randn(32, 8, device=args.device)
    reference = ((x @ w) * 2).cpu()
    out_program = hir.run(program, [x, w], device=args.device)[0].cpu()
    out_lowered = hir.run(lowered, [x, w], device=args.device)[0].cpu()
    err_program = (out_program - reference).abs().max().item()
    err_lowered = (out_lowered - reference).abs().max().item()
    print(f"// program-level run: max |error| vs torch = {err_program:.2e}")
    print(f"// lowered run:       max |error| vs torch = {err_lowered:.2e}")
    ok = torch.allclose(out_program, reference, atol=1e-4) and torch.allclose(out_lowered, reference, atol=1e-4)
    print("// demo: OK" if ok else "// demo: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
