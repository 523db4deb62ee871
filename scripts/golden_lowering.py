"""Write what the passes produce to a folder, so a refactoring of the passes can be shown to
change nothing: run it before and after, then ``diff -r`` the two folders.

    python scripts/golden_lowering.py OUT_DIR [--lit-only | --matrix-only] [--jobs 2]
        [--tests-from OLD_CHECKOUT/test] [--expand-stream-loops]

- ``lit/``: every ``hir-opt`` invocation of a lit RUN line under ``test/`` that runs passes
  (``--pass-pipeline`` / ``-p`` / a pass flag), as the RUN line writes it (value names,
  debug info, ``--split-input-file``, a ``sed`` before it, an ``env`` prefix, inputs made by
  an earlier RUN line of the file), with its exit status, stdout and stderr; each
  ``hir-lower`` invocation a second time with ``--mlir-print-debuginfo`` (locations too).
  ``--tests-from``: the RUN lines (and inputs) of another checkout's ``test/`` (the one the
  golden files were made from), so edited tests do not change what is compared;
  ``--expand-stream-loops``: a pipeline of stream passes without ``hir-lower`` gets
  ``hir-expand-stream-loops`` appended (their ``hir.stream_for`` output in the ``hir.for``
  form, which the stream passes wrote before the op existed).
- ``matrix/``: the lowered programs of the 2- and 4-rank hir-p2p-pipeline option matrix
  (``test/python/test_p2p_matrix_gpu.py``: every distinct schedule of each form, then
  ``hir-lower``), lowered here on the CPU (minutes).
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = ROOT / "test"
EXPAND = False
STREAM_PASSES = re.compile(r"hir-(stream-lowering|fuse-loops|reuse-stream-buffers)")
PASS_FLAG = re.compile(r"^--hir-|^--(canonicalize|cse)$")


def run_lines(path: Path) -> list[str]:
    """The file's RUN lines, continuation lines joined."""
    lines, pending = [], ""
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*//\s*RUN:\s?(.*)$", line)
        if not match:
            continue
        text = match.group(1).rstrip()
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        lines.append(pending + text)
        pending = ""
    return lines


def _segments(tokens: list[str]) -> list[list[str]]:
    """A RUN line's commands, split at ``|`` and ``&&``."""
    out, current = [], []
    for token in tokens:
        if token in ("|", "&&", ";"):
            out.append(current)
            current = []
        else:
            current.append(token)
    out.append(current)
    return out


def _strip(command: list[str]) -> tuple[dict, list[str]]:
    """(env assignments, command) without ``not``, ``env X=Y`` and redirections."""
    env, words = {}, []
    it = iter(command)
    for word in it:
        if word in ("not", "env") and not words:
            continue
        if not words and re.match(r"^[A-Z_]+=", word):
            key, value = word.split("=", 1)
            env[key] = value
            continue
        if re.match(r"^\d?>>?&?\d?$", word) or word in ("<",):
            next(it, None)
            continue
        if re.match(r"^\d?>", word) or word.startswith("<"):
            continue
        words.append(word)
    return env, words


def _runs_passes(args: list[str]) -> bool:
    return any(a.startswith(("--pass-pipeline", "-p")) or PASS_FLAG.match(a) for a in args)


def lit_cases(tmp: Path) -> list[tuple[str, list]]:
    """(case name, steps) per test file: each step one command to run in order
    (``("opt", env, args, stdin_from, record)`` or ``("sed", expr, input)``)."""
    cases = []
    for path in sorted(TEST.rglob("*.mlir")):
        if "Inputs" in path.parts or "Output" in path.parts:
            continue
        rel = path.relative_to(TEST).as_posix()
        t = tmp / rel.replace("/", "__")
        steps = []
        for n, line in enumerate(run_lines(path)):
            line = line.replace("%s", str(path)).replace("%S", str(path.parent)).replace("%t", str(t))
            try:
                tokens = shlex.split(line)
            except ValueError:
                continue
            previous = None
            for k, segment in enumerate(_segments(tokens)):
                env, words = _strip(segment)
                if not words:
                    continue
                tool = words[0]
                if tool == "sed" and len(words) == 3:
                    previous = ("sed", words[1], words[2])
                elif tool == "hir-opt":
                    args = words[1:]
                    record = _runs_passes(args)
                    writes = "-o" in args
                    if record or writes:
                        steps.append(("opt", env, args, previous, f"{rel}.run{n}.{k}" if record else None))
                    previous = ("opt-stdout", steps[-1] if steps and (record or writes) else None)
                else:
                    previous = None
        cases.append((rel, steps))
    return cases


def _stdin_of(source, outputs: dict) -> str:
    if source is None:
        return ""
    if source[0] == "sed":
        return subprocess.run(["sed", source[1], source[2]], capture_output=True, text=True).stdout
    if source[0] == "opt-stdout" and source[1] is not None:
        return outputs.get(id(source[1]), "")
    return ""


