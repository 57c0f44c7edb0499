#version 450
// LUT (palettized) weight linear: W[n, k] = cb[((n / BN) * GK + k / BK) * L + code[n, k]],
// out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]).
// codes: FBITS-bit fields (FBITS = nbits rounded up to 1/2/4/8) packed by
// packing.pack_bits (lo = 0), row_words per row; codebook f32 [N/BN, K/BK, L]
// (qfused's [.., .., 2^nbits, 1] flattened); codes >= L (never packed, but FBITS may hold
// them) read entry L - 1. One output per invocation.
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int FBITS = 4;
layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int WG = 64;
const uint VPW = uint(32 / FBITS);
const uint MASK = (1u << FBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer C { uint codes[]; };
layout(std430, binding = 2) readonly buffer CB { float cb[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };
layout(push_constant) uniform P {
  uint M; uint N; uint K; uint row_words; uint BN; uint BK; uint GK; uint L;
} p;

void main() {
  uint total = p.M * p.N;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint m = i / p.N, n = i % p.N;
    uint cbrow = (n / p.BN) * p.GK;
    float acc = 0.0;
    for (uint k = 0; k < p.K; ++k) {
      uint code = (codes[n * p.row_words + k / VPW] >> (uint(FBITS) * (k % VPW))) & MASK;
      code = min(code, p.L - 1u);  // a code read from the buffer stays inside its palette
      acc += x[m * p.K + k] * cb[(cbrow + k / p.BK) * p.L + code];
    }
    if (HAS_BIAS == 1) acc += bias[n];
    o[i] = acc;
  }
}
