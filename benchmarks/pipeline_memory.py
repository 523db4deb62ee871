"""Peak memory of a stream-pipelined (stream-lowered) program against the unpipelined one,
with and without stream buffer reuse (``hir-reuse-stream-buffers``).

    python benchmarks/pipeline_memory.py [--device cpu|cuda] [--m 4096] [--k 512] [--n 512] [--dtype f32]

Variants of each program-level module:
  unpipelined   hir-insert-deallocations only: whole-buffer ops, intermediates freed early
  pipelined     hir-lower: stream loops; every intermediate is full-size for the whole loop
  pipelined+reuse  hir-lower-reuse: intermediates become [num_streams, ...] slot buffers

Peak = bytes of live interpreter allocations (Program(track_memory=True); inputs not
counted; exact on CPU and GPU), and on CUDA also torch.cuda.max_memory_allocated() above the
inputs. Goal (issue 5): pipelined+reuse within 5% of unpipelined.
"""

import argparse

import torch

import hir
from hir.interpreter import Program

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def _rows(c: int, m: int, d: int, dt: str) -> tuple[str, tuple]:
    """A [c, m/c, d] chunked buffer type (stream axis 0 = chunks) and its shape."""
    return f"memref<{c}x{m // c}x{d}x{dt}>", (c, m // c, d)


def matmul_add(c: int, m: int, k: int, n: int, dt: str) -> tuple[str, list]:
    """The README example on chunks: t = x @ w (stream-parallel chunks), out = t + t."""
    (X, xs), W, (T, _) = _rows(c, m, k, dt), f"memref<{k}x{n}x{dt}>", _rows(c, m, n, dt)
    text = f"""func.func @main(%x: {X}, %w: {W}) -> {T} {{
  %t = memref.alloc() : {T}
  "hir.matmul"(%x, %w, %t) {{stream_axis = 0 : i64}} : ({X}, {W}, {T}) -> ()
  %out = memref.alloc() : {T}
  "hir.binary"(%t, %t, %out) {{kind = "add", stream_axis = 0 : i64}} : ({T}, {T}, {T}) -> ()
  return %out : {T}
}}"""
    return text, [xs, (k, n)]


def mlp(c: int, m: int, k: int, n: int, dt: str) -> tuple[str, list]:
    """h = x @ w1 ; g = h * h ; out = g @ w2 (a two-layer block, chunks stream-parallel)."""
    (X, xs), W1, (H, _), W2 = _rows(c, m, k, dt), f"memref<{k}x{n}x{dt}>", _rows(c, m, n, dt), f"memref<{n}x{k}x{dt}>"
    OUT = X
    text = f"""func.func @main(%x: {X}, %w1: {W1}, %w2: {W2}) -> {OUT} {{
  %h = memref.alloc() : {H}
  "hir.matmul"(%x, %w1, %h) {{stream_axis = 0 : i64}} : ({X}, {W1}, {H}) -> ()
  %g = memref.alloc() : {H}
  "hir.binary"(%h, %h, %g) {{kind = "mul", stream_axis = 0 : i64}} : ({H}, {H}, {H}) -> ()
  %out = memref.alloc() : {OUT}
  "hir.matmul"(%g, %w2, %out) {{stream_axis = 0 : i64}} : ({H}, {W2}, {OUT}) -> ()
  return %out : {OUT}
}}"""
    return text, [xs, (k, n), (n, k)]


VARIANTS = [
    ("unpipelined", "hir-insert-deallocations"),
    ("pipelined", "hir-lower"),
    ("pipelined+reuse", "hir-lower-reuse"),
]


def measure(text: str, pipeline: str, inputs: list, device: torch.device, num_streams: int):
    module = hir.parse(text)
    hir.lower(module, pipeline)
    program = Program(module, device=str(device), num_streams=num_streams, track_memory=True)
    program(inputs)  # warm-up (streams, cuBLAS workspaces)
    cuda_peak = None
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
    program.memory.reset()
    outputs = program(inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        cuda_peak = torch.cuda.max_memory_allocated(device) - base
    return program.memory.peak, cuda_peak, outputs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--k", type=int, default=512)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    p.add_argument("--num-streams", type=int, default=4)
    p.add_argument(
        "--chunks", type=int, default=16, help="stream-axis extent: the m rows in this many chunks (default 16)"
    )
    args = p.parse_args()
    dev = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    print(
        f"device: {dev}, torch {torch.__version__}, dtype {args.dtype}, m={args.m} "
        f"k={args.k} n={args.n}, num_streams={args.num_streams}, chunks={args.chunks}"
    )
    print(
        "| program | variant | peak allocations (MiB) | vs "
        "unpipelined | cuda max_memory_allocated (MiB) | max abs diff |"
    )
    print("|---|---|---:|---:|---:|---:|")
    mib = 1 << 20
    for name, make in (("matmul+add", matmul_add), ("mlp", mlp)):
        text, shapes = make(args.chunks, args.m, args.k, args.n, args.dtype)
        gen = torch.Generator().manual_seed(0)
        inputs = [(torch.randn(s, generator=gen) / s[-1] ** 0.5).to(dtype=dtype, device=dev) for s in shapes]
        base_peak, reference = None, None
        for label, pipeline in VARIANTS:
            peak, cuda_peak, outputs = measure(text, pipeline, inputs, dev, args.num_streams)
            if base_peak is None:
                base_peak, reference = peak, outputs[0].float()
            diff = (outputs[0].float() - reference).abs().max().item()
            cuda = f"{cuda_peak / mib:.2f}" if cuda_peak is not None else "-"
            print(f"| {name} | {label} | {peak / mib:.2f} | {peak / base_peak:.3f}x | {cuda} | {diff:.2e} |")


if __name__ == "__main__":
    main()
