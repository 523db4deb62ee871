"""MLIR shard-dialect programs converted to hir (issue 15) and run on 2 and 4 Gloo ranks:
hand-written partitioned programs (one per converted collective, and the tensor-parallel
MLP as shard-partition leaves it) through hir-convert-shard-to-hir, and the Megatron MLP
imported from a torch.nn.Module by torch-mlir's FX importer, annotated (tensor parallel;
sequence parallel with annotations on intermediates) and converted by hir.from_shard.
Each program runs as converted (program level) and after hir-lower; every rank checks its
local outputs against a single-process torch reference of the unsharded computation.

The test launches this file as a script under ``hir.tools.launch`` (one process per
rank); ``python test_from_shard.py`` is the per-rank worker.
"""

import os
import re
import sys

import pytest

from from_shard_programs import handwritten


def weight_stationary(grid: str, splits: dict, m: int = 8, n: int = 16, k: int = 8) -> str:
    """The weight-stationary MLP sigmoid(a @ b) @ c of llvm/lighthouse's examples/mlp-mpi
    (figure 2 of arXiv 2211.05102): linalg matmuls, a TOSA sigmoid, every layout annotated."""
    mk, kn, nk, mn = (f"tensor<{x}x{y}xf32>" for x, y in ((m, k), (k, n), (n, k), (m, n)))
    shardings = "\n".join(
        f"  %s_{name} = shard.sharding @grid0 split_axes = {axes} : !shard.sharding" for name, axes in splits.items()
    )
    return f"""shard.grid @grid0(shape = {grid})
func.func @mlp(%a: {mk}, %b: {kn}, %c: {nk}) -> {mk} {{
  %zero = arith.constant 0.0 : f32
{shardings}
  %a1 = shard.shard %a to %s_act : {mk}
  %b1 = shard.shard %b to %s_win : {kn}
  %c1 = shard.shard %c to %s_wout : {nk}
  %e0 = tensor.empty() : {mn}
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : {mn}) -> {mn}
  %a2 = shard.shard %a1 to %s_a0 annotate_for_users : {mk}
  %f0s = shard.shard %f0 to %s_c0 annotate_for_users : {mn}
  %h = linalg.matmul ins(%a2, %b1 : {mk}, {kn}) outs(%f0s : {mn}) -> {mn}
  %hs = shard.shard %h to %s_sig annotate_for_users : {mn}
  %g = tosa.sigmoid %hs : ({mn}) -> {mn}
  %e1 = tensor.empty() : {mk}
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : {mk}) -> {mk}
  %f1s = shard.shard %f1 to %s_c1 annotate_for_users : {mk}
  %y = linalg.matmul ins(%g, %c1 : {mn}, {nk}) outs(%f1s : {mk}) -> {mk}
  %r = shard.shard %y to %s_act annotate_for_users : {mk}
  return %r : {mk}
}}
"""


def tosa_mlp(grid: str, x: str, w1: str, h: str, w2: str, x_in: str = "") -> str:
    """sigmoid(x @ w1 + b) @ w2 all in TOSA (tosa.matmul on batch-1 3-D tensors, tosa.add,
    tosa.sigmoid), weights stationary; ``x`` ... are the split axes of the activation, the
    weights and the hidden value (and the bias); ``x_in``, when given, how the activation
    arrives (then resharded to ``x`` for the matmul)."""
    t = {"x": "tensor<1x8x16xf32>", "w1": "tensor<1x16x32xf32>", "h": "tensor<1x8x32xf32>", "w2": "tensor<1x32x16xf32>"}
    arrives = (
        (
            f"  %s_in = shard.sharding @grid split_axes = {x_in} : "
            f"!shard.sharding\n  %x0 = shard.shard %x to %s_in : {t['x']}\n"
        )
        if x_in
        else ""
    )
    return f"""shard.grid @grid(shape = {grid})
func.func @mlp(%x: {t["x"]}, %w1: {t["w1"]}, %b: {t["h"]}, %w2: {t["w2"]}) -> {t["x"]} {{
  %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
  %s_x = shard.sharding @grid split_axes = {x} : !shard.sharding
  %s_w1 = shard.sharding @grid split_axes = {w1} : !shard.sharding
  %s_h = shard.sharding @grid split_axes = {h} : !shard.sharding
  %s_w2 = shard.sharding @grid split_axes = {w2} : !shard.sharding
{arrives}  %x1 = shard.shard {"%x0" if x_in else "%x"} to %s_x annotate_for_users : {t["x"]}
  %w11 = shard.shard %w1 to %s_w1 annotate_for_users : {t["w1"]}
  %b1 = shard.shard %b to %s_h annotate_for_users : {t["h"]}
  %w21 = shard.shard %w2 to %s_w2 annotate_for_users : {t["w2"]}
  %h = tosa.matmul %x1, %w11, %zp, %zp : ({t["x"]}, {t["w1"]}, tensor<1xf32>, tensor<1xf32>) -> {t["h"]}
  %hs = shard.shard %h to %s_h : {t["h"]}
  %hb = tosa.add %hs, %b1 : ({t["h"]}, {t["h"]}) -> {t["h"]}
  %g = tosa.sigmoid %hb : ({t["h"]}) -> {t["h"]}
  %gs = shard.shard %g to %s_h : {t["h"]}
  %gu = shard.shard %gs to %s_h annotate_for_users : {t["h"]}
  %y = tosa.matmul %gu, %w21, %zp, %zp : ({t["h"]}, {t["w2"]}, tensor<1xf32>, tensor<1xf32>) -> {t["x"]}
  %ys = shard.shard %y to %s_x : {t["x"]}
  %r = shard.shard %ys to %s_x annotate_for_users : {t["x"]}
  return %r : {t["x"]}
}}
"""


