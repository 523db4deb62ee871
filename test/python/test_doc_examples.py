"""Every fenced block of README.md and docs/*.md marked runnable is executed, so the docs
cannot drift from what the tools do. The convention (README, "Contributing"):

    ```mlir run file=prog.mlir   hir-opt parses and verifies it; its `// RUN: cmd` lines run
                                 in bash with %s = the block's file; file= names the file,
                                 which later blocks of the same document can use
    ```bash run                  runs with bash -euo pipefail (the installed CLIs on PATH;
                                 hir-run / hir-import through test/lit_zygote.py)
    ```python run                runs in a fresh interpreter (forked past torch's imports:
                                 run_python)
    ```bash run slow=test/python/test_x.py::test_y
                                 runs only with HIR_TEST_SLOW=1: the named fast-default
                                 test checks what the block shows (README.md's blocks all
                                 run in the default)

Each block runs in a fresh temporary folder holding the ``file=`` blocks written before it
in its document; it passes when every command exits 0."""

import functools
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import lit_zygote  # noqa: E402  (test/lit_zygote.py)

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]+)(?P<rest>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
RUN_LINE = re.compile(r"^\s*//\s*RUN:\s*(?P<cmd>.*)$", re.M)
LANGS = ("mlir", "bash", "python")


@dataclass
class Block:
    doc: Path
    line: int
    lang: str
    file: str
    body: str
    slow: str = ""  # slow=FILE::TEST: the fast-default test covering this block


    @property
    def id(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The runnable blocks of ``doc`` (info string ``LANG run [file=NAME]``), in order."""
    text = doc.read_text()
    found = []
    for m in FENCE.finditer(text):
        words = m["rest"].split()
        if "run" not in words:
            continue
        options = dict(w.split("=", 1) for w in words if "=" in w)
        line = text.count("\n", 0, m.start()) + 1
        lang = m["lang"]
        default = {"mlir": "example.mlir", "bash": "example.sh", "python": "example.py"}.get(lang, "")
        found.append(Block(doc, line, lang, options.get("file", default), m["body"], options.get("slow", "")))
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


def environment() -> dict:
    return dict(_environment())


@functools.lru_cache(maxsize=None)
def _environment() -> dict:
    # The CLIs next to this interpreter (the package under test) come first on PATH, and
    # before them hir-run / hir-import through lit's fork server (test/lit_zygote.py: each
    # call a process of its own, past torch's imports; HIR_LIT_ZYGOTE=0: as installed).
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    env = dict(os.environ, PATH=path, HIR_DEVICE="cpu")
    shims = lit_zygote.start(env)
    return dict(env, PATH=shims + os.pathsep + path) if shims else env


def run_block(block: Block, earlier: list[Block], folder: Path) -> None:
    """Execute ``block`` in ``folder`` (after writing the ``file=`` blocks before it);
    raise AssertionError with the output when a command fails."""
    if block.lang not in LANGS:
        raise AssertionError(f"{block.id}: runnable blocks are {', '.join(LANGS)}, not '{block.lang}'")
    for other in earlier:
        if other.lang == "mlir":
            (folder / other.file).write_text(other.body)
    path = folder / block.file
    path.write_text(block.body)
    if block.lang == "mlir":
        commands = [f"hir-opt {block.file} -o {block.file}.out"] + [m["cmd"].replace("%s", block.file) for m in RUN_LINE.finditer(block.body)]
    elif block.lang == "bash":
        commands = [f"bash -euo pipefail {block.file}"]
    else:
        return run_python(block, folder)
    for command in commands:
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=folder, env=environment(), capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise AssertionError(
                f"{block.id}: `{command}` exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
            )


def run_python(block: Block, folder: Path) -> None:
    """``python FILE`` in ``folder``, forked from the multi-rank tests' zygote (rank_zygote.py):
    a fresh interpreter past the imports of torch, transformers and hir, which took most of
    an example's seconds on CI; with CUDA, a real ``python FILE``."""
    import torch

    from multirank_util import run_forked

    if torch.cuda.is_available():
        result = subprocess.run([sys.executable, block.file], cwd=folder, env=environment(), capture_output=True, text=True, timeout=600)
        code, out, err = result.returncode, result.stdout, result.stderr
    else:
        with tempfile.TemporaryDirectory(prefix="hir-doc-") as logs:
            (rank,) = run_forked(str(folder / block.file), [], [environment()], str(folder), 600, logs).ranks
        code, out, err = rank.returncode, rank.stdout, rank.stderr
    if code != 0:
        raise AssertionError(f"{block.id}: `python {block.file}` exited {code}\n--- stdout\n{out}\n--- stderr\n{err}")


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in ALL])
def test_doc_example_runs(block, tmp_path):
    same_doc = [b for b in ALL if b.doc == block.doc]
    run_block(block, same_doc[: same_doc.index(block)], tmp_path)


def test_docs_have_runnable_examples():
    langs = {b.lang for b in ALL if b.doc.name == "README.md"}
    assert langs == set(LANGS), langs


def slow_marker_error(block: Block) -> str:
    """Why ``block``'s ``slow=FILE::TEST`` is not allowed ("" when it is): README.md's
    blocks always run; the named test must exist and be in the fast default itself."""
    if block.doc.name == "README.md":
        return f"{block.id}: README.md's examples run in the default suite"
    file, _, test = block.slow.partition("::")
    path = ROOT / file
    text = path.read_text() if path.is_file() else ""
    if not test or f"def {test}(" not in text:
        return f"{block.id}: slow={block.slow} names no test"
    decorators = text.split(f"def {test}(")[0].rsplit("\n\n\n", 1)[-1]
    if "@pytest.mark.slow" in decorators:
        return f"{block.id}: slow={block.slow} is a slow test itself"
    return ""


def test_slow_blocks_name_their_fast_coverage():
    assert [slow_marker_error(b) for b in ALL if b.slow] == [""] * sum(1 for b in ALL if b.slow)


@pytest.mark.parametrize(
    "doc,test,message",
    [
        ("README.md", "test_fast", "run in the default suite"),
        ("x.md", "test_missing", "names no test"),
        ("x.md", "test_slow", "is a slow test itself"),
        ("x.md", "test_fast", ""),
    ],
)
def test_slow_marker_is_checked(doc, test, message, tmp_path):
    tests = tmp_path / "test_t.py"
    tests.write_text("import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    pass\n\n\ndef test_fast():\n    pass\n")
    error = slow_marker_error(Block(ROOT / doc, 1, "bash", "x.sh", "true\n", f"{tests}::{test}"))
    assert message in error and bool(error) == bool(message), error


@pytest.mark.parametrize(
    "lang,body",
    [
        ("mlir", 'func.func @f(%a: memref<4xf32>) {\n  "hir.set"(%a, %a) : (...) -> ()\n  return\n}\n'),
        ("mlir", "// RUN: hir-run %s --print | grep -q 'output 0: 2'\nfunc.func @main() -> index {\n  %c = arith.constant 1 : index\n  return %c : index\n}\n"),
        ("python", "import hir\nhir.run(None, [x])\n"),
        ("bash", "hir-opt no-such-file.mlir\n"),
    ],
)
def test_broken_example_fails(lang, body, tmp_path):
    """The harness fails on a broken block of each kind (a doc example that breaks fails CI)."""
    block = Block(tmp_path / "doc.md", 1, lang, {"mlir": "x.mlir", "bash": "x.sh", "python": "x.py"}[lang], body)
    with pytest.raises(AssertionError, match="doc.md:1"):
        run_block(block, [], tmp_path)
