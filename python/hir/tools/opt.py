"""hir-opt: an mlir-opt-style driver for hir modules.

    hir-opt input.mlir --pass-pipeline='builtin.module(hir-lower)' -o out.mlir
    hir-opt invalid.mlir --split-input-file --verify-diagnostics
    hir-opt input.mlir -p 'builtin.module(hir-lower)' --print-value-names   # %stream, not %1

Errors print as ``file:line:col: error: message`` and exit with status 1 (2: an internal
error, a bug in hir). hir-opt never imports torch.
"""

import argparse
import os
import sys
from typing import Optional, Sequence

from torch_mlir import ir

from hir.interrupts import cli_main
from hir.tools.cli_common import ArgumentParser, CliError, check_writable, write_atomically, write_text, write_stdout
from hir.dialect.placement_checks import check_placements
from hir.dialect.streams import module_attribute_errors
from hir.dialect.context import check_nesting
from hir.core import HirError, format_mlir_error, locate_custom_syntax, new_context, read_source
from hir.tools.opt_diagnostics import Diagnostic, check_expected, parse_diagnostics
from hir.tools.opt_passes import flags_pipeline, list_passes, pass_flags

SPLIT_MARKER = "// -----"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="hir-opt",
        allow_abbrev=False,  # --cse is a pass flag, never an abbreviation of an option
        description="Parse, verify, transform and print hir modules (generic MLIR form). "
        "Without --pass-pipeline it only parses, verifies and prints.",
        epilog="Pipelines mix hir passes (see --list-passes) with upstream ones: "
        "--pass-pipeline='builtin.module(hir-stream-lowering,canonicalize,cse)', or as pass flags applied "
        "in order, as mlir-opt takes them: --hir-stream-lowering=chunks=2 --canonicalize --cse. "
        "Pass options: name{key=value key2=value2}. Env HIR_DISABLE_PASSES=a,b skips passes; "
        "HIR_DUMP=ir-before-all,ir-after-all,timing,statistics prints as the --mlir-* flags do. "
        "Exit status: 0 success, 1 an error in the input or command line, 2 an internal error.",
    )
    p.add_argument("input", nargs="?", default="-", help="input file ('-' or omitted: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("--pass-pipeline", "-p", default="", help="textual pass pipeline, e.g. 'builtin.module(hir-lower)'")
    p.add_argument("--split-input-file", action="store_true", help="process chunks separated by '// -----' independently")
    p.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against expected-* comments")
    p.add_argument("--mlir-print-ir-before-all", action="store_true", help="print the IR before every pass (stderr)")
    p.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--verify-each", default="true", choices=["true", "false"],
                   help="verify after every pass (default true); false verifies once at the end")
    p.add_argument("--mlir-timing", action="store_true", help="print the PassManager's timing report (stderr)")
    p.add_argument("--mlir-pass-statistics", action="store_true", help="print the PassManager's pass statistics (stderr)")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print op locations")
    p.add_argument("--print-value-names", action="store_true",
                   help="name values by their name locations (%%user_stream, %%arg0_slice, ... as the passes "
                   "name what they create; duplicates get _0, _1) instead of %%0, %%1")
    p.add_argument("--allow-unregistered-dialect", action="store_true", help="allow operations of dialects that are not loaded (kept as opaque generic ops)")
    p.add_argument("--list-passes", action="store_true", help="list hir passes (with their options) and pipelines, then exit")
    p.add_argument("--emit-irdl", action="store_true", help="print the hir dialect's IRDL definition, then exit")
    return p


IRDL_HEADER = (
    "// The hir dialect in IRDL, generated from the op classes: hir-opt --emit-irdl > dialect/hir.irdl.mlir\n"
    "// (test/python/test_op_docs.py fails when it is stale). Upstream tools load it with\n"
    "// --irdl-file; see the README, \"hir IR in upstream tools\".\n"
)


def emit_irdl() -> str:
    from hir.dialect import HirDialect

    with new_context():
        return IRDL_HEADER + str(HirDialect._mlir_module) + "\n"


