#!/usr/bin/env python3
"""Nothing the test suite runs replaces a destination it should not (issue 27's acceptance):
``/dev/null``, a symlink and a 0600 file, set up before lit and pytest, are intact after them;
then hir-opt itself writes to each, and each is still what it was (a character device; a
symlink whose target got the output; a 0600 file). ``scripts/check`` runs it around the
suite, so CI (which runs as root, where replacing /dev/null is possible) shows it.

    python scripts/check_destinations.py setup DIR    # before the suite
    python scripts/check_destinations.py verify DIR   # after it: exit 1 naming what changed
"""

import os
import stat
import subprocess
import sys

PROGRAM = "func.func @main() {\n  return\n}\n"
TARGET = "// the symlink's target\n"
PRIVATE = "// a private file\n"


def setup(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "target.mlir"), "w") as f:
        f.write(TARGET)
    os.symlink("target.mlir", os.path.join(folder, "link.mlir"))
    private = os.path.join(folder, "private.mlir")
    with open(private, "w") as f:
        f.write(PRIVATE)
    os.chmod(private, 0o600)
    with open(os.path.join(folder, "p.mlir"), "w") as f:
        f.write(PROGRAM)


def problems(folder: str, written: bool) -> list[str]:
    """What is not as it should be; ``written``: hir-opt has written its output to each."""
    out = []
    if not stat.S_ISCHR(os.lstat("/dev/null").st_mode):
        out.append("/dev/null is no longer a character device")
    link = os.path.join(folder, "link.mlir")
    if not os.path.islink(link) or os.readlink(link) != "target.mlir":
        out.append(f"{link} is no longer a symlink to target.mlir")
    target = open(os.path.join(folder, "target.mlir")).read()
    if ("func.func @main" not in target) if written else target != TARGET:
        out.append(
            f"{folder}/target.mlir: {'the output did not reach the target' if written else 'was changed'}: {target!r}"
        )
    private = os.path.join(folder, "private.mlir")
    mode = stat.S_IMODE(os.lstat(private).st_mode)
    if mode != 0o600:
        out.append(f"{private} has mode {oct(mode)}, not 0o600")
    content = open(private).read()
    if ("func.func @main" not in content) if written else content != PRIVATE:
        out.append(f"{private}: {'the output did not reach it' if written else 'was changed'}")
    return out


def verify(folder: str) -> int:
    found = problems(folder, written=False)
    if not found:
        for dest in ("/dev/null", os.path.join(folder, "link.mlir"), os.path.join(folder, "private.mlir")):
            done = subprocess.run(
                [sys.executable, "-m", "hir.tools.opt", os.path.join(folder, "p.mlir"), "-o", dest],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                found.append(f"hir-opt -o {dest} failed: {done.stderr.strip()}")
        found += problems(folder, written=True)
    for line in found:
        print(f"check_destinations: error: {line}", file=sys.stderr)
    if not found:
        print(
            "check_destinations: /dev/null, a symlink and a 0600 file are intact after the suite and after hir-opt -o"
        )
    return 1 if found else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("setup", "verify"):
        sys.exit(__doc__)
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
    else:
        sys.exit(verify(sys.argv[2]))
