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
in its document; it passes when every command exits 0 and every output comment holds.

Output comments (doctest-style): a comment that shows what a line prints is checked against
what it prints, in ```bash run and ```python run blocks:

    hir-run p.mlir random:8x32 --print | head -1   # output 0: shape [8, 8] f32
    grep -c 'hir.wait' lowered.mlir                 # prints: 2
    print(err)                                      # prints: p.mlir:4:23: error: ...

``# prints: TEXT`` is what the line writes to stdout; ``# output N: ...`` (hir-run --print's
header line) stands for ``# prints: output N: ...``. ``...`` in TEXT stands for any text,
newlines included; otherwise TEXT must equal the whole output (trailing spaces and newlines
aside). A checked bash line is one whole command (not inside a heredoc, not continued from
the line before); a checked Python line is one ``print(...)`` call. The harness prints a
marker line before and after each checked line (on the same line: line numbers stay) and
compares what came between. A ``print(...)`` line with any other trailing comment (in a
Python block or in a bash block's heredoc) is refused: its output would go unchecked; so is
an output comment on an mlir block's ``// RUN:`` line (bash would read it as a comment)."""

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_util import tool_environment

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]+)(?P<rest>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
RUN_LINE = re.compile(r"^\s*//\s*RUN:\s*(?P<cmd>.*)$", re.M)
LANGS = ("mlir", "bash", "python")
OUTPUT_COMMENT = re.compile(r"\s#\s*(?:prints:\s*(?P<text>.*?)|(?P<header>output \d+:.*?))\s*$")
PRINT_COMMENT = re.compile(r"^\s*print\(.*\)\s+#")
HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)(\w+)\2")


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


@dataclass
class Expected:
    line: int  # the line of the document
    text: str  # what the line prints; "..." stands for any text


def marker(index: int, end: bool = False) -> str:
    return f"@@{'/' if end else ''}hir-doc-output {index}@@"


def with_output_checks(block: Block) -> tuple[str, list[Expected]]:
    """``block``'s body with each output comment's line between two marker prints (on the
    same line), and what each such line must print; AssertionError on an output comment the
    harness cannot check."""
    lines, expected = block.body.split("\n"), []
    heredoc = None  # the word ending the heredoc being read (bash)
    for i, line in enumerate(lines):
        where = f"{block.doc.name}:{block.line + 1 + i}"
        if heredoc is not None:
            if (line.lstrip("\t") if heredoc[0] else line) == heredoc[1]:
                heredoc = None
            elif PRINT_COMMENT.match(line):
                raise AssertionError(
                    f"{where}: a print's comment in a heredoc is not checked: assert the value instead"
                )
            continue
        comment = OUTPUT_COMMENT.search(line)
        if block.lang == "python" and PRINT_COMMENT.match(line) and (comment is None or comment["text"] is None):
            raise AssertionError(f"{where}: a print's trailing comment must be '# prints: TEXT' (checked)")
        start = HEREDOC.search(line) if block.lang == "bash" else None
        if comment is not None and block.lang == "mlir" and RUN_LINE.match(line):
            raise AssertionError(
                f"{where}: output comments are checked in bash and python "
                "blocks, not on RUN lines (grep the output instead)"
            )
        if comment is not None and block.lang in ("bash", "python"):
            code = line[: comment.start()]
            if start is not None or (i and lines[i - 1].rstrip().endswith("\\")):
                raise AssertionError(f"{where}: a checked line must be one whole command")
            if block.lang == "python" and not PRINT_COMMENT.match(code + " #"):
                raise AssertionError(f"{where}: a checked Python line must be one print(...) call")
            indent = code[: len(code) - len(code.lstrip())]
            echo = "print({!r})" if block.lang == "python" else "echo '{}'"
            n = len(expected)
            lines[i] = f"{indent}{echo.format(marker(n))}; {code.strip()}; {echo.format(marker(n, end=True))}"
            expected.append(
                Expected(block.line + 1 + i, comment["text"] if comment["text"] is not None else comment["header"])
            )
        if start is not None:
            heredoc = (start[1], start[3])
    return "\n".join(lines), expected


def check_outputs(block: Block, expected: list[Expected], stdout: str) -> None:
    """AssertionError naming the first output comment that ``stdout`` contradicts."""
    for n, want in enumerate(expected):
        where = f"{block.doc.name}:{want.line}"
        found = re.findall(re.escape(marker(n)) + r"\n(.*?)" + re.escape(marker(n, end=True)), stdout, re.S)
        if not found:
            raise AssertionError(f"{where}: the line with '# prints' never ran")
        pattern = ".*?".join(re.escape(part) for part in want.text.strip().split("..."))
        for got in found:
            got = "\n".join(line.rstrip() for line in got.rstrip().split("\n"))
            if not re.fullmatch(pattern, got, re.S):
                raise AssertionError(f"{where}: prints {got!r}; its comment says {want.text!r}")


def environment() -> dict:
    """The CLIs of the package under test, hir-run / hir-import through lit's fork server."""
    return tool_environment()


def run_block(block: Block, earlier: list[Block], folder: Path) -> None:
    """Execute ``block`` in ``folder`` (after writing the ``file=`` blocks before it);
    raise AssertionError with the output when a command fails."""
    if block.lang not in LANGS:
        raise AssertionError(f"{block.id}: runnable blocks are {', '.join(LANGS)}, not '{block.lang}'")
    for other in earlier:
        if other.lang == "mlir":
            (folder / other.file).write_text(other.body)
    path = folder / block.file
    body, expected = with_output_checks(block)
    path.write_text(body)
    if block.lang == "mlir":
        commands = [f"hir-opt {block.file} -o {block.file}.out"] + [
            m["cmd"].replace("%s", block.file) for m in RUN_LINE.finditer(block.body)
        ]
    elif block.lang == "bash":
        commands = [f"bash -euo pipefail {block.file}"]
    else:
        return check_outputs(block, expected, run_python(block, folder))
    for command in commands:
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=folder,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            raise AssertionError(
                f"{block.id}: `{command}` exited {result.returncode}\n"
                f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
            )
        check_outputs(block, expected, result.stdout)


