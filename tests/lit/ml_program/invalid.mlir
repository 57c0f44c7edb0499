// RUN: qopt-opt %s --split-input-file --verify-diagnostics

builtin.module {
  // expected-error@+1 {{global @g: value of type tensor<3xf32> for a global of type tensor<2xf32>}}
  ml_program.global private mutable @g(dense<0.0> : tensor<3xf32>) : tensor<2xf32>
}

// -----

builtin.module {
  ml_program.global private mutable @g : tensor<2xf32>
  func.func @f() -> tensor<2xi32> {
    // expected-error@+1 {{'ml_program.global_load' of @g: type tensor<2xi32>, the global's is tensor<2xf32>}}
    %v = ml_program.global_load @g : tensor<2xi32>
    func.return %v : tensor<2xi32>
  }
}

// -----

builtin.module {
  func.func @f() -> tensor<2xf32> {
    // expected-error@+1 {{'ml_program.global_load': @missing is not an ml_program.global}}
    %v = ml_program.global_load @missing : tensor<2xf32>
    func.return %v : tensor<2xf32>
  }
}

// -----

builtin.module {
  ml_program.global private @c(dense<0.0> : tensor<2xf32>) : tensor<2xf32>
  func.func @f(%x: tensor<2xf32>) {
    // expected-error@+1 {{'ml_program.global_store': @c is not mutable}}
    ml_program.global_store @c = %x : tensor<2xf32>
    func.return
  }
}

// -----

builtin.module {
  ml_program.global private mutable @g : tensor<2xf32>
  func.func @f(%x: tensor<2xf32>) {
    // expected-error@+1 {{'ml_program.global_store': @g is stored more than once in one function (a call writes each state once)}}
    ml_program.global_store @g = %x : tensor<2xf32>
    ml_program.global_store @g = %x : tensor<2xf32>
    func.return
  }
}

// -----

builtin.module {
  ml_program.global private mutable @g : tensor<2xf32>
  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    // expected-error@+1 {{'ml_program.global_load' of @g after its store (a call reads the state it starts with)}}
    ml_program.global_store @g = %x : tensor<2xf32>
    %v = ml_program.global_load @g : tensor<2xf32>
    func.return %v : tensor<2xf32>
  }
}
