#version 450
// y[i] = (v(i) - zp[blk(i)]) * scale[blk(i)] in f32, for a tensor of shape d0..d3
// (rank <= 4, leading 1s) with per-block parameters: blk(i) = sum_j (idx_j / b_j) * ps_j.
// BITS = 32: data i32 row-major. BITS = 8 / 4: data packed by packing.pack_bits
// along the last dim (row_words words per row, fields = value - lo, unsigned):
// v = field + lo. zp read only if HAS_ZERO_POINT (else 0).
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int BITS = 32;
layout(constant_id = 1) const int HAS_ZERO_POINT = 0;
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer D { uint data[]; };
layout(std430, binding = 1) readonly buffer S { float scales[]; };
layout(std430, binding = 2) readonly buffer Z { int zeros[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P {
  uint n; uint d[4]; uint b[4]; uint ps[4]; uint row_words; int lo;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    uint rem = i, blk = 0;
    uint col = i % p.d[3];
    for (int j = 3; j >= 0; --j) {
      uint idx = rem % p.d[j];
      rem /= p.d[j];
      blk += (idx / p.b[j]) * p.ps[j];
    }
    int v;
    if (BITS == 32) {
      v = int(data[i]);
    } else {
      uint row = i / p.d[3];
      const uint vpw = uint(32 / BITS);
      uint word = data[row * p.row_words + col / vpw];
      v = int((word >> (uint(BITS) * (col % vpw))) & ((1u << BITS) - 1u)) + p.lo;
    }
    precise float f = float(v);
    if (HAS_ZERO_POINT == 1) f = f - float(zeros[blk]);
    y[i] = f * scales[blk];
  }
}
