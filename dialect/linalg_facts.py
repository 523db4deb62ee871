"""Facts about upstream ``linalg`` ops that hir programs hold in kernel segments, shared by
the passes and the interpreter (declared once here)."""

from torch_mlir import ir

# Named ops whose operands are all indexed by the identity map over parallel loops.
ELEMENTWISE_NAMED = tuple(
    f"linalg.{n}"
    for n in ("add", "sub", "mul", "div", "div_unsigned", "max", "min", "powf", "exp", "log", "abs", "ceil", "floor",
              "negf", "reciprocal", "round", "sqrt", "rsqrt", "square", "tanh", "erf", "select")
)  # fmt: skip

# Elementwise named ops that are an hir.binary of the same kind.
BINARY_NAMED = {f"linalg.{kind}": kind for kind in ("add", "sub", "mul", "div", "max", "min")}

# Contractions that are an hir.matmul when they write a zero fill (rank 2, or batched).
MATMUL_NAMED = ("linalg.matmul", "linalg.batch_matmul")

# The op that fills a tensor with a scalar (a zero fill is a matmul's fresh destination).
FILL_NAMED = "linalg.fill"

# Elementwise ops that add or subtract their operands: on partial sums (values still to be
# all-reduced with sum) they give a partial sum, so shard-simplify may move an all_reduce after them.
ADDITIVE = ("linalg.add", "linalg.sub", "arith.addf", "arith.subf", "arith.addi", "arith.subi")

# Dialects whose ops, applied to tensors, act elementwise (operands and results of one shape).
ELEMENTWISE_DIALECTS = ("arith", "math")


def is_elementwise(op: ir.Operation) -> bool:
    """An elementwise named linalg op, or an arith / math op on tensors."""
    if op.name in ELEMENTWISE_NAMED:
        return True
    return op.name.split(".")[0] in ELEMENTWISE_DIALECTS and any(
        isinstance(r.type, ir.RankedTensorType) for r in op.results
    )


def reduce_maps(op: ir.Operation) -> tuple[list[ir.AffineMap], list[int]]:
    """The indexing maps (inputs, then inits) and reduction loops of a ``linalg.reduce``,
    which states only ``dimensions``: the inputs index every loop, the inits the others."""
    rank = ir.ShapedType(op.operands[0].type).rank
    reduced = [int(d) for d in ir.DenseI64ArrayAttr(op.attributes["dimensions"])]
    kept = [ir.AffineDimExpr.get(d) for d in range(rank) if d not in reduced]
    count = len(op.operands) // 2
    return [ir.AffineMap.get_identity(rank)] * count + [ir.AffineMap.get(rank, 0, kept)] * count, reduced
