#version 450
// LUT embedding: out[i, d] = cb[((r / BV) * GD + d / BD) * L + code[r, d]], r = idx[i];
// codes FBITS-bit fields (packing.pack_bits, lo = 0), row_words per row; codes >= L read
// entry L - 1 (as linear_lut). r in [-V, 0) counts from the end, outside [-V, V) reads
// 0; any r outside [0, V) sets status[0] = 1 (an error for the program).
// Each invocation writes the VPW outputs of one code word (grid-stride over n *
// ceil(D / VPW)): the index and the word are loaded once for them, the palette row once
// when BD is a multiple of VPW.
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int FBITS = 4;
layout(constant_id = 1) const int WG = 64;
const uint VPW = uint(32 / FBITS);
const uint MASK = (1u << FBITS) - 1u;
layout(std430, binding = 0) readonly buffer I { int idx[]; };
layout(std430, binding = 1) readonly buffer C { uint codes[]; };
layout(std430, binding = 2) readonly buffer CB { float cb[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };
layout(std430, binding = 4) buffer Status { uint status[]; };
layout(push_constant) uniform P {
  uint n; uint D; uint V; uint row_words; uint BV; uint BD; uint GD; uint L;
} p;

void main() {
  uint wpr = (p.D + VPW - 1u) / VPW;  // words per output row
  uint total = p.n * wpr;
  bool word_blocks = p.BD % VPW == 0u;
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
    uint word = codes[row * p.row_words + wi];
    uint cbrow = (row / p.BV) * p.GD;
    uint pw = (cbrow + d0 / p.BD) * p.L;
    for (uint e = 0u; e < VPW; ++e) {
      uint d = d0 + e;
      if (d >= p.D) break;
      uint pb = word_blocks ? pw : (cbrow + d / p.BD) * p.L;
      uint code = min((word >> (uint(FBITS) * e)) & MASK, p.L - 1u);  // inside its palette
      o[ob + d] = cb[pb + code];
    }
  }
}
