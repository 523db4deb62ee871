"""Generate the op reference (docs/ops.md) from the dialect itself.

    python -m hir.tools.gen_op_docs -o docs/ops.md          # write
    python -m hir.tools.gen_op_docs --check docs/ops.md     # exit 1 if it is out of date

Every concrete subclass of the dialect's op base class (``hir.dialect.base.HirOp``) is
described from what defines it: its ``ext`` fields (operands, results, regions and declared
attributes, in order), its docstring, and its verifier: the ``check`` method and every
method and same-module helper it calls are read (``ast``) for the attributes they read
(``int_attr`` / ``str_attr`` / ``i64_array_attr``, required or not, with the allowed
strings) and for the messages they ``fail`` with, which are the verifier rules. The
example of each op is the first function of its group's round-trip test
``test/Dialect/<group>.mlir`` that uses it (so every example is verified IR; the reference marks it runnable, and the
doc-example test runs it through hir-opt)."""

import argparse
import ast
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hir.dialect import base as dialect_base

# The attribute accessors of hir.dialect.base, and the attribute type each one reads.
ACCESSORS = {"int_attr": "i64", "str_attr": "string", "i64_array_attr": "array<i64>"}
# The round-trip tests <group>.mlir, relative to the checkout the command runs in: an installed
# wheel has no test folder of its own.
DEFAULT_EXAMPLES = Path("test") / "Dialect"


@dataclass
class Attribute:
    name: str
    type: str = "attribute"
    required: bool = True
    choices: tuple = ()


@dataclass
class OpDoc:
    cls: type
    operands: list = field(default_factory=list)
    results: list = field(default_factory=list)
    regions: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)
    rules: list = field(default_factory=list)


def op_classes() -> list[type]:
    """Every registered op class below the dialect's op base, grouped by module in import
    order, in source order within a module."""
    found, seen = [], set()

    def visit(cls: type) -> None:
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                if getattr(sub, "OPERATION_NAME", None):
                    found.append(sub)
                visit(sub)

    visit(dialect_base.HirOp)
    modules = list(sys.modules)  # import order: the dialect package's own grouping
    return sorted(found, key=lambda c: (modules.index(c.__module__), inspect.getsourcelines(c)[1]))


MLIR_NAMES = {
    "MemRefType": "memref",
    "IndexType": "index",
    "IntegerAttr": "i64",
    "StringAttr": "string",
    "FloatAttr": "f64",
}


def type_text(constraint: Any) -> str:
    """How a field's constraint reads in the reference: ``!hir.stream``, ``memref``, ..."""
    if constraint is Any:
        return "attribute"
    origin = getattr(constraint, "__origin__", constraint)  # WorkType[()] -> WorkType
    if origin in dialect_types():
        return "!" + origin.type_name
    name = getattr(origin, "__name__", str(origin))
    return MLIR_NAMES.get(name, name)


def dialect_types() -> list[type]:
    return list(dialect_base.HirDialect.Type.__subclasses__())


def describe(cls: type) -> OpDoc:
    doc = OpDoc(cls)
    for f in cls._fields:
        kind = type(f).__name__
        variadic = f.variadicity.name
        what = {"single": "", "optional": "optional", "variadic": "variadic"}[variadic]
        if kind == "OperandDef":
            doc.operands.append((f.name, type_text(f.constraint), what))
        elif kind == "ResultDef":
            doc.results.append((f.name, type_text(f.constraint), what))
        elif kind == "RegionDef":
            doc.regions.append(f.name)
        elif kind == "AttributeDef":
            doc.attributes[f.name] = Attribute(f.name, type_text(f.constraint), f.default_factory is None)
    for fn in verifier_functions(cls):
        read_verifier(fn, doc)
    return doc


def verifier_functions(cls: type) -> list[Callable]:
    """``check`` and what it calls: methods of the op (``self.x(...)``) and helpers defined
    in the caller's own module (an inherited check's helpers in its base's), transitively."""
    seen: list[Callable] = []
    todo = [cls.check]
    while todo:
        fn = todo.pop()
        fn = getattr(fn, "__func__", fn)
        if fn in seen or not inspect.isfunction(fn) or fn.__module__ == dialect_base.__name__:
            continue
        seen.append(fn)
        for node in ast.walk(_tree(fn)):
            if not isinstance(node, ast.Call):
                continue
            target = node.func
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                member = inspect.getattr_static(cls, target.attr, None)
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member):
                    todo.append(member)
            elif isinstance(target, ast.Name):
                helper = fn.__globals__.get(target.id)
                if inspect.isfunction(helper) and helper.__module__ == fn.__module__:
                    todo.append(helper)
    return seen


