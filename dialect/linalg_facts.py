"""Facts about upstream ``linalg`` ops that hir programs hold in kernel segments, shared by
the passes and the interpreter (declared once here)."""

# Named ops whose operands are all indexed by the identity map over parallel loops.
ELEMENTWISE_NAMED = tuple(
    f"linalg.{n}"
    for n in ("add", "sub", "mul", "div", "div_unsigned", "max", "min", "powf", "exp", "log", "abs", "ceil", "floor",
              "negf", "reciprocal", "round", "sqrt", "rsqrt", "square", "tanh", "erf", "select")
)  # fmt: skip

# Elementwise named ops that are an hir.binary of the same kind.
BINARY_NAMED = {f"linalg.{kind}": kind for kind in ("add", "sub", "mul", "div", "max", "min")}
