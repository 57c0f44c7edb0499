#version 450
// LUT embedding: out[i, d] = cb[((r / BV) * GD + d / BD) * L + code[r, d]], r = idx[i];
// codes FBITS-bit fields (packing.pack_bits, lo = 0), row_words per row; codes >= L read
// entry L - 1 (as linear_lut). r in [-V, 0) counts from the end, outside [-V, V) reads
// 0; any r outside [0, V) sets status[0] = 1 (an error for the program).
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
  uint total = p.n * p.D;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    int r = idx[i / p.D];
    uint d = i % p.D;
    if (r < 0 || r >= int(p.V)) atomicOr(status[0], 1u);  // outside [0, V): an error
    if (r < 0) r += int(p.V);
    if (r < 0 || r >= int(p.V)) { o[i] = 0.0; continue; }
    uint row = uint(r);
    uint code = (codes[row * p.row_words + d / VPW] >> (uint(FBITS) * (d % VPW))) & MASK;
    code = min(code, p.L - 1u);  // a code read from the buffer stays inside its palette
    o[i] = cb[((row / p.BV) * p.GD + d / p.BD) * p.L + code];
  }
}
