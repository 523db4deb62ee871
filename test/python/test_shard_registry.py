"""The shard bridge's handler registry (hir.passes.shard.registry) is the one list of what
converts: every upstream shard op has an entry (converted or refused), every entry has a lit
case in test/Conversion, docs/from-shard.md holds the registry's own table, and a refused
op's error lists the converted ops from the registry."""

import inspect
import re
from pathlib import Path

import pytest
from torch_mlir.dialects import shard

import hir
import hir.passes
from hir.core import HirError
from hir.passes.shard import registry

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- registry: begin -->\n", "<!-- registry: end -->"


def test_every_upstream_shard_op_has_an_entry():
    ops = {c.OPERATION_NAME for c in vars(shard).values() if inspect.isclass(c) and hasattr(c, "OPERATION_NAME")}
    ops.discard(shard.GridOp.OPERATION_NAME)  # module level: the pass reads and erases grids
    missing = sorted(ops - set(registry.CONVERSIONS))
    assert not missing, f"shard ops with neither a handler nor a refusal in the registry: {missing}"


def test_every_entry_has_a_lit_case():
    text = "\n".join(p.read_text() for p in sorted((ROOT / "test" / "Conversion").glob("*.mlir")))

    def written(name: str) -> str:  # func ops print without their dialect
        return name.removeprefix("func.")

    missing = [
        name for name in registry.CONVERSIONS if not re.search(rf"(^|[\s=]){re.escape(written(name))}\b", text, re.M)
    ]
    assert not missing, f"registry entries without a case in test/Conversion: {missing}"


def test_docs_hold_the_registry_table():
    doc = (ROOT / "docs" / "from-shard.md").read_text()
    table = doc[doc.index(BEGIN) + len(BEGIN) : doc.index(END)]
    assert table == registry.markdown(), (
        "docs/from-shard.md's op table is stale: replace it with the output of `python -m hir.passes.shard.registry`"
    )


def test_a_refused_op_lists_the_converted_ones_from_the_registry():
    module = hir.parse(
        "shard.grid @g(shape = 2)\n"
        "func.func @f(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x4xf32> {\n"
        "  %r = shard.gather %x on @g grid_axes = [0] gather_axis "
        "= 0 root = [0] : (tensor<2x4xf32>) -> tensor<4x4xf32>\n"
        "  return %r : tensor<4x4xf32>\n"
        "}\n",
        "gather.mlir",
    )
    with pytest.raises(HirError) as info:
        hir.lower(module, "hir-convert-shard-to-hir", source_name="gather.mlir")
    listed = re.search(r"converted: ([^)]*)\)", str(info.value)).group(1).split(", ")
    assert "gather.mlir:3:8: error: 'shard.gather' op" in str(info.value)
    assert listed == registry.converted("shard.") and "all_gather" in listed and "update_halo" in listed


def test_lookup_falls_back_by_prefix_then_to_the_kernel_handler():
    assert registry.lookup("shard.all_gather").handler.__name__ == "all_gather"
    assert registry.lookup("shard.not_an_op").refused
    assert registry.lookup("linalg.generic") is registry.lookup("tensor.pad")
    assert not registry.lookup("linalg.generic").refused
