#version 450
// out[i] = op(a[a_off + idx . sa], b[b_off + idx . sb]) over a 6-D index space d
// (leading dims 1; stride 0 = broadcast). DTYPE_F32: f32 inputs, DTYPE_I32: i32 inputs.
// Arithmetic ops write the input type; comparisons and logical ops write i32 0/1.
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = BINARY_ADD;
layout(constant_id = 1) const int DTYPE = DTYPE_F32;
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform P {
  uint n; uint d[6]; uint sa[6]; uint sb[6]; uint a_off; uint b_off; float alpha;
} p;

#include "elementwise_ops.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint rem = i;
    uint ia = p.a_off, ib = p.b_off;
    for (int k = 5; k >= 0; --k) {
      uint idx = rem % p.d[k];
      rem /= p.d[k];
      ia += idx * p.sa[k];
      ib += idx * p.sb[k];
    }
    o[i] = binary_op(OP, DTYPE, a[ia], b[ib], p.alpha);
  }
}
