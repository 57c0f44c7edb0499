#version 450
// out[z, m, n] = sum_k a[z, m, k] * B[z, k, n] (+ bias[n]), fp32 accumulate.
// a: [batch, M, K] with batch stride a_bs; b: [batch, K, N] (TRANS_B = 0) or
// [batch, N, K] (TRANS_B = 1, linear) with batch stride b_bs (0 = broadcast);
// out: [batch, M, N] contiguous. The bias binding is ignored unless HAS_BIAS.
// TRANS_B = 1 (linear / GEMV): each invocation computes one output column n for MT
//   rows m, walking K in vec4 steps (16-byte loads when K % 4 == 0 and the batch
//   strides are multiples of 4); the a-row values are the same for every invocation
//   of a workgroup (uniform loads). workgroups = (ceil(N/WG), ceil(M/MT), batch).
// TRANS_B = 0: one output per invocation; workgroups = (ceil(N/WG), M, batch).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int TRANS_B = 1;
layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int NPW = 1;  // unused (kept for ABI stability)
layout(constant_id = 3) const int MT = 1;
layout(constant_id = 4) const int WG = 64;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 0) readonly buffer A4 { vec4 a4[]; };  // 16-byte views
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint batch; uint a_bs; uint b_bs; } p;


void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint z = gl_WorkGroupID.z; z < p.batch; z += gl_NumWorkGroups.z) {
    uint abase = z * p.a_bs, bbase = z * p.b_bs, obase = z * p.M * p.N;
    if (TRANS_B == 0) {
      for (uint m = gl_WorkGroupID.y; m < p.M; m += gl_NumWorkGroups.y) {
        for (uint n = gl_WorkGroupID.x * WG + t; n < p.N; n += gl_NumWorkGroups.x * WG) {
          float acc = 0.0;
          for (uint k = 0; k < p.K; ++k) acc += a[abase + m * p.K + k] * b[bbase + k * p.N + n];
          if (HAS_BIAS == 1) acc += bias[n];
          o[obase + m * p.N + n] = acc;
        }
      }
      continue;
    }
    bool vec = (p.K % 4u) == 0u && (p.a_bs % 4u) == 0u && (p.b_bs % 4u) == 0u;
    for (uint m0 = gl_WorkGroupID.y * MT; m0 < p.M; m0 += gl_NumWorkGroups.y * MT) {
      for (uint nb = gl_WorkGroupID.x * WG; nb < p.N; nb += gl_NumWorkGroups.x * WG) {
        uint n = min(nb + t, p.N - 1);
        uint wb = bbase + n * p.K;
        float acc[MT];
        for (int mm = 0; mm < MT; ++mm) acc[mm] = 0.0;
        if (vec) {
          for (uint k = 0; k < p.K; k += 4) {
            vec4 w = b4[(wb + k) >> 2];
            for (int mm = 0; mm < MT; ++mm) {
              uint xb = abase + min(m0 + mm, p.M - 1) * p.K;
              acc[mm] += dot(w, a4[(xb + k) >> 2]);
            }
          }
        } else {
          for (uint k = 0; k < p.K; ++k) {
            float w = b[wb + k];
            for (int mm = 0; mm < MT; ++mm) acc[mm] += w * a[abase + min(m0 + mm, p.M - 1) * p.K + k];
          }
        }
        if (nb + t < p.N) {
          float bv = HAS_BIAS == 1 ? bias[n] : 0.0;
          for (int mm = 0; mm < MT; ++mm)
            if (m0 + mm < p.M) o[obase + (m0 + mm) * p.N + n] = acc[mm] + bv;
        }
      }
    }
  }
}
