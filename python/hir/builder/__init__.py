"""Build hir modules from Python, in the spirit of nvFuser's FusionDefinition tests.

Program level: inputs, compute ops on whole buffers, a stream-parallel output axis and
device-mesh shardings; the passes lower it to a host program.

    from hir.builder import Builder, Shard

    b = Builder()
    x = b.input([None, 64], "f32")                    # dynamic first dim
    w = b.input([64, 32], "f32")
    y = b.matmul(x, w, stream_axis=0)                 # rows computed on pool streams
    b.output(b.add(y, y))
    module = b.finish()                               # verified ir.Module

Every compute method takes ``out=`` to write into an existing buffer (destination-passing
style) instead of allocating one. Every op is located at the Python line that built it, so
verifier and run-time errors read ``my_program.py:12:9: error: ...``.

Host level (for writing lowered programs by hand, as nvFuser's host-IR tests do), one typed
method per op: ``alloc``/``dealloc``, ``get_current_stream``/``get_stream``/
``set_current_stream``/``synchronize``, ``alias_select``, ``alias_chunk``, the views of
:mod:`hir.builder.views`, ``scalar`` / ``fill`` / ``if_`` (:mod:`hir.builder.control`), ``for_`` (a context
manager yielding the index), every collective (``allgather`` ... ``send_recv``, or
``communicate(kind, ...)``), ``send``/``recv``, ``wait``, ``device_index``, ``shift`` and
``barrier``.
"""

from hir.builder.host import Builder
from hir.builder.program import Shard, Tensor

__all__ = ["Builder", "Shard", "Tensor"]
