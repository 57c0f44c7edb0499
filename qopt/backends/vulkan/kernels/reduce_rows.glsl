#version 450
// out[r] = reduce(in[r, 0:cols]) for a [rows, cols] view: OP 0 sum, 1 mean, 2 max, 3 min.
// One workgroup per row (grid-stride over rows); each thread reduces a strided
// slice, then a shared-memory tree.
layout(local_size_x = 64) in;
layout(constant_id = 0) const int OP = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;
shared float red[64];

float comb(float a, float b) {
  if (OP == 2) return max(a, b);
  if (OP == 3) return min(a, b);
  return a + b;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  float init = OP == 2 ? -1.0 / 0.0 : (OP == 3 ? 1.0 / 0.0 : 0.0);
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    float acc = init;
    for (uint c = t; c < p.cols; c += 64) acc = comb(acc, x[r * p.cols + c]);
    red[t] = acc;
    barrier();
    for (uint s = 32; s > 0; s >>= 1) {
      if (t < s) red[t] = comb(red[t], red[t + s]);
      barrier();
    }
    if (t == 0) y[r] = OP == 1 ? red[0] / float(p.cols) : red[0];
    barrier();
  }
}
