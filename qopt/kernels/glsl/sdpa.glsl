#version 450
// Scaled dot-product attention, one invocation per query row (bh, l):
// q [BH, L, E], k [BH / G, S, E], v [BH / G, S, EV] -> out [BH, L, EV]: query head bh
// reads key/value head bh / G (G = 1: one each; grouped-query attention reads the
// cache of its group, never a copy repeated per head);
// score = scale * q.k (+ mask[b, h, l, s] via strides mb/mh/ml/ms when HAS_MASK,
// -inf above the diagonal when CAUSAL, torch's top-left alignment); online softmax
// accumulated in the output row.
// VMAP = 1: v read through a stride map (a transpose or slice vkc-fold-copies folded
// in): v[VOFF + kvh*VSH + s*VSS + e*VSE] instead of v[(kvh*S + s)*EV + e]; OMAP = 1:
// the output written through one (the transpose after attention):
// out[OOFF + bh*OSH + l*OSL + e*OSE] instead of out[(bh*L + l)*EV + e]. The same f32
// operations either way. REG > 0 (E = EV = REG, convert-to-vkc picks it): the query row
// and the output row in registers, the output written once at the end: the same f32
// operations, without the per-key loads and stores of the output row (REG a multiple of
// 4 up to 128: 32 named vec4s and vec4 loads, `row_reg4`; 0.9x the CPU time of the
// register array at 64 query rows, the same at 1, 16 heads of 128 on lavapipe). BOUNDED = 1: the
// keys end at min(S, bound[0]), a count computed on the device (mask_bound.glsl: every
// key at or past it is -inf in every mask row, skipped anyway), so a decode step over a
// KV cache reads the cache rows in use, not all S; the same f32 operations.
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int HAS_MASK = 0;
layout(constant_id = 1) const int CAUSAL = 0;
layout(constant_id = 2) const int WG = 64;
layout(constant_id = 3) const int VMAP = 0;
layout(constant_id = 4) const int VOFF = 0;
layout(constant_id = 5) const int VSH = 0;
layout(constant_id = 6) const int VSS = 0;
layout(constant_id = 7) const int VSE = 0;
layout(constant_id = 8) const int OMAP = 0;
layout(constant_id = 9) const int OOFF = 0;
layout(constant_id = 10) const int OSH = 0;
layout(constant_id = 11) const int OSL = 0;
layout(constant_id = 12) const int OSE = 0;
layout(constant_id = 13) const int REG = 0;
layout(constant_id = 14) const int BOUNDED = 0;
const int REGS = REG > 0 ? REG : 1;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) buffer Out { float o[]; };
layout(std430, binding = 5) readonly buffer Bound { uint bound[]; };
// 16-byte views of the same buffers (REG4's loads and stores)
layout(std430, binding = 0) readonly buffer Q4 { vec4 qv4[]; };
layout(std430, binding = 1) readonly buffer K4 { vec4 kv4[]; };
layout(std430, binding = 2) readonly buffer V4 { vec4 vv4[]; };
layout(std430, binding = 4) writeonly buffer Out4 { vec4 ov4[]; };
layout(push_constant) uniform P {
  uint BH; uint H; uint L; uint S; uint E; uint EV; uint G; float scale;
  uint mb; uint mh; uint ml; uint ms;
} p;

// One key of the online softmax: the score d of key s scaled and masked; false for a
// masked-out key (-inf: skipped), else the running max m and denominator updated and
// the factors corr (of what was accumulated) and w (of this key's v row).
bool online_step(float d, uint bh, uint l, uint s, inout float m, inout float denom,
                 out float corr, out float w) {
  d *= p.scale;
  if (HAS_MASK == 1) {
    uint b = bh / p.H, h = bh % p.H;
    d += mask[b * p.mb + h * p.mh + l * p.ml + s * p.ms];
  }
  corr = 1.0;
  w = 0.0;
  if (d == -1.0 / 0.0) return false;
  float mn = max(m, d);
  corr = exp(m - mn);
  w = exp(d - mn);
  denom = denom * corr + w;
  m = mn;
  return true;
}

uint v_base(uint kvh, uint s) {
  return VMAP == 1 ? uint(VOFF) + kvh * uint(VSH) + s * uint(VSS) : (kvh * p.S + s) * p.EV;
}

