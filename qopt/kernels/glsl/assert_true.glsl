#version 450
// aten.assert_scalar: status[0] = 1 when the condition word is 0 (a run-time check torch
// recorded at export, e.g. that a cache position read with .item() is in range); the
// runtime zeroes the status before a run and raises an error naming the check.
layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer C { int cond[]; };
layout(std430, binding = 1) buffer Status { uint status[]; };

void main() {
  if (cond[0] == 0) atomicOr(status[0], 1u);
}
