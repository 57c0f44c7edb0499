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

void main() {
  uint cpr = p.row_words / 4;
  for (uint m0 = gl_WorkGroupID.y * MT; m0 < p.M; m0 += gl_NumWorkGroups.y * MT) {
    for (uint nb = gl_WorkGroupID.x * WG * NPW; nb < p.N; nb += gl_NumWorkGroups.x * WG * NPW) {
      uint n0 = nb + gl_LocalInvocationID.x * NPW;
      // chunks [0, nfast) lie inside one group and inside K: the fast path, no branch;
      // the rest (a K tail, or groups narrower than a chunk) take the per-element path.
      bool aligned = (GROUP_SIZE % VPC) == 0 || p.ngroups == 1;
      uint nfast = aligned && (p.K % 4u) == 0u ? p.K / uint(VPC) : 0u;
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