def _expanded(args: list[str]) -> list[str]:
    """``args`` with ``hir-expand-stream-loops`` right after the last stream pass (pipeline
    text or pass flag) when ``--expand-stream-loops`` is on and no ``hir-lower`` follows."""
    if not EXPAND or any("hir-lower" in a for a in args):
        return args
    out = []
    flags = [i for i, a in enumerate(args) if a.startswith("--hir-") and STREAM_PASSES.search(a)]
    for i, arg in enumerate(args):
        if arg.startswith("--pass-pipeline=") and STREAM_PASSES.search(arg):
            last = list(STREAM_PASSES.finditer(arg))[-1]
            end = last.end()
            if arg[end : end + 1] == "{":
                end = arg.index("}", end) + 1
            arg = arg[:end] + ",hir-expand-stream-loops" + arg[end:]
        out.append(arg)
        if flags and i == flags[-1]:
            out.append("--hir-expand-stream-loops")
    return out


def _run_opt(env: dict, args: list[str], stdin: str) -> tuple[int, str, str]:
    args = _expanded(args)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), **env}
    proc = subprocess.run(["hir-opt", *args], input=stdin, capture_output=True, text=True, env=full_env)
    return proc.returncode, proc.stdout, proc.stderr


def _normalize(text: str) -> str:
    """Paths of this checkout and of the temporary folder made equal; timings dropped."""
    text = text.replace(str(TEST), "<root>/test").replace(str(ROOT), "<root>")
    text = re.sub(r"/tmp/tmp[\w]+", "<tmp>", text)
    return re.sub(r"\d+\.\d+( \(\s*\d+\.\d+%\))?", "<time>", text) if "Execution time report" in text else text


def _record(out: Path, name: str, rc: int, stdout: str, stderr: str, written: str) -> None:
    stdout, stderr, written = _normalize(stdout), _normalize(stderr), _normalize(written)
    (out / (name.replace("/", "__") + ".txt")).write_text(
        f"// exit {rc}\n// ----- stdout\n{stdout}// ----- -o\n{written}// ----- stderr\n{stderr}"
    )


def run_case(case: tuple[str, list], out: Path) -> int:
    _, steps = case
    outputs: dict = {}
    count = 0
    for step in steps:
        _, env, args, source, name = step
        stdin = _stdin_of(source, outputs)
        has_input = any(
            not a.startswith("-") and (i == 0 or args[i - 1] not in ("-o", "-p")) for i, a in enumerate(args)
        )
        run_args = args if has_input or source is None else ["-", *args]
        rc, stdout, stderr = _run_opt(env, run_args, stdin)
        outputs[id(step)] = stdout
        if name is None:
            continue
        written = ""
        if "-o" in args:
            target = Path(args[args.index("-o") + 1])
            written = target.read_text() if target.exists() else ""
        _record(out, name, rc, stdout, stderr, written)
        count += 1
        if "hir-lower" in " ".join(args) and "--mlir-print-debuginfo" not in args:
            debug_args = [a for a in run_args if a != "-o"]
            if "-o" in args:
                i = run_args.index("-o")
                debug_args = run_args[:i] + run_args[i + 2 :]
            rc, stdout, stderr = _run_opt(env, [*debug_args, "--mlir-print-debuginfo"], stdin)
            _record(out, name + ".debuginfo", rc, stdout, stderr, "")
            count += 1
    return count


def lit_golden(out: Path, jobs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [c for c in lit_cases(Path(tmp)) if c[1]]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            counts = list(pool.map(lambda c: run_case(c, out), cases))
    print(f"lit: {sum(counts)} hir-opt outputs from {len(cases)} test files")


def _lower_form(job) -> list:
    import torch

    sys.path.insert(0, str(TEST / "python"))
    import test_p2p_matrix_gpu as matrix

    world, form = job
    build = matrix.FORMS[form](world, 0, torch.device("cpu"))[0]
    return matrix.lowered_programs(world, form, build)


def matrix_golden(out: Path, jobs: int) -> None:
    from concurrent.futures import ProcessPoolExecutor

    sys.path.insert(0, str(TEST / "python"))
    import test_p2p_matrix_gpu as matrix

    jobs_list = [(world, form) for world in (2, 4) for form in matrix.FORMS]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(_lower_form, jobs_list))
    for (world, form), programs in zip(jobs_list, results):
        folder = out / str(world) / matrix._key(form)
        folder.mkdir(parents=True, exist_ok=True)
        for i, (_, text) in enumerate(programs):
            (folder / f"{i:03d}.mlir").write_text(text)
        print(f"matrix: {form}, {world} ranks: {len(programs)} distinct programs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--lit-only", action="store_true")
    parser.add_argument("--matrix-only", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tests-from", type=Path)
    parser.add_argument("--expand-stream-loops", action="store_true")
    args = parser.parse_args()
    global TEST, EXPAND
    TEST = args.tests_from.resolve() if args.tests_from else TEST
    EXPAND = args.expand_stream_loops
    sys.path.insert(0, str(ROOT / "python"))
    if not args.matrix_only:
        lit_golden(args.out / "lit", args.jobs)
    if not args.lit_only:
        matrix_golden(args.out / "matrix", args.jobs)


if __name__ == "__main__":
    main()