# 1-D: tensor parallel (w1 by columns, w2 by rows, the sum all-reduced); 2x2: grid axis 0
# splits the activation's rows, grid axis 1 the hidden dim.
TOSA_MLP_1D = dict(x="[[]]", w1="[[], [], [0]]", h="[[], [], [0]]", w2="[[], [0]]")
TOSA_MLP_2X2 = dict(x="[[], [0]]", w1="[[], [], [1]]", h="[[], [0], [1]]", w2="[[], [1]]")
# 2x2, the hidden dim split over both grid axes (the 2-D weight-stationary [[], [0, 1]]
# layout): the activation arrives split over all four devices and is all-gathered by one team
# of the four, the partial sum all-reduced by it.
TOSA_MLP_2X2_TWO_AXES = dict(
    x_in="[[], [], [0, 1]]", x="[[]]", w1="[[], [], [0, 1]]", h="[[], [], [0, 1]]", w2="[[], [0, 1]]"
)


WS_1D = dict(act="[[], [0]]", win="[[], [0]]", wout="[[0], []]", a0="[[]]", c0="[[], [0]]", sig="[[], [0]]", c1="[[]]")


def annotated(n: int) -> list:
    """(name, annotated shard program on an n-device grid, torch reference) for hir.from_shard:
    TOSA ops, arguments that carry only an annotate_for_users annotation."""
    import torch

    for_users = f"""shard.grid @g(shape = {n})
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {{
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %x to %s annotate_for_users : tensor<8x16xf32>
  %1 = tosa.sigmoid %0 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = shard.shard %1 to %s : tensor<8x16xf32>
  %3 = shard.shard %2 to %s annotate_for_users : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}}
"""
    reduce_rows = f"""shard.grid @g(shape = {n})
func.func @main(%x: tensor<8x6xf32>) -> tensor<6xf32> {{
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g split_axes = [[]] : !shard.sharding
  %0 = shard.shard %x to %s : tensor<8x6xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %1 = linalg.reduce ins(%0 : tensor<8x6xf32>) outs(%f : tensor<6xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {{
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }}
  %2 = shard.shard %1 to %r : tensor<6xf32>
  %3 = shard.shard %2 to %r annotate_for_users : tensor<6xf32>
  return %3 : tensor<6xf32>
}}
"""
    # C += A @ B with K split: shard-partition inits the partial product with an scf.if
    # (device 0 keeps C, the others start from zeros); the sum is all-reduced.
    k_split = f"""shard.grid @g(shape = {n})
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<4x6xf32>) -> tensor<4x6xf32> {{
  %sk = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %sr = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %a1 = shard.shard %a to %sk : tensor<4x8xf32>
  %b1 = shard.shard %b to %sr : tensor<8x6xf32>
  %c1 = shard.shard %c to %rep : tensor<4x6xf32>
  %y = linalg.matmul ins(%a1, %b1 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%c1 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = shard.shard %y to %rep annotate_for_users : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}}
"""
    # upstream's unshard_dynamic_axis: an all_gather of a dynamic dim, sized at run time
    dynamic_unshard = f"""shard.grid @g(shape = {n})
func.func @main(%x: tensor<?x14xf32>) -> tensor<?x14xf32> {{
  %s0 = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<?x14xf32>
  %s1 = shard.sharding @g split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<?x14xf32>
  return %1 : tensor<?x14xf32>
}}
"""
    # upstream's move_split_dynamic_axis: an all_to_all (all_gather, then all_slice of the
    # static dim keeping the dynamic one's extent)
    dynamic_move_split = dynamic_unshard.replace("split_axes = [[]]", "split_axes = [[], [0]]").replace(
        "?x14", "?x16"
    )  # 16 splits over 2 and 4
    # several grids per module: the function converts on the one its shardings name
    several_grids = (
        """shard.grid @other(shape = 3x5)
"""
        + for_users
    )
    # a 0-d result: the partial sum's device axis folds into a rank-0 value
    reduce_all = reduce_rows.replace("tensor<6xf32>", "tensor<f32>").replace("dimensions = [0]", "dimensions = [0, 1]")
    return [
        ("for_users_argument", for_users, torch.sigmoid),
        ("dynamic_unshard", dynamic_unshard, lambda x: x),
        ("dynamic_move_split", dynamic_move_split, lambda x: x),
        ("several_grids", several_grids, torch.sigmoid),
        ("linalg_reduce_0d", reduce_all, lambda x: x.sum()),
        ("k_split_partial_init", k_split, lambda a, b, c: c + a @ b),
        ("linalg_reduce", reduce_rows, lambda x: x.sum(0)),
        ("weight_stationary_1d", weight_stationary(str(n), WS_1D), lambda a, b, c: torch.sigmoid(a @ b) @ c),
        ("tosa_mlp_1d", tosa_mlp(str(n), **TOSA_MLP_1D), lambda x, w1, b, w2: torch.sigmoid(x @ w1 + b) @ w2),
    ] + (
        [
            ("tosa_mlp_2x2", tosa_mlp("2x2", **TOSA_MLP_2X2), lambda x, w1, b, w2: torch.sigmoid(x @ w1 + b) @ w2),
            (
                "tosa_mlp_2x2_two_axes",
                tosa_mlp("2x2", **TOSA_MLP_2X2_TWO_AXES),
                lambda x, w1, b, w2: torch.sigmoid(x @ w1 + b) @ w2,
            ),
        ]
        if n == 4
        else []
    )