def _tree(fn: Callable) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(fn)))


def _constant(node: ast.AST, fn: Callable) -> Any:
    """The value of a literal or of a module-level name, else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return fn.__globals__.get(node.id)
    return None


def _parents(tree: ast.AST) -> dict:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def read_verifier(fn: Callable, doc: OpDoc) -> None:
    tree = _tree(fn)
    parents = _parents(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        if name == "fail" and node.args:
            rule = _message(node.args[0], fn)
            if rule and rule not in doc.rules:
                doc.rules.append(rule)
        elif name in ACCESSORS and len(node.args) >= 2:
            attr = _constant(node.args[1], fn)
            if not isinstance(attr, str):
                continue
            entry = doc.attributes.setdefault(attr, Attribute(attr))
            entry.type = ACCESSORS[name]
            optional = any(k.arg == "required" and _constant(k.value, fn) is False for k in node.keywords)
            if optional or _guarded_by_presence(node, attr, parents, fn):
                entry.required = False
            if name == "str_attr" and len(node.args) >= 3:
                choices = _constant(node.args[2], fn)
                if isinstance(choices, (tuple, list)):
                    entry.choices = tuple(choices)


def _guarded_by_presence(node: ast.AST, attr: str, parents: dict, fn: Callable) -> bool:
    """Inside ``if NAME in self.operation.attributes:`` (an optional attribute)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.In):
            if _constant(node.test.left, fn) == attr:
                return True
    return False


