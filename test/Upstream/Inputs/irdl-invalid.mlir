func.func @bad_index(%c: i64) {
  %s = "hir.get_stream"(%c) : (i64) -> !hir.stream
  return
}
