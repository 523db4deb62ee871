"""What hir-opt, hir-run, hir-demo and hir-import share: an argument parser whose usage errors exit
with status 1 (not argparse's 2), checks of output paths made before anything runs, and
writes that replace a file only once its new content is complete."""

import argparse
import os
import sys
import tempfile
from typing import Callable, NoReturn


class CliError(Exception):
    """A bad command line or environment: ``str(err)`` is the whole message."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with exit status 1 for usage errors, like every other hir error."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


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


def check_writable(flag: str, path: str) -> None:
    """Fail now, before any work, if ``path`` cannot be written as a new or replaced file."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise CliError(f"{flag} {path}: is a folder, expected a file name")
    if not os.path.isdir(folder):
        raise CliError(f"{flag} {path}: the folder '{folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"{flag} {path}: the folder '{folder}' is not writable")


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then move it onto ``path``:
    a failed or partial write leaves ``path`` as it was. ``write`` must create ``tmp``."""
    folder = os.path.dirname(path) or "."
    root, ext = os.path.splitext(os.path.basename(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{root}.", suffix=ext, dir=folder)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        write(tmp)
        if not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
            raise CliError(f"{path}: cannot write (nothing was written)")
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would leak into the result
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # torch.save reports I/O failures as RuntimeError
        raise CliError(f"{path}: cannot write: {getattr(err, 'strerror', None) or err}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def check_device(flag: str, text: str) -> None:
    """``text`` must name cpu, or a CUDA device this machine has."""
    import torch

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
