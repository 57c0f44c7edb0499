#version 450
// out[i] = cond[.] != 0 ? a[.] : b[.] over a 6-D index space d with per-operand
// strides (0 = broadcast); operands are 32-bit words of any type.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG = 64;
layout(std430, binding = 0) readonly buffer C { uint c[]; };
layout(std430, binding = 1) readonly buffer A { uint a[]; };
layout(std430, binding = 2) readonly buffer B { uint b[]; };
layout(std430, binding = 3) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform P { uint n; uint d[6]; uint sc[6]; uint sa[6]; uint sb[6]; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint rem = i, ic = 0, ia = 0, ib = 0;
    for (int k = 5; k >= 0; --k) {
      uint idx = rem % p.d[k];
      rem /= p.d[k];
      ic += idx * p.sc[k];
      ia += idx * p.sa[k];
      ib += idx * p.sb[k];
    }
    o[i] = c[ic] != 0u ? a[ia] : b[ib];
  }
}
