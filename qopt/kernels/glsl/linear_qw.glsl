#version 450
// Weight-only quantized linear (linear_q4gsw / linear_q4gaw / linear_q8csw / ...):
//   out[m, n] = sum_k x[m, k] * (f(w[n, k]) - z[n, k / G]) * s[n, k / G] (+ bias[n])
// x f32 [M, K]; w u32 [N, row_words]: WBITS-bit unsigned fields, 32/WBITS per
// word, element k of row n in word n*row_words + k/(32/WBITS) at bit WBITS*(k%(32/WBITS))
// (even element low), rows padded with zero fields to a multiple of 128 bits;
// s f32 [N, ngroups] and z i32 [N, ngroups] (read only if HAS_ZERO_POINT, else
// z = 2^(WBITS-1)) with ngroups = ceil(K / G); bias f32 [N] (read if HAS_BIAS).
// Tiling: each invocation owns NPW output columns (rows of w) x MT rows of x and walks K
// in 128-bit chunks (one uvec4 load = 32 int4 / 16 int8 weights, decoded once and used
// for the MT rows); the x values of a chunk are the same for every invocation of the
// workgroup (uniform loads, broadcast on SIMD CPUs such as lavapipe; cached on GPUs).
// No shared memory and no barriers. workgroups = (ceil(N / (WG*NPW)), ceil(M / MT), 1).
// M = 1 on lavapipe: NPW 4, WG 64 (the spec defaults) is ~4x faster than NPW 1; M > 1:
// gemm_sym (NPW <= 2, MT 2..4) decodes each weight word once for MT rows.
layout(local_size_x_id = 6) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int NPW = 4;
layout(constant_id = 5) const int MT = 1;
layout(constant_id = 6) const int WG = 64;
const int VPW = 32 / WBITS;        // values per word
const int VPC = 4 * VPW;           // values per 128-bit chunk
const uint MASK = (1u << WBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 xv[]; };  // the same buffer, 16-byte view
layout(std430, binding = 1) readonly buffer Wq { uvec4 w4[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;


float zero_of(uint idx) {
  return HAS_ZERO_POINT == 1 ? float(zeros[idx]) : float(1 << (WBITS - 1));
}

vec4 field4(uint word, int e) {
  uvec4 sh = uvec4(uint(WBITS * e)) + uvec4(0u, uint(WBITS), uint(2 * WBITS), uint(3 * WBITS));
  return vec4((uvec4(word) >> sh) & uvec4(MASK));
}

float xval(uint base, uint k) { return k < p.K ? x[base + k] : 0.0; }

vec4 x4(uint k) { return xv[k >> 2]; }  // k % 4 == 0 (fast path requires K % 4 == 0)

// sum over one full 128-bit chunk of (field - z) * x[xb + i] (no arrays: stays in registers)
float chunk_dot(uvec4 q, float z, uint xb) {
  float d = 0.0;
  for (int j = 0; j < 4; ++j) {
    uint wd = q[j];
    uint kb = xb + uint(j * VPW);
    if (WBITS == 4) {
      vec4 lo = vec4((uvec4(wd) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z;
      vec4 hi = vec4((uvec4(wd) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z;
      d += dot(lo, x4(kb)) + dot(hi, x4(kb + 4u));
    } else if (WBITS == 8) {
      d += dot(vec4((uvec4(wd) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z, x4(kb));
    } else {
      for (int e = 0; e < VPW; e += 4) d += dot(field4(wd, e) - z, x4(kb + uint(e)));
    }
  }
  return d;
}

// Register-tiled path (WBITS 4 or 8, MT 1, NPW <= 4, every chunk fast): NPW rows of w per
// invocation in explicit vec4 accumulators (4 independent fma chains each), the x chunk
// loaded once for all of them. Without a zero point, field - 2^(WBITS-1) is the field with
// its top bit flipped, read as signed: each field is shifted to the top of the word, masked
// and converted, giving the value times 2^(32-WBITS) exactly (a power of two, so products
// and sums round exactly as the unscaled ones would); UNSCALE divides it out at the end.
// (no && in spec-constant initializers: glslang emits a Phi there)
const int SYM = WBITS == 4 ? 1 : (WBITS == 8 ? 1 : 0);
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
        acc = fma(vec4((uvec4(v) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z, xv[xi + uint(2 * j)], acc);
        acc = fma(vec4((uvec4(v) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z, xv[xi + uint(2 * j + 1)],
                  acc);
      } else {
        acc = fma(vec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z, xv[xi + uint(j)], acc);
      }
    } else if (WBITS == 4) {
      vec4 lo = vec4(ivec4((uvec4(v) << uvec4(28u, 24u, 20u, 16u)) & uvec4(TOP)));
      vec4 hi = vec4(ivec4((uvec4(v) << uvec4(12u, 8u, 4u, 0u)) & uvec4(TOP)));
      acc = fma(lo, xv[xi + uint(2 * j)], acc);
      acc = fma(hi, xv[xi + uint(2 * j + 1)], acc);
    } else {
      vec4 f = vec4(ivec4((uvec4(v) << uvec4(24u, 16u, 8u, 0u)) & uvec4(TOP)));
      acc = fma(f, xv[xi + uint(j)], acc);
    }
  }
  return acc;
}

float hsum(vec4 v) { return (v.x + v.y) + (v.z + v.w); }

// NPW (<= 4) output columns n0.. of row m of x, every chunk on the fast path; explicit
// scalar/vec4 accumulators (no arrays). whole_row: one group per row (scale applied once).
void gemv_sym(uint m, uint n0, uint cpr, bool whole_row) {
  uint r0 = min(n0, p.N - 1), r1 = min(n0 + 1u, p.N - 1);
  uint r2 = min(n0 + 2u, p.N - 1), r3 = min(n0 + 3u, p.N - 1);
  vec4 p0 = vec4(0.0), p1 = vec4(0.0), p2 = vec4(0.0), p3 = vec4(0.0);
  float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  uint xb = m * (p.K / 4u);
  for (uint c = 0; c < cpr; ++c) {
    uint xi = xb + c * uint(VPC / 4);
    uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    p0 = sym_chunk(w4[r0 * cpr + c], xi, p0, zero_of(r0 * p.ngroups + g));
    if (NPW > 1) p1 = sym_chunk(w4[r1 * cpr + c], xi, p1, zero_of(r1 * p.ngroups + g));
    if (NPW > 2) p2 = sym_chunk(w4[r2 * cpr + c], xi, p2, zero_of(r2 * p.ngroups + g));
    if (NPW > 3) p3 = sym_chunk(w4[r3 * cpr + c], xi, p3, zero_of(r3 * p.ngroups + g));
    if (!whole_row) {
      a0 += scales[r0 * p.ngroups + g] * hsum(p0);
      p0 = vec4(0.0);
      if (NPW > 1) {
        a1 += scales[r1 * p.ngroups + g] * hsum(p1);
        p1 = vec4(0.0);
      }
      if (NPW > 2) {
        a2 += scales[r2 * p.ngroups + g] * hsum(p2);
        p2 = vec4(0.0);
      }
      if (NPW > 3) {
        a3 += scales[r3 * p.ngroups + g] * hsum(p3);
        p3 = vec4(0.0);
      }
    }
  }
  if (whole_row) {
    a0 = scales[r0] * hsum(p0);
    a1 = scales[r1] * hsum(p1);
    a2 = scales[r2] * hsum(p2);
    a3 = scales[r3] * hsum(p3);
  }
  for (int r = 0; r < NPW; ++r) {
    uint n = n0 + uint(r);
    if (n >= p.N) break;
    float a = r == 0 ? a0 : (r == 1 ? a1 : (r == 2 ? a2 : a3));
    o[m * p.N + n] = a * UNSCALE + (HAS_BIAS == 1 ? bias[n] : 0.0);
  }
}

// NPW (<= 2) columns x MT (2..4) rows of x, every chunk on the fast path: each weight word
// is decoded once and used for the MT rows (the M > 1 case, e.g. a 16-token prefill).
void gemm_sym(uint m0, uint n0, uint cpr, bool whole_row) {
  vec4 part[8];
  float acc[8];
  for (int i = 0; i < 8; ++i) {
    part[i] = vec4(0.0);
    acc[i] = 0.0;
  }
  uint rows[2] = uint[2](min(n0, p.N - 1), min(n0 + 1u, p.N - 1));
  uint xrow[4];
  for (int mm = 0; mm < 4; ++mm) xrow[mm] = min(m0 + uint(mm), p.M - 1) * (p.K / 4u);
  for (uint c = 0; c < cpr; ++c) {
    uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    for (int r = 0; r < NPW; ++r) {
      uvec4 q = w4[rows[r] * cpr + c] ^ uvec4(HAS_ZERO_POINT == 1 ? 0u : FLIP);
      float z = zero_of(rows[r] * p.ngroups + g);
      for (int j = 0; j < 4; ++j) {
        uint v = q[j];
        vec4 f0, f1;
        if (WBITS == 4) {
          if (HAS_ZERO_POINT == 1) {
            f0 = vec4((uvec4(v) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z;
            f1 = vec4((uvec4(v) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z;
          } else {
            f0 = vec4(ivec4((uvec4(v) << uvec4(28u, 24u, 20u, 16u)) & uvec4(TOP)));
            f1 = vec4(ivec4((uvec4(v) << uvec4(12u, 8u, 4u, 0u)) & uvec4(TOP)));
          }
          for (int mm = 0; mm < MT; ++mm) {
            uint xi = xrow[mm] + c * uint(VPC / 4) + uint(2 * j);
            part[r * MT + mm] = fma(f0, xv[xi], part[r * MT + mm]);
            part[r * MT + mm] = fma(f1, xv[xi + 1u], part[r * MT + mm]);
          }
        } else {
          if (HAS_ZERO_POINT == 1) f0 = vec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z;
          else f0 = vec4(ivec4((uvec4(v) << uvec4(24u, 16u, 8u, 0u)) & uvec4(TOP)));
          for (int mm = 0; mm < MT; ++mm) {
            uint xi = xrow[mm] + c * uint(VPC / 4) + uint(j);
            part[r * MT + mm] = fma(f0, xv[xi], part[r * MT + mm]);
          }
        }
      }
      if (!whole_row) {
        float s = scales[rows[r] * p.ngroups + g];
        for (int mm = 0; mm < MT; ++mm) {
          acc[r * MT + mm] += s * hsum(part[r * MT + mm]);
          part[r * MT + mm] = vec4(0.0);
        }
      }
    }
  }
  for (int r = 0; r < NPW; ++r) {
    uint n = n0 + uint(r);
    if (n >= p.N) break;
    for (int mm = 0; mm < MT; ++mm) {
      uint m = m0 + uint(mm);
      if (m >= p.M) break;
      float a = whole_row ? scales[rows[r]] * hsum(part[r * MT + mm]) : acc[r * MT + mm];
      o[m * p.N + n] = a * UNSCALE + (HAS_BIAS == 1 ? bias[n] : 0.0);
    }
  }
}

void main() {
  uint cpr = p.row_words / 4;
  for (uint m0 = gl_WorkGroupID.y * MT; m0 < p.M; m0 += gl_NumWorkGroups.y * MT) {
    for (uint nb = gl_WorkGroupID.x * WG * NPW; nb < p.N; nb += gl_NumWorkGroups.x * WG * NPW) {
      uint n0 = nb + gl_LocalInvocationID.x * NPW;
      // chunks [0, nfast) lie inside one group and inside K: the fast path, no branch;
      // the rest (a K tail, or groups narrower than a chunk) take the per-element path.
      bool aligned = (GROUP_SIZE % VPC) == 0 || p.ngroups == 1;
      uint nfast = aligned && (p.K % 4u) == 0u ? p.K / uint(VPC) : 0u;
      if (SYM == 1 && NPW <= 2 && MT > 1 && MT <= 4 && nfast == cpr) {
        if (m0 < p.M) {
          if (p.ngroups == 1) gemm_sym(m0, n0, cpr, true);
          else gemm_sym(m0, n0, cpr, false);
        }
        continue;
      }
      if (SYM == 1 && NPW <= 4 && MT == 1 && nfast == cpr) {
        if (m0 < p.M) {
          if (p.ngroups == 1) gemv_sym(m0, n0, cpr, true);
          else gemv_sym(m0, n0, cpr, false);
        }
        continue;
      }
      if (NPW == 1 && MT == 1) {  // GEMV: a scalar accumulator, nothing indexed
        uint n = min(n0, p.N - 1);
        uint xb = min(m0, p.M - 1) * p.K;
        float a1 = 0.0;
        for (uint c = 0; c < nfast; ++c) {
          uint gi = p.ngroups == 1 ? n : n * p.ngroups + (c * uint(VPC)) / uint(GROUP_SIZE);
          a1 += scales[gi] * chunk_dot(w4[n * cpr + c], zero_of(gi), xb + c * uint(VPC));
        }
        for (uint c = nfast; c < cpr; ++c) {
          uvec4 q = w4[n * cpr + c];
          for (int j = 0; j < 4; ++j) {
            for (int e = 0; e < VPW; ++e) {
              uint k = c * uint(VPC) + uint(j * VPW + e);
              uint gi = n * p.ngroups + min(k / GROUP_SIZE, p.ngroups - 1);
              float wv = (float((q[j] >> uint(WBITS * e)) & MASK) - zero_of(gi)) * scales[gi];
              a1 += wv * xval(xb, k);
            }
          }
        }
        if (n0 < p.N && m0 < p.M) o[m0 * p.N + n0] = a1 + (HAS_BIAS == 1 ? bias[n0] : 0.0);
        continue;
      }
      float acc[NPW * MT];
      for (int i = 0; i < NPW * MT; ++i) acc[i] = 0.0;
      for (uint c = 0; c < cpr; ++c) {
        uint k0 = c * VPC;
        uint g0 = min(k0 / GROUP_SIZE, p.ngroups - 1);
        bool fast = c < nfast;
        for (int r = 0; r < NPW; ++r) {
          uint n = min(n0 + r, p.N - 1);
          uvec4 q = w4[n * cpr + c];
          if (fast) {
            uint gi = n * p.ngroups + g0;
            float s = scales[gi];
            float z = zero_of(gi);
            for (int mm = 0; mm < MT; ++mm) {
              uint xb = min(m0 + mm, p.M - 1) * p.K + k0;
              acc[r * MT + mm] += s * chunk_dot(q, z, xb);
            }
          } else {
            for (int j = 0; j < 4; ++j) {
              for (int e = 0; e < VPW; ++e) {
                uint k = k0 + uint(j * VPW + e);
                uint gi = n * p.ngroups + min(k / GROUP_SIZE, p.ngroups - 1);
                float wv = (float((q[j] >> uint(WBITS * e)) & MASK) - zero_of(gi)) * scales[gi];
                for (int mm = 0; mm < MT; ++mm) {
                  uint xb = min(m0 + mm, p.M - 1) * p.K;
                  acc[r * MT + mm] += wv * xval(xb, k);
                }
              }
            }
          }
        }
      }
      for (int r = 0; r < NPW; ++r) {
        uint n = n0 + r;
        if (n >= p.N) break;
        float b = HAS_BIAS == 1 ? bias[n] : 0.0;
        for (int mm = 0; mm < MT; ++mm) {
          uint m = m0 + mm;
          if (m < p.M) o[m * p.N + n] = acc[r * MT + mm] + b;
        }
      }
    }
  }
}
