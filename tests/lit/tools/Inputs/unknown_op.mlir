func.func @f() {
  "foo.bar"() : () -> ()
  func.return
}