def run_python(block: Block, folder: Path) -> str:
    """Its stdout: ``python FILE`` in ``folder``, forked from the multi-rank tests' zygote (rank_zygote.py):
    a fresh interpreter past the imports of torch, transformers and hir, which took most of
    an example's seconds on CI; with CUDA, a real ``python FILE``."""
    import torch

    from multirank_util import run_forked

    if torch.cuda.is_available():
        result = subprocess.run(
            [sys.executable, block.file], cwd=folder, env=environment(), capture_output=True, text=True, timeout=600
        )
        code, out, err = result.returncode, result.stdout, result.stderr
    else:
        with tempfile.TemporaryDirectory(prefix="hir-doc-") as logs:
            (rank,) = run_forked(str(folder / block.file), [], [environment()], str(folder), 600, logs).ranks
        code, out, err = rank.returncode, rank.stdout, rank.stderr
    if code != 0:
        raise AssertionError(f"{block.id}: `python {block.file}` exited {code}\n--- stdout\n{out}\n--- stderr\n{err}")
    return out


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
    tests.write_text(
        "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    pass\n\n\ndef test_fast():\n    pass\n"
    )
    error = slow_marker_error(Block(ROOT / doc, 1, "bash", "x.sh", "true\n", f"{tests}::{test}"))
    assert message in error and bool(error) == bool(message), error


@pytest.mark.parametrize(
    "lang,body",
    [
        ("mlir", 'func.func @f(%a: memref<4xf32>) {\n  "hir.set"(%a, %a) : (...) -> ()\n  return\n}\n'),
        (
            "mlir",
            "// RUN: hir-run %s --print | grep -q 'output 0: 2'\nfunc.func @main() "
            "-> index {\n  %c = arith.constant 1 : index\n  return %c : index\n}\n",
        ),
        ("python", "import hir\nhir.run(None, [x])\n"),
        ("bash", "hir-opt no-such-file.mlir\n"),
    ],
)
def test_broken_example_fails(lang, body, tmp_path):
    """The harness fails on a broken block of each kind (a doc example that breaks fails CI)."""
    block = Block(tmp_path / "doc.md", 1, lang, {"mlir": "x.mlir", "bash": "x.sh", "python": "x.py"}[lang], body)
    with pytest.raises(AssertionError, match="doc.md:1"):
        run_block(block, [], tmp_path)


@pytest.mark.parametrize(
    "lang,body,message",
    [
        (
            "bash",
            "printf 'output 0: shape [8, 8] f32\\n1 2\\n' | head -1   # output 0: shape [8, 32] ...\n",
            "doc.md:2: prints 'output 0: shape [8, 8] f32'; its comment says 'output 0: shape [8, 32] ...'",
        ),
        ("bash", "true\necho 3   # prints: 2\n", "doc.md:3: prints '3'; its comment says '2'"),
        ("bash", "exit 0\necho 2   # prints: 2\n", "doc.md:3: the line with '# prints' never ran"),
        (
            "python",
            "import sys\nprint(sys.argv[1:], 1 + 1)  # prints: [] 3\n",
            "doc.md:3: prints '[] 2'; its comment says '[] 3'",
        ),
        ("python", "print(2)  # two\n", "doc.md:2: a print's trailing comment must be '# prints: TEXT'"),
        ("python", "x = 2  # prints: 2\n", "doc.md:2: a checked Python line must be one print(...) call"),
        ("bash", "python - <<'EOF'\nprint(2)  # two\nEOF\n", "doc.md:3: a print's comment in a heredoc is not checked"),
        ("bash", "echo \\\n  2   # prints: 2\n", "doc.md:3: a checked line must be one whole command"),
        (
            "mlir",
            "// RUN: echo 3   # prints: 2\nfunc.func @main() {\n  return\n}\n",
            "doc.md:2: output comments are checked in bash and python blocks",
        ),
    ],
)
def test_wrong_output_comment_fails(lang, body, message, tmp_path):
    """A doc's output comment that the line does not print (or that cannot be checked) fails."""
    block = Block(tmp_path / "doc.md", 1, lang, {"bash": "x.sh", "python": "x.py", "mlir": "x.mlir"}[lang], body)
    with pytest.raises(AssertionError) as failure:
        run_block(block, [], tmp_path)
    assert message in str(failure.value)


def test_right_output_comments_pass(tmp_path):
    """Every form of output comment, matching: whole output, "..." across lines, a checked
    line run twice, a heredoc's own comments left alone; the block's later lines still run."""
    body = """printf 'output 0: shape [8, 8] f32\\n1 2\\n' | head -1   # output 0: shape [8, 8] f32
printf 'a\\nb  \\nc\\n\\n'   # prints: a...c
for i in 1 2; do echo "row $i"; done   # prints: row 1...row 2
for i in 1 2; do
  echo "$i x"   # prints: ... x
done
cat > y.py <<'PY'
x = 1  # prints: 3 (data of the heredoc, not a checked line)
PY
touch done
"""
    run_block(Block(tmp_path / "doc.md", 1, "bash", "x.sh", body), [], tmp_path)
    assert (tmp_path / "done").exists()
