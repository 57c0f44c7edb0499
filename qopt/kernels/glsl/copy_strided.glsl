#version 450
// out[out_off + idx . so] = in[in_off + idx . si] for every idx of the 6-D index space d.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) buffer Out { uint y[]; };
layout(push_constant) uniform P {
  uint n; uint in_off; uint out_off; uint d[6]; uint si[6]; uint so[6];
} p;

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint rem = i, ii = p.in_off, io = p.out_off;
    for (int k = 5; k >= 0; --k) {
      uint idx = rem % p.d[k];
      rem /= p.d[k];
      ii += idx * p.si[k];
      io += idx * p.so[k];
    }
    y[io] = x[ii];
  }
}
