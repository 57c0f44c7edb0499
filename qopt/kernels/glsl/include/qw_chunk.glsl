// The weight-chunk dot product of linear_qw.glsl and its cooperative variant
// linear_qw_coop.glsl (one text, so both compute the same bits): sym_chunk adds
// (field - z) * x over one 128-bit chunk of WBITS-bit fields to 4 lanes of partial sums,
// x read through the including kernel's xq(i) (its vec4 i of x). Needs the spec constants
// WBITS and HAS_ZERO_POINT. Without a zero point the fields are read as signed values
// times 2^(32 - WBITS) (exact: a power of two); UNSCALE divides it out at the end.
const uint FLIP = WBITS == 4 ? 0x88888888u : 0x80808080u;
const uint TOP = WBITS == 4 ? 0xF0000000u : 0xFF000000u;
const float UNSCALE = HAS_ZERO_POINT == 1 ? 1.0 : (WBITS == 4 ? 1.0 / 268435456.0 : 1.0 / 16777216.0);

// acc (4 lanes of partial sums) += (field - z) * x over one chunk, x from xv[xi...]; without a
// zero point the fields are the scaled signed values above (z unused)
vec4 sym_chunk(uvec4 q, uint xi, vec4 acc, float z) {
  q ^= uvec4(HAS_ZERO_POINT == 1 ? 0u : FLIP);
  for (int j = 0; j < 4; ++j) {
    uint v = q[j];
    if (HAS_ZERO_POINT == 1) {
      if (WBITS == 4) {
        acc = fma(vec4((uvec4(v) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z, xq(xi + uint(2 * j)), acc);
        acc = fma(vec4((uvec4(v) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z, xq(xi + uint(2 * j + 1)),
                  acc);
      } else {
        acc = fma(vec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z, xq(xi + uint(j)), acc);
      }
    } else if (WBITS == 4) {
      vec4 lo = vec4(ivec4((uvec4(v) << uvec4(28u, 24u, 20u, 16u)) & uvec4(TOP)));
      vec4 hi = vec4(ivec4((uvec4(v) << uvec4(12u, 8u, 4u, 0u)) & uvec4(TOP)));
      acc = fma(lo, xq(xi + uint(2 * j)), acc);
      acc = fma(hi, xq(xi + uint(2 * j + 1)), acc);
    } else {
      vec4 f = vec4(ivec4((uvec4(v) << uvec4(24u, 16u, 8u, 0u)) & uvec4(TOP)));
      acc = fma(f, xq(xi + uint(j)), acc);
    }
  }
  return acc;
}

float hsum(vec4 v) { return (v.x + v.y) + (v.z + v.w); }
