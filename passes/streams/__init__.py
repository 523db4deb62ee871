"""The stream passes, each a set of rewrite patterns over the stream loop op
``hir.stream_for`` (``_stream_loops.py`` builds it and slices a stream-parallel op):
hir-stream-lowering (stream-parallel ops into stream loops), hir-fuse-loops (adjacent twin
loops fused), hir-reuse-stream-buffers (slot buffers) and hir-expand-stream-loops (each
loop written as nvFuser's ``hir.for`` form, the end of the stream passes)."""