def fx_mlp(n: int, sequence_parallel: bool):
    """The Megatron MLP from a torch.nn.Module through the FX importer, annotated."""
    import torch
    import torch.nn.functional as F
    from torch_mlir import fx

    from hir.frontend.shard import add_grid, result, shard_value

    class MLP(torch.nn.Module):
        def forward(self, x, w1, w2):
            return F.gelu(x @ w1) @ w2

    mlp = MLP()
    args = (torch.randn(8, 16), torch.randn(16, 64), torch.randn(64, 16))
    module = fx.export_and_import(mlp, *args, output_type="linalg-on-tensors", func_name="mlp")
    with module.context:
        fn = add_grid(module, "tp", n)
        x, w1, w2 = fn.regions[0].blocks[0].arguments
        shard_value(w1, "tp", [[], [0]])  # column parallel
        shard_value(w2, "tp", [[0]])  # row parallel
        if sequence_parallel:
            # x arrives split by rows and is gathered for the first matmul; the hidden
            # activation stays column-split; the output leaves split by rows (reduce-scatter).
            shard_value(shard_value(x, "tp", [[0]]), "tp", [[]], for_users=True)
            first_matmul = next(op for op in fn.regions[0].blocks[0].operations if op.operation.name == "linalg.matmul")
            shard_value(first_matmul.results[0], "tp", [[], [0]])
            y = shard_value(result(fn), "tp", [[]])
            shard_value(y, "tp", [[0]], for_users=True)
        else:
            shard_value(result(fn), "tp", [[]], for_users=True)
    return module, lambda x, w1, w2: mlp(x, w1, w2)


def _local(tensor, memref_type, rank: int):
    from hir.dialect import sharding_of
    from hir.interpreter.inputs import shard

    return shard(tensor, sharding_of(memref_type), rank).clone()


