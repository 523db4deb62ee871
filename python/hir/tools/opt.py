"""hir-opt: an mlir-opt-style driver for hir modules.

    hir-opt input.mlir --pass-pipeline='builtin.module(hir-lower)' -o out.mlir
    hir-opt invalid.mlir --split-input-file --verify-diagnostics
    hir-opt input.mlir -p 'builtin.module(hir-lower)' --print-value-names   # %stream, not %1

Errors print as ``file:line:col: error: message`` and exit with status 1 (2: an internal
error, a bug in hir). hir-opt never imports torch.
"""

import argparse
import difflib
import os
import sys
from collections.abc import Sequence

import torch_mlir.dialects
from torch_mlir import ir

from hir.core import HirError, format_mlir_error, locate_custom_syntax, new_context, read_source
from hir.dialect import HirDialect
from hir.dialect.context import check_nesting
from hir.dialect.placement_checks import check_placements, may_hold_placements
from hir.dialect.streams import module_attribute_errors
from hir.interrupts import cli_main
from hir.tools.cli_common import ArgumentParser, CliError, check_writable, positive_int, write_atomically, write_stdout
from hir.tools.opt_diagnostics import Diagnostic, check_expected, parse_diagnostics, with_source_lines
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
    p.add_argument(
        "--split-input-file", action="store_true", help="process chunks separated by '// -----' independently"
    )
    p.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against expected-* comments")
    p.add_argument("--mlir-print-ir-before-all", action="store_true", help="print the IR before every pass (stderr)")
    p.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument(
        "--mlir-print-ir-after",
        action="append",
        default=[],
        metavar="PASS",
        help="print the IR after the pass PASS (stderr; its argument, e.g. hir-fuse-loops or cse; "
        "repeat the flag or separate names with commas for several)",
    )
    p.add_argument(
        "--mlir-print-ir-after-change",
        action="store_true",
        help="with --mlir-print-ir-after(-all): print the IR only after passes that changed it",
    )
    p.add_argument(
        "--mlir-elide-elementsattrs-if-larger",
        type=positive_int,
        metavar="N",
        help='print elements attributes of more than N elements as "..." (output and IR dumps)',
    )
    p.add_argument(
        "--mlir-print-op-generic",
        action="store_true",
        help="print every op in MLIR's generic form (hir ops always print so; this adds func, memref, ...)",
    )
    p.add_argument(
        "--mlir-disable-threading",
        action="store_true",
        help="accepted as mlir-opt takes it: hir-opt always runs on one thread (its passes run in Python)",
    )
    p.add_argument(
        "--verify-each",
        default="true",
        choices=["true", "false"],
        help="verify after every pass (default true); false verifies once at the end",
    )
    p.add_argument("--mlir-timing", action="store_true", help="print the PassManager's timing report (stderr)")
    p.add_argument(
        "--mlir-pass-statistics", action="store_true", help="print the PassManager's pass statistics (stderr)"
    )
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print op locations")
    p.add_argument(
        "--print-value-names",
        action="store_true",
        help="name values by their name locations (%%user_stream, %%arg0_slice, ... as the passes "
        "name what they create; duplicates get _0, _1) instead of %%0, %%1",
    )
    p.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="allow operations of dialects that are not loaded (kept as opaque generic ops)",
    )
    p.add_argument(
        "--list-passes", action="store_true", help="list hir passes (with their options) and pipelines, then exit"
    )
    p.add_argument("--show-dialects", action="store_true", help="list the dialects hir-opt reads, then exit")
    p.add_argument("--emit-irdl", action="store_true", help="print the hir dialect's IRDL definition, then exit")
    return p


IRDL_HEADER = (
    "// The hir dialect in IRDL, generated from the op classes: hir-opt --emit-irdl > dialect/hir.irdl.mlir\n"
    "// (test/python/test_op_docs.py fails when it is stale). Upstream tools load it with\n"
    '// --irdl-file; see the README, "hir IR in upstream tools".\n'
)


def emit_irdl() -> str:
    with new_context():
        return IRDL_HEADER + str(HirDialect._mlir_module) + "\n"


def show_dialects() -> str:
    """mlir-opt's ``--show-dialects`` line: every dialect hir-opt's context knows (torch-mlir's
    Python packages name the candidates; the context says which it registers)."""
    import pkgutil  # only for --show-dialects: hir-opt's start does without it

    candidates = {"hir", "builtin"} | {
        m.name[1:].removesuffix("_ops_gen")
        for m in pkgutil.iter_modules(torch_mlir.dialects.__path__)
        if m.name.startswith("_") and m.name.endswith("_ops_gen")
    }
    ctx = new_context()
    known = []
    for name in sorted(candidates):
        try:
            ctx.get_dialect_descriptor(name)
        except ValueError:
            continue
        known.append(name)
    return f"Available Dialects: {', '.join(known)}\n"


def split_chunks(text: str, split: bool) -> list[str]:
    """Chunks padded with newlines so that line numbers match the whole file."""
    if not split:
        return [text]
    chunks, line = [], 0
    for piece in text.split(SPLIT_MARKER):
        chunks.append("\n" * line + piece)
        line += piece.count("\n")
    return chunks


