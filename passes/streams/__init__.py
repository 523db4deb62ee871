"""The stream passes, each a set of rewrite patterns over the stream-loop structure of
``_stream_loops.py``: hir-stream-lowering (stream-parallel ops into stream loops),
hir-fuse-loops (adjacent twin loops merged) and hir-reuse-stream-buffers (slot buffers)."""
