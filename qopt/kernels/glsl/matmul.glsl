#version 450
// out[z, m, n] = sum_k a[z, m, k] * B[z, k, n] (+ bias[n]), fp32 accumulate.
// a: [batch, M, K] with batch stride a_bs; b: [batch, K, N] (TRANS_B = 0) or
// [batch, N, K] (TRANS_B = 1, linear) with batch stride b_bs (0 = broadcast);
// out: [batch, M, N] contiguous. The bias binding is ignored unless HAS_BIAS.
// TRANS_B = 1 (linear / GEMV): each invocation computes NPW output columns n (rows of b,
//   clamped to N - 1) for MT rows m (clamped to M - 1), walking K in vec4 steps (16-byte
//   loads when K % 4 == 0 and the batch strides are multiples of 4); the a-row values
//   are the same for every invocation of a workgroup (uniform loads). NPW = MT = 1 is
//   the GEMV (one column); otherwise the tile keeps NPW*MT named scalar accumulators
//   (a private array indexed dynamically would live in memory on lavapipe): each b
//   vec4 is loaded once for MT rows, each a vec4 once for NPW columns.
//   workgroups = (ceil(N/(WG*NPW)), ceil(M/MT), batch).
// TRANS_B = 0: one output per invocation; workgroups = (ceil(N/WG), M, batch).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int TRANS_B = 1;
layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int NPW = 1;  // TRANS_B = 1: output columns per invocation
layout(constant_id = 3) const int MT = 1;
layout(constant_id = 4) const int WG = 64;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 0) readonly buffer A4 { vec4 a4[]; };  // 16-byte views
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint batch; uint a_bs; uint b_bs; } p;


void store_out(uint obase, uint m, uint n, float v) {
  if (m < p.M && n < p.N) o[obase + m * p.N + n] = v + (HAS_BIAS == 1 ? bias[n] : 0.0);
}

float fma4(vec4 w, vec4 x, float a) {
  a = fma(w.x, x.x, a);
  a = fma(w.y, x.y, a);
  a = fma(w.z, x.z, a);
  a = fma(w.w, x.w, a);
  return a;
}

#define ROWDECL(r)                                                                 \
  uint wb##r = bbase + min(n0 + uint(r), p.N - 1) * p.K;                           \
  float a##r##0 = 0.0, a##r##1 = 0.0, a##r##2 = 0.0, a##r##3 = 0.0;                \
  float a##r##4 = 0.0, a##r##5 = 0.0, a##r##6 = 0.0, a##r##7 = 0.0;
#define XDECL(mm) uint xb##mm = abase + min(m0 + uint(mm), p.M - 1) * p.K;
#define WLOAD(r)                                                                   \
  vec4 w##r = vec4(0.0);                                                           \
  if (NPW > r) w##r = vec ? b4[(wb##r + k) >> 2] : vec4(b[wb##r + k], 0.0, 0.0, 0.0);
#define MAC(r, mm) if (NPW > r) a##r##mm = vec ? fma4(w##r, xv, a##r##mm) : fma(w##r.x, xv.x, a##r##mm);
#define XROW(mm)                                                                   \
  if (MT > mm) {                                                                   \
    vec4 xv = vec ? a4[(xb##mm + k) >> 2] : vec4(a[xb##mm + k], 0.0, 0.0, 0.0);    \
    MAC(0, mm) MAC(1, mm) MAC(2, mm) MAC(3, mm) MAC(4, mm) MAC(5, mm) MAC(6, mm)   \
    MAC(7, mm)                                                                     \
  }
#define STORE(r, mm) if (NPW > r && MT > mm) store_out(obase, m0 + uint(mm), n0 + uint(r), a##r##mm);
#define STOREROW(r)                                                                \
  STORE(r, 0) STORE(r, 1) STORE(r, 2) STORE(r, 3) STORE(r, 4) STORE(r, 5) STORE(r, 6) \
  STORE(r, 7)

// NPW columns x MT rows (TRANS_B = 1, NPW > 1 or MT > 1); vec: K in vec4 steps
void tile(uint abase, uint bbase, uint obase, uint m0, uint n0, bool vec) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  XDECL(0) XDECL(1) XDECL(2) XDECL(3) XDECL(4) XDECL(5) XDECL(6) XDECL(7)
  uint step = vec ? 4u : 1u;
  for (uint k = 0; k < p.K; k += step) {
    WLOAD(0) WLOAD(1) WLOAD(2) WLOAD(3) WLOAD(4) WLOAD(5) WLOAD(6) WLOAD(7)
    XROW(0) XROW(1) XROW(2) XROW(3) XROW(4) XROW(5) XROW(6) XROW(7)
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7)
}

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
      for (uint nb = gl_WorkGroupID.x * WG * NPW; nb < p.N; nb += gl_NumWorkGroups.x * WG * NPW) {
        if (NPW > 1 || MT > 1) {
          uint n0 = nb + t * uint(NPW);
          if (vec) tile(abase, bbase, obase, m0, n0, true);
          else tile(abase, bbase, obase, m0, n0, false);
          continue;
        }
        uint n = min(nb + t, p.N - 1);
        uint wb = bbase + n * p.K;
        float acc = 0.0;
        uint xb = abase + m0 * p.K;
        if (vec) {
          for (uint k = 0; k < p.K; k += 4) acc += dot(b4[(wb + k) >> 2], a4[(xb + k) >> 2]);
        } else {
          for (uint k = 0; k < p.K; ++k) acc += b[wb + k] * a[xb + k];
        }
        if (nb + t < p.N) o[obase + m0 * p.N + n] = acc + (HAS_BIAS == 1 ? bias[n] : 0.0);
      }
    }
  }
}