def split_chunks(text: str, split: bool) -> list[str]:
    """Chunks padded with newlines so that line numbers match the whole file."""
    if not split:
        return [text]
    chunks, line = [], 0
    for piece in text.split(SPLIT_MARKER):
        chunks.append("\n" * line + piece)
        line += piece.count("\n")
    return chunks


def process_chunk(chunk: str, args: argparse.Namespace, source: str) -> tuple[Optional[str], list[Diagnostic]]:
    """Parse, transform and print one chunk: (printed module or None, diagnostics)."""
    try:
        check_nesting(chunk, source)
    except HirError as err:
        return None, parse_diagnostics(err.message)
    ctx = new_context()
    ctx.allow_unregistered_dialects = args.allow_unregistered_dialect
    with ctx:
        try:
            module = ir.Module.parse(chunk)
        except ir.MLIRError as err:
            located = None if err.error_diagnostics else locate_custom_syntax(chunk, source)
            return None, parse_diagnostics(located or format_mlir_error(err, source))
        placement_errors = check_placements(module.operation, source) + module_attribute_errors(module, source)
        if placement_errors:
            return None, parse_diagnostics("\n".join(placement_errors))
        if args.pass_pipeline:
            from hir.passes import Instrumentation, run_pipeline

            inst = Instrumentation(verify_each=args.verify_each == "true")
            # Flags add to what HIR_DUMP asked for.
            inst.print_before_all |= args.mlir_print_ir_before_all
            inst.print_after_all |= args.mlir_print_ir_after_all
            inst.timing |= args.mlir_timing
            inst.statistics |= args.mlir_pass_statistics
            try:
                run_pipeline(module, args.pass_pipeline, inst, source)
            except HirError as err:
                return None, parse_diagnostics(err.message)
        return module.operation.get_asm(enable_debug_info=args.mlir_print_debuginfo, use_name_loc_as_prefix=args.print_value_names), []


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """argparse, then pass flags (what it did not know) turned into ``--pass-pipeline``."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        elements, rest = pass_flags(unknown)
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        if args.pass_pipeline:
            parser.error(f"--pass-pipeline cannot be combined with pass flags ({' '.join(unknown)}): use one or the other")
        args.pass_pipeline = flags_pipeline(elements)
    return args


@cli_main("hir-opt")
def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        return _main(args)
    except HirError as err:  # an unreadable input file
        print(err.message, file=sys.stderr)
        return 1
    except (ValueError, CliError) as err:  # malformed pipeline or pass options, bad -o
        print(f"hir-opt: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a bug in hir: say so without a traceback unless asked
        if os.environ.get("HIR_DEBUG"):
            raise
        print(f"hir-opt: internal error: {type(err).__name__}: {err} (set HIR_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    if args.list_passes:
        write_stdout(list_passes())
        return 0
    if args.emit_irdl:
        write_stdout(emit_irdl())
        return 0
    if args.pass_pipeline:
        from hir.passes import parse_pipeline

        parse_pipeline(args.pass_pipeline)  # fail fast on a malformed pipeline
    if args.output != "-":
        check_writable("-o", args.output, [args.input])
    source, text = read_source(args.input)

    outputs, failed = [], False
    for chunk in split_chunks(text, args.split_input_file):
        printed, diagnostics = process_chunk(chunk, args, source)
        if args.verify_diagnostics:
            problems = check_expected(chunk, diagnostics, source)
            if problems:
                failed = True
                print("\n".join(problems), file=sys.stderr)
        elif diagnostics:
            failed = True
            print("\n".join(d.text for d in diagnostics), file=sys.stderr)
        if printed is not None:
            outputs.append(printed)
    if failed:
        return 1
    result = f"\n{SPLIT_MARKER}\n".join(o.rstrip("\n") for o in outputs) + "\n"
    if args.output == "-":
        write_stdout(result)
    else:
        # Write only after everything succeeded, so a failing run leaves the file untouched.
        write_atomically(args.output, lambda tmp: write_text(tmp, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
