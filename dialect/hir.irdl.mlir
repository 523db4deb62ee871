// The hir dialect in IRDL, generated from the op classes: hir-opt --emit-irdl > dialect/hir.irdl.mlir
// (test/python/test_op_docs.py fails when it is stale). Upstream tools load it with
// --irdl-file; see the README, "hir IR in upstream tools".
module {
  irdl.dialect @hir {
    irdl.type @stream {
      irdl.parameters()
    }
    irdl.type @work {
      irdl.parameters()
    }
    irdl.attribute @shard {
      %0 = irdl.any
      %1 = irdl.any
      irdl.parameters(mesh: %0, axis: %1)
    }
    irdl.operation @get_current_stream {
      %0 = irdl.parametric @hir::@stream<> 
      irdl.results(result: %0)
    }
    irdl.operation @get_stream {
      %0 = irdl.base "!builtin.index" 
      irdl.operands(index: %0)
      %1 = irdl.parametric @hir::@stream<> 
      irdl.results(result: %1)
    }
    irdl.operation @set_current_stream {
      %0 = irdl.base @hir::@stream 
      irdl.operands(stream: %0)
    }
    irdl.operation @synchronize {
      %0 = irdl.base @hir::@stream 
      irdl.operands(stream: %0)
    }
    irdl.operation @alias_select {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.index" 
      irdl.operands(input: %0, index: %1)
      %2 = irdl.base "#builtin.integer" 
      irdl.attributes {"axis" = %2}
      %3 = irdl.base "!builtin.memref" 
      irdl.results(result: %3)
    }
    irdl.operation @alias_chunk {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.index" 
      irdl.operands(input: %0, index: %1)
      %2 = irdl.base "#builtin.integer" 
      %3 = irdl.base "#builtin.integer" 
      irdl.attributes {"axis" = %2, "chunks" = %3}
      %4 = irdl.base "!builtin.memref" 
      irdl.results(result: %4)
    }
    irdl.operation @alias_broadcast {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0)
      %1 = irdl.base "!builtin.memref" 
      irdl.results(result: %1)
    }
    irdl.operation @alias_reshape {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0)
      %1 = irdl.base "#builtin.array" 
      irdl.attributes {"reassociation" = %1}
      %2 = irdl.base "!builtin.memref" 
      irdl.results(result: %2)
    }
    irdl.operation @alias_stack_shards {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0)
      %1 = irdl.base "#builtin.integer" 
      %2 = irdl.base "#builtin.integer" 
      irdl.attributes {"axis" = %1, "at" = %2}
      %3 = irdl.base "!builtin.memref" 
      irdl.results(result: %3)
    }
    irdl.operation @for {
      %0 = irdl.base "!builtin.index" 
      %1 = irdl.base "!builtin.index" 
      %2 = irdl.base "!builtin.index" 
      irdl.operands(lower_bound: %0, upper_bound: %1, step: %2)
      %3 = irdl.region
      irdl.regions(body: %3)
    }
    irdl.operation @stream_for {
      %0 = irdl.base "!builtin.index" 
      %1 = irdl.base "!builtin.index" 
      %2 = irdl.base "!builtin.index" 
      %3 = irdl.base @hir::@stream 
      %4 = irdl.base "!builtin.index" 
      irdl.operands(lower_bound: %0, upper_bound: %1, step: %2, user_stream: %3, slots: optional %4)
      %5 = irdl.region
      irdl.regions(body: %5)
    }
    irdl.operation @yield 
    irdl.operation @allgather {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4}
      %5 = irdl.parametric @hir::@work<> 
      irdl.results(work: %5)
    }
    irdl.operation @allreduce {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      %5 = irdl.base "#builtin.string" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4, "reduction" = %5}
      %6 = irdl.parametric @hir::@work<> 
      irdl.results(work: %6)
    }
    irdl.operation @reduce_scatter {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      %5 = irdl.base "#builtin.integer" 
      %6 = irdl.base "#builtin.string" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4, "scatter_axis" = %5, "reduction" = %6}
      %7 = irdl.parametric @hir::@work<> 
      irdl.results(work: %7)
    }
    irdl.operation @broadcast {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.any
      irdl.attributes {"team" = %2, "backend" = %3, "root" = %4}
      %5 = irdl.parametric @hir::@work<> 
      irdl.results(work: %5)
    }
    irdl.operation @scatter {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      %5 = irdl.base "#builtin.integer" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4, "root" = %5}
      %6 = irdl.parametric @hir::@work<> 
      irdl.results(work: %6)
    }
    irdl.operation @gather {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      %5 = irdl.base "#builtin.integer" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4, "root" = %5}
      %6 = irdl.parametric @hir::@work<> 
      irdl.results(work: %6)
    }
    irdl.operation @reduce {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      %5 = irdl.base "#builtin.integer" 
      %6 = irdl.base "#builtin.string" 
      irdl.attributes {"team" = %2, "backend" = %3, "axis" = %4, "root" = %5, "reduction" = %6}
      %7 = irdl.parametric @hir::@work<> 
      irdl.results(work: %7)
    }
    irdl.operation @send_recv {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.any
      %3 = irdl.base "#builtin.string" 
      %4 = irdl.base "#builtin.integer" 
      irdl.attributes {"team" = %2, "backend" = %3, "root" = %4}
      %5 = irdl.parametric @hir::@work<> 
      irdl.results(work: %5)
    }
    irdl.operation @send {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(buffer: %0)
      %1 = irdl.base "#builtin.integer" 
      %2 = irdl.base "#builtin.string" 
      irdl.attributes {"peer" = %1, "backend" = %2}
      %3 = irdl.parametric @hir::@work<> 
      irdl.results(work: %3)
    }
    irdl.operation @recv {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(buffer: %0)
      %1 = irdl.base "#builtin.integer" 
      %2 = irdl.base "#builtin.string" 
      irdl.attributes {"peer" = %1, "backend" = %2}
      %3 = irdl.parametric @hir::@work<> 
      irdl.results(work: %3)
    }
    irdl.operation @wait {
      %0 = irdl.base @hir::@work 
      irdl.operands(work: %0)
    }
    irdl.operation @set {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
    }
    irdl.operation @binary {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      %2 = irdl.base "!builtin.memref" 
      irdl.operands(lhs: %0, rhs: %1, output: %2)
      %3 = irdl.base "#builtin.string" 
      irdl.attributes {"kind" = %3}
    }
    irdl.operation @reduction {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, output: %1)
      %2 = irdl.base "#builtin.string" 
      %3 = irdl.any
      irdl.attributes {"kind" = %2, "axes" = %3}
    }
    irdl.operation @matmul {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      %2 = irdl.base "!builtin.memref" 
      irdl.operands(a: %0, b: %1, output: %2)
    }
    irdl.operation @linear {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      %2 = irdl.base "!builtin.memref" 
      %3 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0, weight: %1, output: %2, bias: optional %3)
    }
    irdl.operation @device_index {
      %0 = irdl.any
      irdl.attributes {"mesh" = %0}
      %1 = irdl.base "!builtin.index" 
      irdl.results(result: %1)
    }
    irdl.operation @shift {
      %0 = irdl.base "!builtin.memref" 
      %1 = irdl.base "!builtin.memref" 
      %2 = irdl.base "!builtin.index" 
      irdl.operands(input: %0, output: %1, offset: %2)
      %3 = irdl.any
      %4 = irdl.base "#builtin.string" 
      irdl.attributes {"team" = %3, "backend" = %4}
      %5 = irdl.parametric @hir::@work<> 
      irdl.results(work: %5)
    }
    irdl.operation @own_block {
      %0 = irdl.base "!builtin.memref" 
      irdl.operands(input: %0)
      %1 = irdl.base "#builtin.integer" 
      irdl.attributes {"axis" = %1}
      %2 = irdl.base "!builtin.memref" 
      irdl.results(result: %2)
    }
    irdl.operation @barrier {
      %0 = irdl.any
      %1 = irdl.base "#builtin.string" 
      irdl.attributes {"team" = %0, "backend" = %1}
      %2 = irdl.parametric @hir::@work<> 
      irdl.results(work: %2)
    }
    irdl.operation @adam_update {
      %0 = irdl.base "!builtin.unranked_memref" 
      %1 = irdl.base "!builtin.unranked_memref" 
      %2 = irdl.base "!builtin.unranked_memref" 
      %3 = irdl.base "!builtin.unranked_memref" 
      %4 = irdl.base "!builtin.memref" 
      %5 = irdl.base "!builtin.memref" 
      irdl.operands(params: variadic %0, grads: variadic %1, exp_avgs: variadic %2, exp_avg_sqs: variadic %3, steps: variadic %4, lr: %5)
      %6 = irdl.base "#builtin.string" 
      %7 = irdl.base "#builtin.string" 
      %8 = irdl.base "#builtin.float" 
      %9 = irdl.base "#builtin.float" 
      %10 = irdl.base "#builtin.float" 
      %11 = irdl.base "#builtin.float" 
      irdl.attributes {"kind" = %6, "kernel" = %7, "beta1" = %8, "beta2" = %9, "eps" = %10, "weight_decay" = %11}
    }
  }
}

