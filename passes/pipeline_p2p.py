"""``hir-p2p-pipeline{algorithm=local-first|ring backend=cuda}``: nvFuser's AllgatherP2p /
AG_matmul_P2p. An all-gather whose gathered axis is also its stream axis (the device axis
is stream-parallel: ``stream_axis == axis``, which hir-stream-lowering rejects) becomes a
stream loop of n = team-size steps; step j copies ONE peer's shard with ``hir.shift`` (a
paired send+recv, copy-engine P2P with ``backend = "cuda"``) into its slice of the gathered
buffer, and the stream-parallel ops that read the gathered buffer (a matmul, ...) run on
that slice in the same step, on pool stream j, so the copy of step j+1 overlaps the matmul
of step j. ``local-first``: step j reads position (me + j) mod n, so step 0 is this rank's
own shard (a local copy, no wait on a peer) and its matmul starts at once; ``ring``: step j
reads position (me - j) mod n (the other direction). Run it after
hir-convert-to-communication and before hir-stream-lowering (which lowers every other
stream-parallel op): ``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower``.

Before (after hir-convert-to-communication; A is [4, 2, 8] split along axis 0 over 4 devices)::

    %w = "hir.allgather"(%A, %tmp) {axis = 0 : i64, backend = "cuda", stream_axis = 0 : i64, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64} : (memref<4x2x8xf32, ...>, memref<8x5xf32, ...>, memref<4x2x5xf32, ...>) -> ()

After (local-first)::

    %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %c0 = arith.constant 0 : index ; %c1 = arith.constant 1 : index ; %c4 = arith.constant 4 : index
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.for"(%c0, %c4, %c1) ({ ^bb0(%j: index):              // initial sync loop
      %s = "hir.get_stream"(%j) ; "hir.set_current_stream"(%s) ; "hir.synchronize"(%user) })
    "hir.for"(%c0, %c4, %c1) ({ ^bb0(%j: index):              // one step per peer
      %s = "hir.get_stream"(%j) ; "hir.set_current_stream"(%s)
      %0 = arith.addi %me, %j : index
      %p = arith.remui %0, %c4 : index                          // the peer whose shard this step uses
      %t = "hir.alias_select"(%tmp, %p) {axis = 0 : i64} : (...) -> memref<2x8xf32, strided<[8, 1], offset: ?>, ...>
      %w = "hir.shift"(%A, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
      "hir.wait"(%w)
      %o = "hir.alias_select"(%out, %p) {axis = 0 : i64} : (...) -> memref<2x5xf32, strided<[5, 1], offset: ?>, ...>
      "hir.matmul"(%t, %B, %o)
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%s) })

``backend`` (default: keep the all-gather's) sets the shift's backend. Consumers are the
stream-parallel compute ops of the same block that read the gathered buffer with the same
stream axis; they must come after the all-gather's wait and before any other use of their
outputs' slices (the op order is kept). Errors: a gathered axis whose extent is not the team
size (one shard per step), ops between the all-gather and a consumer that touch the buffers.
"""

from dataclasses import dataclass

from torch_mlir import ir

from hir.dialect.compute_ops import STREAM_AXIS_ATTR
from hir.dialect.view_ops import select_type
from hir.passes import _stream_loops
from hir.passes._ir import COMPUTE_OPS, create, fail, func_ops, get_i64_array, get_int, get_str, i64_attr, index_const
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.stream_lowering import _renumber_axes, _slices
from hir.passes._axes import operand_axis, output_index