// REG4 (REG a multiple of 4, at most 128): the query row and the accumulator in 32 named
// vec4s (no private array: lavapipe keeps a dynamically indexed one in memory and
// lowers the index before it unrolls), q, k and v (when its map keeps whole aligned
// vec4s) read as vec4s, the output written as vec4s when it is not mapped. The same
// f32 operations in the same order as the scalar loops.
#define REG4 (((REG & 3) | int(uint(REG - 1) >= 128u)) == 0)  // no &&: glslang emits a phi for it
#define V_VEC4 ((VMAP * ((VSE - 1) | ((VOFF | VSH | VSS) & 3))) == 0)
vec4 v_vec4(uint vb, uint vse, uint i) {
  if (V_VEC4) return vv4[(vb >> 2) + i];
  uint at = vb + 4u * i * vse;
  return vec4(v[at], v[at + vse], v[at + 2u * vse], v[at + 3u * vse]);
}
#define R4DECL(i) vec4 q##i = vec4(0.0), a##i = vec4(0.0); if (REG > 4 * i) q##i = qv4[(qb >> 2) + i];
#define R4DOT(i)                                                                   \
  if (REG > 4 * i) {                                                               \
    vec4 kv = kv4[(kb >> 2) + i];                                                   \
    d += q##i.x * kv.x; d += q##i.y * kv.y; d += q##i.z * kv.z; d += q##i.w * kv.w; \
  }
#define R4ACC(i) if (REG > 4 * i) a##i = a##i * corr + w * v_vec4(vb, vse, i);
#define R4OUT(i)                                                                   \
  if (REG > 4 * i) {                                                               \
    vec4 r = a##i * inv;                                                           \
    if (OMAP == 0) ov4[(ob >> 2) + i] = r;                                          \
    else {                                                                         \
      uint at = ob + 4u * i * ose;                                                 \
      o[at] = r.x; o[at + ose] = r.y; o[at + 2u * ose] = r.z; o[at + 3u * ose] = r.w; \
    }                                                                              \
  }
#define R4ALL(F)                                                                   \
  F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14)  \
  F(15) F(16) F(17) F(18) F(19) F(20) F(21) F(22) F(23) F(24) F(25) F(26) F(27)    \
  F(28) F(29) F(30) F(31)

void row_reg4(uint bh, uint l, uint kvh, uint qb, uint ob, uint ose, uint vse, uint send) {
  float m = -1.0 / 0.0, denom = 0.0;
  R4ALL(R4DECL)
  for (uint s = 0; s < send; ++s) {
    uint kb = (kvh * p.S + s) * p.E;
    float d = 0.0;
    R4ALL(R4DOT)
    float corr, w;
    if (!online_step(d, bh, l, s, m, denom, corr, w)) continue;
    uint vb = v_base(kvh, s);
    R4ALL(R4ACC)
  }
  float inv = 1.0 / denom;
  R4ALL(R4OUT)
}

void main() {
  uint rows = p.BH * p.L;
  for (uint row = gl_GlobalInvocationID.x; row < rows; row += gl_NumWorkGroups.x * WG) {
    uint bh = row / p.L, l = row % p.L;
    uint kvh = bh / p.G;
    uint qb = row * p.E;
    uint ob = OMAP == 1 ? uint(OOFF) + bh * uint(OSH) + l * uint(OSL) : row * p.EV;
    uint ose = OMAP == 1 ? uint(OSE) : 1u;
    uint vse = VMAP == 1 ? uint(VSE) : 1u;
    float m = -1.0 / 0.0, denom = 0.0;
    uint send = CAUSAL == 1 ? min(p.S, l + 1) : p.S;
    if (BOUNDED == 1) send = min(send, bound[0]);
    if (REG4) {
      row_reg4(bh, l, kvh, qb, ob, ose, vse, send);
      continue;
    }
    if (REG > 0) {
      float qr[REGS];
      float acc[REGS];
      for (int e = 0; e < REG; ++e) {
        qr[e] = q[qb + uint(e)];
        acc[e] = 0.0;
      }
      for (uint s = 0; s < send; ++s) {
        uint kb = (kvh * p.S + s) * p.E;
        float d = 0.0;
        for (int e = 0; e < REG; ++e) d += qr[e] * k[kb + uint(e)];
        float corr, w;
        if (!online_step(d, bh, l, s, m, denom, corr, w)) continue;
        uint vb = v_base(kvh, s);
        for (int e = 0; e < REG; ++e) acc[e] = acc[e] * corr + w * v[vb + uint(e) * vse];
      }
      float inv = 1.0 / denom;
      for (int e = 0; e < REG; ++e) o[ob + uint(e) * ose] = acc[e] * inv;
      continue;
    }
    for (uint e = 0; e < p.EV; ++e) o[ob + e * ose] = 0.0;
    for (uint s = 0; s < send; ++s) {
      uint kb = (kvh * p.S + s) * p.E;
      float d = 0.0;
      for (uint e = 0; e < p.E; ++e) d += q[qb + e] * k[kb + e];
      float corr, w;
      if (!online_step(d, bh, l, s, m, denom, corr, w)) continue;
      uint vb = v_base(kvh, s);
      for (uint e = 0; e < p.EV; ++e) {
        uint at = ob + e * ose;
        o[at] = o[at] * corr + w * v[vb + e * vse];
      }
    }
    float inv = 1.0 / denom;
    for (uint e = 0; e < p.EV; ++e) o[ob + e * ose] *= inv;
  }
}
