"""What hir-opt, hir-run, hir-demo and hir-import share: an argument parser whose usage errors exit
with status 1 (not argparse's 2), argument types, and (from :mod:`hir.outputs`) checked
stdout writes (a full disk is one line and status 1; a closed pipe is not an error) and
output files replaced only once complete."""

import argparse
import sys
from importlib import metadata
from typing import NoReturn

from hir.outputs import CliError, check_writable, flush_stdout, write_atomically, write_stdout, write_text  # noqa: F401 - the CLIs' imports


class ArgumentParser(argparse.ArgumentParser):
    """argparse with exit status 1 for usage errors, like every other hir error, and a
    ``--version`` flag."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=VersionAction)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


class VersionAction(argparse.Action):
    """``--version``: the versions of hir, torch-mlir (the MLIR bindings) and torch, read from
    the installed packages' metadata (no torch import: hir-opt's cold start stays short)."""

    def __init__(self, option_strings: list, dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print the versions of hir, torch-mlir (MLIR) and torch, then exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: object = None,
    ) -> None:
        try:
            write_stdout(versions(parser.prog))
        except CliError as err:
            parser.exit(1, f"{parser.prog}: error: {err}\n")
        parser.exit(0)


def versions(prog: str) -> str:
    def version(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (
        f"{prog} (hir) {version('hir')}\n"
        f"torch-mlir {version('torch-mlir')} (MLIR and its Python bindings)\n"
        f"torch {version('torch')}\n"
    )


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def check_device(flag: str, text: str) -> None:
    """``text`` must name cpu, or a CUDA device this machine has."""
    import torch  # imports torch: the CLI starts without it

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise CliError(f"{flag} {text}: not a device (cpu, cuda or cuda:N)")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise CliError(f"{flag} {text}: CUDA is not available on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise CliError(f"{flag} {text}: this machine has {torch.cuda.device_count()} CUDA device(s)")