def process_chunk(chunk: str, args: argparse.Namespace, source: str) -> tuple[bytes | None, list[Diagnostic]]:
    """Parse, transform and print one chunk: (printed module (UTF-8) or None, diagnostics)."""
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
        placement_errors = (
            check_placements(module.operation, source) if may_hold_placements(chunk) else []
        ) + module_attribute_errors(module, source)
        if placement_errors:
            return None, parse_diagnostics("\n".join(placement_errors))
        if args.pass_pipeline:
            from hir.passes import (  # the passes load only when a pipeline runs or is listed
                Instrumentation,
                run_pipeline,
            )

            inst = Instrumentation(verify_each=args.verify_each == "true")
            # Flags add to what HIR_DUMP asked for.
            inst.print_before_all |= args.mlir_print_ir_before_all
            inst.print_after_all |= args.mlir_print_ir_after_all
            inst.print_after = tuple(
                name.strip() for names in args.mlir_print_ir_after for name in names.split(",") if name.strip()
            )
            inst.print_after_change = args.mlir_print_ir_after_change
            inst.large_elements_limit = args.mlir_elide_elementsattrs_if_larger
            inst.timing |= args.mlir_timing
            inst.statistics |= args.mlir_pass_statistics
            try:
                run_pipeline(module, args.pass_pipeline, inst, source)
            except HirError as err:
                return None, parse_diagnostics(err.message)
        # Parsing verified the module, and so did the pipeline (after each pass, or at its end):
        # printing need not verify it again. Bytes: a big module's text is not decoded only to
        # be encoded again.
        return module.operation.get_asm(
            binary=True,
            enable_debug_info=args.mlir_print_debuginfo,
            use_name_loc_as_prefix=args.print_value_names,
            print_generic_op_form=args.mlir_print_op_generic,
            large_elements_limit=args.mlir_elide_elementsattrs_if_larger,
            assume_verified=True,
        ), []


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """argparse, then pass flags (what it did not know) turned into ``--pass-pipeline``."""
    parser = build_parser()
    args, unknown = parser.parse_known_intermixed_args(argv)
    if unknown:
        elements, rest = pass_flags(unknown)
        if rest:
            refuse_unknown(parser, rest)
        if args.pass_pipeline:
            parser.error(
                f"--pass-pipeline cannot be combined with pass flags ({' '.join(unknown)}): use one or the other"
            )
        args.pass_pipeline = flags_pipeline(elements)
    return args


def refuse_unknown(parser: argparse.ArgumentParser, arguments: list[str]) -> None:
    """Exit on arguments that are neither options nor passes: a mistyped flag gets one line
    naming the pass, pipeline or option it is closest to, else argparse's usage error."""
    from hir.passes import PIPELINES, REGISTRY  # the passes load only when a pipeline runs or is listed

    known = [
        *REGISTRY,
        *PIPELINES,
        *UPSTREAM_PASSES,
        *(o[2:] for a in parser._actions for o in a.option_strings if o.startswith("--")),
    ]
    for argument in arguments:
        name = argument[2:].split("=", 1)[0] if argument.startswith("--") else None
        close = difflib.get_close_matches(name, known, n=1) if name else []
        if close:
            parser.exit(1, f"{parser.prog}: error: unknown pass or option --{name}; did you mean --{close[0]}?\n")
    parser.error(f"unrecognized arguments: {' '.join(arguments)}")


# Upstream passes a mistyped flag is compared with (MLIR's Python API does not list its registry).
UPSTREAM_PASSES = (
    "canonicalize",
    "cse",
    "inline",
    "symbol-dce",
    "sccp",
    "loop-invariant-code-motion",
    "remove-dead-values",
)


@cli_main("hir-opt")
def main(argv: Sequence[str] | None = None) -> int:
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
        print(
            f"hir-opt: internal error: {type(err).__name__}: {err} (set HIR_DEBUG=1 for a traceback)", file=sys.stderr
        )
        return 2


def _main(args: argparse.Namespace) -> int:
    if args.list_passes:
        write_stdout(list_passes())
        return 0
    if args.emit_irdl:
        write_stdout(emit_irdl())
        return 0
    if args.show_dialects:
        write_stdout(show_dialects())
        return 0
    if args.pass_pipeline:
        from hir.passes import parse_pipeline  # the passes load only when a pipeline runs or is listed

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
                print(with_source_lines("\n".join(problems), text.split("\n"), source), file=sys.stderr)
        elif diagnostics:
            failed = True
            print(with_source_lines("\n".join(d.text for d in diagnostics), text.split("\n"), source), file=sys.stderr)
        if printed is not None:
            outputs.append(printed)
    result = f"\n{SPLIT_MARKER}\n".encode().join(o.rstrip(b"\n") for o in outputs) + b"\n"
    if args.output == "-":
        if outputs:  # as mlir-opt: the chunks that passed are printed even when another failed
            write_stdout(result)
    elif not failed:
        # Written only after everything succeeded, so a failing run leaves the file untouched.
        write_atomically(args.output, lambda tmp: write_bytes(tmp, result))
    return 1 if failed else 0


def write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    sys.exit(main())