def _message(node: ast.AST, fn: Callable) -> str | None:
    """A ``fail`` message: literal text, with each interpolated value shown as ``…``
    (module constants are filled in)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):  # the only other part of an f-string
                known = _constant(value.value, fn)
                parts.append(str(known) if isinstance(known, (str, int)) else "…")
        return "".join(parts)
    return None


def examples(folder: Path) -> dict[str, str]:
    """Op name -> the first function of the round-trip tests in ``folder`` (``<group>.mlir``,
    not ``<group>-invalid.mlir``) that uses it, cut down to that op and what its operands
    need (whole, when the function has regions); CHECK lines dropped."""
    text = "\n".join(f.read_text() for f in sorted(folder.glob("*.mlir")) if not f.stem.endswith("-invalid"))
    out: dict[str, str] = {}
    for func in re.finditer(r"^func\.func .*?^\}$", text, re.M | re.S):
        lines = [line for line in func.group(0).splitlines() if not re.match(r"\s*// ", line)]
        for name in re.findall(r'"(hir\.\w+)"\(', "\n".join(lines)):
            out.setdefault(name, _slice(lines, name) + "\n")
    return out


def _slice(lines: list[str], name: str) -> str:
    """The function header, the op's line, the lines defining its operands (transitively)
    and the return: enough to verify the op."""
    if any("({" in line for line in lines):
        return "\n".join(lines)
    header_end = next(i for i, line in enumerate(lines) if line.rstrip().endswith("{"))
    body = lines[header_end + 1 : -1]
    at = next(i for i, line in enumerate(body) if f'"{name}"(' in line)
    keep = {at} | {i for i, line in enumerate(body) if line.strip().startswith("return")}
    needed = set().union(*(_uses(body[i]) for i in keep))
    for i in range(len(body) - 1, -1, -1):
        defined = set(re.findall(r"%[\w.]+", body[i].split("=", 1)[0])) if re.match(r"\s*%.*=", body[i]) else set()
        if defined & needed:
            keep.add(i)
            needed |= _uses(body[i])
    return "\n".join(lines[: header_end + 1] + [body[i] for i in sorted(keep)] + lines[-1:])


def _uses(line: str) -> set:
    rhs = line.split("=", 1)[1] if re.match(r"\s*%.*=", line) else line
    return set(re.findall(r"%[\w.]+", rhs))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(ops: Sequence[OpDoc], example_of: dict[str, str], source: str) -> str:
    lines = [
        "# hir op reference",
        "",
        "<!-- Generated by `python -m hir.tools.gen_op_docs -o docs/ops.md`; do not edit by hand. -->",
        "",
        "Generated from the dialect's op classes: fields, docstrings and the verifiers' rules.",
        "Every op prints in MLIR's generic form: "
        '`"hir.name"(operands) {attributes} : (operand types) -> result types`.',
        "Operands are listed in order. The examples come from the round-trip "
        f"tests `{source}/<group>.mlir` and are run through `hir-opt`.",
        "",
        "Types: " + ", ".join(f"`!{t.type_name}` ({(t.__doc__ or '').strip()})" for t in dialect_types()) + ".",
        "Sharding: `#hir.shard<array<i64: devices...>, axis : i64>` as a memref memory space (axis -1: replicated);",
        "an uneven split (MLIR's `sharded_dims_offsets`) is `#hir.shard<array<i64: "
        "...>, {axis = N : i64, offsets = array<i64: ...>}>`,",
        "taken only by ops that declare it "
        f"({', '.join(sorted(c.OPERATION_NAME for c in dialect_base.OP_CLASSES.values() if c.UNEVEN_SPLITS))}); "
        "every other op's verifier refuses it.",
        "",
        "Besides the rules listed per op (a `…` stands for a value filled in by the message), every op",
        "checks that its operands and results have the listed types, that required attributes are",
        "present with the listed type, and that buffer shapes and element types agree as described.",
        "",
    ]
    module = None
    for op in ops:
        if op.cls.__module__ != module:
            module = op.cls.__module__
            first, _, rest = (sys.modules[module].__doc__ or "").strip().partition("\n\n")
            lines += [f"## `{module}`", "", first.replace("\n", " "), ""]
            if rest.strip():
                lines += ["```text", textwrap.dedent(rest).strip("\n"), "```", ""]
        name = op.cls.OPERATION_NAME
        lines += [f"### `{name}`", ""]
        if op.cls.__doc__ and "__doc__" in vars(op.cls):
            lines += [inspect.cleandoc(op.cls.__doc__), ""]
        for title, rows in (("Operands", op.operands), ("Results", op.results)):
            if rows:
                lines += [f"{title}: " + ", ".join(f"`{n}`: {t}" + (f" ({w})" if w else "") for n, t, w in rows), ""]
        if op.regions:
            lines += ["Regions: " + ", ".join(f"`{r}`" for r in op.regions), ""]
        if op.attributes:
            lines += ["| attribute | type | |", "|---|---|---|"]
            for attr in op.attributes.values():
                values = (
                    f"one of {', '.join(repr(c).replace(chr(39), chr(34)) for c in attr.choices)}"
                    if attr.choices
                    else ""
                )
                need = "required" if attr.required else "optional (absent by default)"
                lines.append(f"| `{attr.name}` | {attr.type} | {_cell(', '.join(x for x in (need, values) if x))} |")
            lines.append("")
        if op.rules:
            lines += ["Verifier rules (errors reported at the op):", ""]
            lines += [f"- {_cell(rule)}" for rule in op.rules]
            lines.append("")
        example = example_of.get(name)
        if example is None:
            raise SystemExit(
                f"gen_op_docs: error: {source} has no function using '{name}': add one (the round trip covers every op)"
            )
        lines += ["```mlir run", example.rstrip("\n"), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def generate(examples_path: Path = DEFAULT_EXAMPLES) -> str:
    """The text of docs/ops.md, with examples from ``examples_path`` (named in the text
    relative to the checkout that holds it, so the text does not depend on the working folder)."""
    folder = examples_path.resolve()
    checkout = next((p for p in folder.parents if (p / "pyproject.toml").exists()), None)
    source = str(folder.relative_to(checkout)) if checkout else str(examples_path)
    return render([describe(c) for c in op_classes()], examples(examples_path), source)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m hir.tools.gen_op_docs", description="Generate the hir op reference (Markdown)."
    )
    p.add_argument("-o", dest="output", help="write here (default: stdout)")
    p.add_argument("--check", metavar="FILE", help="exit 1 when FILE differs from what would be generated")
    p.add_argument(
        "--examples",
        type=Path,
        default=DEFAULT_EXAMPLES,
        help="the folder of round-trip tests (<group>.mlir) the examples come from",
    )
    args = p.parse_args(argv)
    text = generate(args.examples)
    if args.check:
        if Path(args.check).read_text() != text:
            print(
                f"{args.check}: error: out of date; run python -m hir.tools.gen_op_docs -o {args.check}",
                file=sys.stderr,
            )
            return 1
        return 0
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