def _check(name: str, module, reference, rank: int, failures: list, extent: int = 8) -> None:
    """Run ``module`` as converted and after hir-lower; compare with the reference (a
    dynamic dim of an argument gets ``extent``)."""
    import torch
    from torch_mlir import ir

    import hir

    fn = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and "hir.kernel" not in op.operation.attributes
    )
    arg_types = [a.type for a in fn.regions[0].blocks[0].arguments]
    out_type = ir_function_result(fn)
    gen = torch.Generator().manual_seed(len(name))
    globals_ = [
        torch.randint(-8, 8, shape, generator=gen, dtype=torch.int32)
        if str(t.element_type).startswith("i")
        else torch.randn(shape, generator=gen)
        for t, shape in (
            (t, [extent if ir.ShapedType.is_dynamic_size(d) else d for d in t.shape]) for t in arg_types
        )  # 8: a dynamic extent splits over 2 and 4
    ]
    want = _local(reference(*globals_), out_type, rank)
    inputs = [_local(g, t, rank) for g, t in zip(globals_, arg_types)]
    lowered = hir.parse(str(module), f"{name}.mlir")
    hir.lower(lowered, "hir-lower")
    for stage, program in (("converted", module), ("lowered", lowered)):
        (got,) = hir.run(program, inputs, device="cpu")
        if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
            failures.append(f"rank {rank}: {name} ({stage}): got {got}, want {want}")
        else:
            print(f"rank {rank}: {name} {stage} ok")


def _arg_shapes(module) -> list:
    fn = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and "hir.kernel" not in op.operation.attributes
    )
    return [list(a.type.shape) for a in fn.regions[0].blocks[0].arguments]


def ir_function_result(fn):
    from torch_mlir import ir

    return ir.FunctionType(ir.TypeAttr(fn.operation.attributes["function_type"]).value).results[0]


def worker() -> int:
    import torch

    import hir

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.manual_seed(0)  # the FX module's example inputs: the same on every rank
    failures: list = []
    for name, text, reference in handwritten(world):
        module = hir.parse(text, f"{name}.mlir")
        hir.lower(module, "hir-convert-shard-to-hir{backend=gloo}")
        _check(name, module, reference, rank, failures)
    for name, text, reference in annotated(world):
        module = hir.parse(text, f"{name}.mlir")
        before = _arg_shapes(module)
        hir.from_shard(module, backend="gloo")
        if _arg_shapes(module) != before:  # no argument's global shape changes silently
            failures.append(f"{name}: arguments {before} became {_arg_shapes(module)}")
        _check(name, module, reference, rank, failures)
    for sequence_parallel in (False, True):
        module, reference = fx_mlp(world, sequence_parallel)
        hir.from_shard(module, backend="gloo")
        if sequence_parallel:
            assert '"hir.allgather"' in str(module) and '"hir.reduce_scatter"' in str(module), module
        else:
            assert '"hir.allreduce"' in str(module), module
        _check("fx_mlp_sp" if sequence_parallel else "fx_mlp_tp", module, reference, rank, failures)
    for failure in failures:
        print(failure, file=sys.stderr)
    from hir.interpreter.backends.process_groups import shutdown

    shutdown()
    return 1 if failures else 0


@pytest.mark.parametrize("world", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_shard_programs_run_equal_on_gloo_ranks(world):
    from multirank_util import launch_ranks

    result = launch_ranks(world, __file__, timeout_s=300, env=dict(os.environ))
    report = "\n".join(f"--- rank {r.rank} (rc {r.returncode})\n{r.stdout}{r.stderr}" for r in result.ranks)
    assert result.returncode == 0, report
    checked = sum(r.stdout.count(" ok") for r in result.ranks)
    assert checked == world * 2 * (len(handwritten(world)) + len(annotated(world)) + 2), report


def test_upstream_diagnostics_come_back_located(capfd):
    """A 3-D LayerNorm MLP that upstream sharding-propagation cannot take (the expand/collapse
    around 3-D activations, the norm's reductions): hir.from_shard raises HirError with
    upstream's own messages at their locations (the module's Python source lines: the FX
    importer's context, which has no hir diagnostic handler), and nothing goes to stderr."""
    import torch
    from torch_mlir import fx

    import hir
    from hir.frontend.shard import add_grid, result, shard_value

    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.LayerNorm(16),
        torch.nn.Linear(16, 32, bias=False),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 16, bias=False),
    ).eval()
    module = fx.export_and_import(block, torch.randn(2, 8, 16), output_type="linalg-on-tensors", func_name="main")
    with module.context:
        shard_value(result(add_grid(module, "tp", 2)), "tp", [[]], for_users=True)
    capfd.readouterr()
    with pytest.raises(hir.HirError) as err:
        hir.from_shard(module, backend="gloo", source_name="block.mlir")
    message = str(err.value)
    assert "Failure while executing pass pipeline" not in message, message
    assert re.search(
        r"^\S*linear\.py:\d+:\d+: error: 'tensor\.(expand|collapse)_shape' op sharding interface is not implemented",
        message,
        re.M,
    ), message
    assert re.search(r"^\S*normalization\.py:\d+:\d+: error: 'linalg\.generic' op", message, re.M), message
    assert capfd.readouterr().err == ""


if __name__ == "__main__":
    sys.exit(worker())
