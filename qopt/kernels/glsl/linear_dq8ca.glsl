#version 450
// Dynamic per-row activation linear (linear_dq8ca_q4gsw / linear_dq8ca_q8csw):
// xq i32 [M, K] with per-row x_scale f32 [M], x_zp i32 [M] (choose_qparams_rows +
// quantize_rows); weights WBITS-bit fields packed by packing.pack_bits (row_words per
// row), s f32 [N, ngroups], z i32 [N, ngroups] = zp - lo (HAS_ZERO_POINT, else 2^(WBITS-1)).
//   acc_g = sum_{k in group g} (xq - x_zp) * (field - z[n, g])         (exact int32)
//   y = (sum_g f32(acc_g) * s[n, g], in group order) * x_scale[m] (+ bias[n])
// One output per invocation (grid-stride over M*N).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int WG = 64;
const uint VPW = uint(32 / WBITS);
const uint MASK = (1u << WBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { int xq[]; };
layout(std430, binding = 1) readonly buffer XS { float x_scale[]; };
layout(std430, binding = 2) readonly buffer XZ { int x_zp[]; };
layout(std430, binding = 3) readonly buffer Wq { uint w[]; };
layout(std430, binding = 4) readonly buffer S { float scales[]; };
layout(std430, binding = 5) readonly buffer Z { int zeros[]; };
layout(std430, binding = 6) readonly buffer Bias { float bias[]; };
layout(std430, binding = 7) writeonly buffer Out { float o[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;

void main() {
  uint total = p.M * p.N;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint m = i / p.N, n = i % p.N;
    int zx = x_zp[m];
    precise float y = 0.0;
    for (uint g = 0; g < p.ngroups; ++g) {
      int z = HAS_ZERO_POINT == 1 ? zeros[n * p.ngroups + g] : (1 << (WBITS - 1));
      int acc = 0;
      uint kend = min(p.K, (g + 1) * uint(GROUP_SIZE));
      for (uint k = g * uint(GROUP_SIZE); k < kend; ++k) {
        int wv = int((w[n * p.row_words + k / VPW] >> (uint(WBITS) * (k % VPW))) & MASK) - z;
        acc += (xq[m * p.K + k] - zx) * wv;
      }
      precise float term = float(acc) * scales[n * p.ngroups + g];
      y = y + term;
    }
    y = y * x_scale[m];
    if (HAS_BIAS == 1) y = y + bias[n];
    o[i] = y;
  }
}
