"""Output files, written so that a failure leaves them as they were: checks of output paths
made before anything runs, and writes that replace a regular file only once its new content
is complete and on disk (flushed and synced, keeping its mode, through symlinks) and write
devices and FIFOs in place; and stdout written through its file descriptor with every byte
accounted for, so a full disk or an I/O error (ENOSPC, EIO, EFBIG past ``ulimit -f``) is a
:class:`CliError`, never a truncated output and exit status 0 (a large ``sys.stdout.write``
can lose the error of a short write). Used by the CLIs (stdout, hir-opt -o, hir-import -o,
hir-run --save / --trace) and by ``TorchProgram.save``; below every layer (no hir import)."""

import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from hir.interrupts import pause_point


class CliError(Exception):
    """A bad command line, environment or output path: ``str(err)`` is the whole message."""


def _in_place(path: str) -> bool:
    """Whether ``path`` names something other than a regular file (``-``, ``/dev/stdout``, a
    device, a FIFO): such a destination is written, never replaced."""
    if path == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)  # follows symlinks
    except OSError:  # nothing there yet (or a dangling symlink): a new regular file
        return False


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_writable(flag: str, path: str, inputs: Sequence[str] = ()) -> None:
    """Fail now, before any work, if ``path`` cannot be written, or if it is one of this run's
    ``inputs`` (writing it would destroy what the run reads)."""
    for source in inputs:
        if source != "-" and path != "-" and _same_file(source, path):
            raise CliError(f"{flag} {path}: is also an input of this run ({source}); write the output to another file")
    if os.path.isdir(path):
        raise CliError(f"{flag} {path}: is a folder, expected a file name")
    if _in_place(path):
        if path != "-" and not os.access(path, os.W_OK):
            raise CliError(f"{flag} {path}: is not writable")
        return
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise CliError(f"{flag} {path}: the folder '{os.path.dirname(path) or folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"{flag} {path}: the folder '{folder}' is not writable")


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to the file ``path``, every byte accounted for."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        _write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until all of ``data`` is written; a write error raises (OSError)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(0, "the write made no progress")
        view = view[written:]


def write_stdout(text: str | bytes) -> None:
    """Write ``text`` (or bytes) to stdout, after what was printed before (flushed first), checked: a
    failed write (a full disk, an I/O error) raises :class:`CliError` naming stdout and the
    reason, and drops whatever is still buffered (Python's own flush at exit would fail
    again). A reader that closed the pipe early (``| head``) has what it wanted: the rest is
    dropped quietly and the command still succeeds, like other filters."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation: stdout captured in-process
        fd = None
    try:
        sys.stdout.flush()
        if fd is None:
            if isinstance(text, bytes):
                sys.stdout.buffer.write(text)
            else:
                sys.stdout.write(text)
            sys.stdout.flush()
        else:
            _write_all(
                fd,
                text
                if isinstance(text, bytes)
                else text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"),
            )
    except BrokenPipeError:
        discard_stdout()
    except OSError as err:
        discard_stdout()
        raise CliError(f"stdout: cannot write: {err.strerror or err}") from None


def flush_stdout() -> None:
    """Flush what was printed to stdout, checked as :func:`write_stdout`."""
    write_stdout(b"")


def discard_stdout() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered (and any later print)
    goes nowhere instead of failing again when Python flushes at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation, OSError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """Write ``path`` with ``write(name)``, which must create or overwrite the file ``name``.

    A regular file (new, or existing; a symlink is followed to its target) is written as a
    temporary file next to it and moved onto it once complete, so a failed or partial write
    leaves it as it was; an existing file keeps its mode (and owner, where allowed). Anything
    else (``-`` or ``/dev/stdout``, a device node, a FIFO) is written in place: replacing it
    would turn ``/dev/null`` into a regular file."""
    if _in_place(path):
        _write_in_place(path, write)
        return
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    root, ext = os.path.splitext(os.path.basename(target))
    try:
        old = os.stat(target)
    except OSError:
        old = None
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{root}.", suffix=ext, dir=folder)
        os.close(fd)
        write(tmp)
        pause_point("write")  # the test hook: the new file is written, not yet in place
        if not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
            raise CliError(f"{path}: cannot write (nothing was written)")
        _sync(tmp)  # a full disk or an I/O error may only show when the data reaches it
        _copy_mode(tmp, old)
        os.replace(tmp, target)
    except (OSError, RuntimeError) as err:  # torch.save reports I/O failures as RuntimeError
        raise CliError(f"{path}: cannot write: {getattr(err, 'strerror', None) or err}") from None
    finally:
        if tmp and os.path.exists(tmp):
            os.remove(tmp)


def _sync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_in_place(path: str, write: Callable[[str], None]) -> None:
    """``write`` into a private temporary file, then copy its bytes into ``path`` opened for
    writing: some writers (torch.profiler's trace export) replace the file they are given,
    which would turn a FIFO or ``/dev/null`` into a regular file."""
    try:
        with tempfile.TemporaryDirectory(prefix="hir-out-") as folder:
            tmp = os.path.join(folder, "out" + os.path.splitext(path)[1])
            write(tmp)
            with open(tmp, "rb") as src:
                data = src.read()
            if path == "-":
                write_stdout(data)
            else:
                with open(path, "wb") as dst:
                    _write_all(dst.fileno(), data)
    except (OSError, RuntimeError) as err:
        raise CliError(f"{path}: cannot write: {getattr(err, 'strerror', None) or err}") from None


def _copy_mode(tmp: str, old: os.stat_result | None) -> None:
    """Give ``tmp`` the mode (and owner) of the file it replaces, else a new file's mode."""
    if old is None:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would leak into the result
        return
    os.chmod(tmp, stat.S_IMODE(old.st_mode))
    if hasattr(os, "chown"):
        try:
            os.chown(tmp, old.st_uid, old.st_gid)
        except PermissionError:  # not ours to give away: the new file stays the writer's
            pass


@contextmanager
def captured_fd2() -> Iterator[list[str]]:
    """Capture what is written to file descriptor 2 meanwhile (C++ code writing past Python's
    ``sys.stderr``: MLIR's pipeline parser, the profiler's ``USDT:`` lines), so the caller
    reports it in its own format or drops it; the list holds the text once the block ends."""
    captured: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))
