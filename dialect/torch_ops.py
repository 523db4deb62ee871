"""torch-mlir ``torch`` dialect ops as hir programs hold them in kernel segments: which
``torch.ops`` overload a registry op (``torch.aten.*``, ``torch.prims.*``, the ``name`` of a
``torch.operator``) stands for. Read by the interpreter (to run the op) and the PyTorch
frontend (to ask the overload's tags). torch is imported on first use only.
"""

from typing import Any

# torch-mlir names an op of PyTorch's registry ``torch.<namespace>.<name>[.<overload>]``.
REGISTRY_PREFIXES = ("torch.aten.", "torch.prims.")


def torch_overload(op_name: str) -> Any | None:
    """``torch.ops.<namespace>.<name>.<overload>`` (a ``torch._ops.OpOverload``) for a
    torch-mlir op name (``default`` when it has no overload part), or None."""
    import torch  # the dialect layer does not import torch

    parts = op_name.split(".")
    if len(parts) not in (3, 4) or parts[0] != "torch":
        return None
    namespace = getattr(torch.ops, parts[1], None)
    packet = getattr(namespace, parts[2], None) if namespace is not None else None
    overload = parts[3] if len(parts) == 4 else "default"
    if packet is None or not hasattr(packet, "overloads") or overload not in packet.overloads():
        return None
    return getattr(packet, overload)
