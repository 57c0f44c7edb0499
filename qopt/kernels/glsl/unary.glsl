#version 450
// y[i] = op(x[i]); 32-bit words, f32 or i32 by DTYPE (op codes: qopt/kernels/opcodes.py).
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = UNARY_IDENTITY;
layout(constant_id = 1) const int DTYPE = DTYPE_F32;  // DTYPE_F32 or DTYPE_I32 input
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
// a: clamp min, leaky slope or shrink lambda; b: clamp max.
layout(push_constant) uniform P { uint n; float a; float b; } p;

#include "elementwise_ops.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    y[i] = unary_op(OP, DTYPE, x[i], p.a, p.b);
  }
}
