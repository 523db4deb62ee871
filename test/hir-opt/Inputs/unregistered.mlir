// An op of a dialect nobody loaded: an error unless --allow-unregistered-dialect.
func.func @f(%i: index) {
  "foo.bar"(%i) {answer = 42 : i64} : (index) -> ()
  return
}
