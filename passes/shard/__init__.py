"""The bridge from MLIR's upstream ``shard`` dialect to hir (docs/from-shard.md).

Three passes, run by the ``hir-from-shard`` pipelines around upstream's propagation and
partitioning:

* ``hir-set-grid-shape`` (``set_grid_shape.py``): gives dynamic grids the world's extents;
* ``hir-record-shard-signature`` (``record_shard_signature.py``): writes the argument and
  result shardings into the signature before ``shard-partition`` drops them;
* ``hir-convert-shard-to-hir`` (``convert_shard_to_hir.py``): the partitioned tensor
  program -> an hir host program, a function-level walker calling one handler per upstream
  op (``registry.py``) in program order, sharing a :class:`~hir.passes.shard.state.ConversionState`.
"""
