#version 450
// Quantized embedding (embedding_q4gsw / embedding_q8csw / asymmetric variants):
// out[i, d] = (f32(field(w[r, d])) - f32(z[r, d / G])) * s[r, d / G], r = idx[i]
// (r in [-V, 0) counts from the end; outside [-V, V) -> 0; any r outside [0, V) sets
// status[0] = 1, an error for the program). w: WBITS-bit fields packed by
// packing.pack_bits (row_words per row); s f32 [V, ngroups]; z i32 [V, ngroups] =
// zp - lo (HAS_ZERO_POINT, else 2^(WBITS-1)).
// Each invocation writes the VPW outputs of one weight word (grid-stride over n *
// ceil(D / VPW)): the index, the word and (groups holding whole words) the scale and zero
// are loaded once for them; each output is computed as alone (bit-exact).
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int WG = 64;
const uint VPW = uint(32 / WBITS);
const uint MASK = (1u << WBITS) - 1u;
layout(std430, binding = 0) readonly buffer I { int idx[]; };
layout(std430, binding = 1) readonly buffer Wq { uint w[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };
layout(std430, binding = 5) buffer Status { uint status[]; };
layout(push_constant) uniform P { uint n; uint D; uint V; uint row_words; uint ngroups; } p;

void main() {
  uint wpr = (p.D + VPW - 1u) / VPW;  // words per output row
  uint total = p.n * wpr;
  bool word_groups = uint(GROUP_SIZE) % VPW == 0u;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint t = i / wpr, wi = i % wpr;
    uint d0 = wi * VPW, ob = t * p.D;
    int r = idx[t];
    if (r < 0 || r >= int(p.V)) atomicOr(status[0], 1u);  // outside [0, V): an error
    if (r < 0) r += int(p.V);
    if (r < 0 || r >= int(p.V)) {
      for (uint e = 0u; e < VPW; ++e) {
        if (d0 + e < p.D) o[ob + d0 + e] = 0.0;
      }
      continue;
    }
    uint row = uint(r);
    uint word = w[row * p.row_words + wi];
    uint gw = row * p.ngroups + d0 / uint(GROUP_SIZE);
    float sw = scales[gw];
    float zw = HAS_ZERO_POINT == 1 ? float(zeros[gw]) : float(1 << (WBITS - 1));
    for (uint e = 0u; e < VPW; ++e) {
      uint d = d0 + e;
      if (d >= p.D) break;
      float s = sw, z = zw;
      if (!word_groups) {
        uint gi = row * p.ngroups + d / uint(GROUP_SIZE);
        s = scales[gi];
        z = HAS_ZERO_POINT == 1 ? float(zeros[gi]) : float(1 << (WBITS - 1));
      }
      precise float v = float((word >> (uint(WBITS) * e)) & MASK) - z;
      o[ob + d] = v * s;
    }
  }
}