ALGORITHMS = ("local-first", "ring")


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather (+ its matmul consumers) to a per-peer P2P pipeline (nvFuser AG_matmul_P2p)."
    algorithm: str = "local-first"
    backend: str = ""

    def run(self, module: ir.Module) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", "nccl", "gloo", "cuda"):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of nccl, gloo, cuda")
        for func in func_ops(module):
            body = func.regions[0].blocks[0]
            todo = [op.operation for op in body.operations if op.operation.name == "hir.allgather" and _is_p2p(op.operation)]
            for op in todo:
                self._lower(op, list(body.operations))

    def _lower(self, ag: ir.Operation, block_ops: list) -> None:
        axis = get_int(ag, "axis")
        team = get_i64_array(ag, "team")
        n = len(team)
        src, gathered = ag.operands[0], ag.operands[1]
        extent = ir.MemRefType(gathered.type).shape[axis]
        if extent != n:
            raise fail(ag, f"gathers axis {axis} of extent {extent} over {n} devices; hir-p2p-pipeline needs one shard per device along the stream axis (extent {n})")
        waits = [use.owner.operation for use in ag.results[0].uses]
        if any(w.name != "hir.wait" for w in waits) or len(waits) != 1:
            raise fail(ag, "must have exactly one use, its hir.wait")
        consumers = _consumers(ag, gathered, axis, block_ops)
        backend = self.backend or get_str(ag, "backend")
        loc = ag.location
        with ir.InsertionPoint(ag), loc:
            me = create("hir.device_index", results=[ir.IndexType.get()], attributes={"mesh": ir.DenseI64ArrayAttr.get(team)}).result
            count = index_const(n)
            loop = _stream_loops.build(gathered, axis)
        with ir.InsertionPoint(loop.epilogue), loc:
            index = ir.IndexType.get()
            j = loop.iv
            if self.algorithm == "local-first":
                offset = j
            else:  # ring: (n - j) mod n
                offset = create("arith.remui", [create("arith.subi", [count, j], [index]).result, count], [index]).result
            peer = create("arith.remui", [create("arith.addi", [me, offset], [index]).result, count], [index]).result
            view = create("hir.alias_select", [gathered, peer], [select_type(gathered.type, axis)], {"axis": i64_attr(axis)}).result
            work = create(
                "hir.shift",
                [src, view, offset],
                [ir.Type.parse("!hir.work")],
                {"team": ir.DenseI64ArrayAttr.get(team), "backend": ir.StringAttr.get(backend)},
            ).result
            create("hir.wait", [work])
            for op in consumers:
                k = get_int(op, STREAM_AXIS_ATTR)
                in_axis = operand_axis(op, 0, k)
                for s in _slices(op, k):
                    source = op.operands[s.index]
                    if source == gathered:
                        op.operands[s.index] = view
                        continue
                    idx = loop.zero if s.broadcast else peer
                    op.operands[s.index] = create("hir.alias_select", [source, idx], [select_type(source.type, s.axis)], {"axis": i64_attr(s.axis)}).result
                op.move_before(loop.epilogue)
                del op.attributes[STREAM_AXIS_ATTR]
                _renumber_axes(op, in_axis)
        waits[0].erase()
        ag.erase()


def _is_p2p(op: ir.Operation) -> bool:
    k = get_int(op, STREAM_AXIS_ATTR)
    return k is not None and k == get_int(op, "axis")


def _consumers(ag: ir.Operation, gathered: ir.Value, axis: int, block_ops: list) -> list:
    """The stream-parallel compute ops after the all-gather reading ``gathered`` on ``axis``."""
    out = []
    after = False
    for op in block_ops:
        op = op.operation
        if op == ag:
            after = True
            continue
        if not after or gathered not in list(op.operands):
            continue
        if op.name == "hir.wait" or op.name == "memref.dealloc":
            continue
        k = get_int(op, STREAM_AXIS_ATTR)
        if op.name not in COMPUTE_OPS or k is None:
            continue
        if op.operands[output_index(op)] == gathered:
            raise fail(op, "writes the gathered buffer of a P2P pipeline")
        if any(operand_axis(op, i, k) != axis for i, v in enumerate(op.operands) if v == gathered):
            raise fail(op, f"reads the gathered buffer along another axis than its stream axis {axis}")
        out.append(op)
    return out
