#version 450
// Static-activation int8 linear (linear_q8ta_q8csw, with REQUANT linear_q8ta_q8csw_q8to):
//   xq = INPUT_QUANTIZED ? x (i32) : clamp(roundEven(x * in_inv_scale) + in_zp, in_qmin, in_qmax)
//   acc = sum_k (xq - in_zp) * (field(w[n, k]) - z[n])            (exact int32)
//   y = f32(acc) * (in_scale * s[n]) (+ bias[n]); y = min(max(y, clamp_min), clamp_max)
//   REQUANT: out = clamp(roundEven(y * out_inv_scale) + out_zp, out_qmin, out_qmax) (i32)
// w: int8 fields (value - lo, lo = -128 for signed data) packed by packing.pack_bits,
// row_words words per row; s f32 [N]; z i32 [N] = zp - lo (HAS_ZERO_POINT, else 128).
// Tiling: each invocation owns NPW output columns (weight rows, clamped to N - 1) x MT
// rows of x (clamped to M - 1) and walks K one weight word (4 int8 fields) at a time: each
// word is decoded once for the MT rows and each x value quantized once for the NPW weight
// rows. Accumulators are named int32 scalars a<r><mm> (no private arrays, which lavapipe
// keeps in memory); int32 sums are exact in any order (wrapping alike), so the result is
// the reference's bit for bit. workgroups = (ceil(N / (WG*NPW)), ceil(M / MT), 1).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int INPUT_QUANTIZED = 0;
layout(constant_id = 1) const int HAS_ZERO_POINT = 0;
layout(constant_id = 2) const int HAS_BIAS = 0;
layout(constant_id = 3) const int REQUANT = 0;
layout(constant_id = 4) const int WG = 64;
layout(constant_id = 5) const int NPW = 4;
layout(constant_id = 6) const int MT = 1;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Wq { uint w[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform P {
  uint M; uint N; uint K; uint row_words;
  float in_inv_scale; int in_zp; int in_qmin; int in_qmax; float in_scale;
  float out_inv_scale; int out_zp; int out_qmin; int out_qmax; float clamp_min; float clamp_max;
} p;

int quant_in(uint i) {
  if (INPUT_QUANTIZED == 1) return int(x[i]);
  precise float v = roundEven(uintBitsToFloat(x[i]) * p.in_inv_scale) + float(p.in_zp);
  return int(clamp(v, float(p.in_qmin), float(p.in_qmax)));
}

ivec4 quant4(uint base, uint k0) {  // (xq - in_zp) of x[base + k0 ..][:4], 0 at k >= K
  ivec4 v;
  for (int e = 0; e < 4; ++e) {
    uint k = k0 + uint(e);
    int q = quant_in(base + min(k, p.K - 1u)) - p.in_zp;  // in bounds (K > 0 here)
    v[e] = k < p.K ? q : 0;
  }
  return v;
}

void finish(uint m, uint n, int acc) {
  if (m >= p.M || n >= p.N) return;
  precise float ws = p.in_scale * scales[n];
  precise float y = float(acc) * ws;
  if (HAS_BIAS == 1) y = y + bias[n];
  y = min(max(y, p.clamp_min), p.clamp_max);
  if (REQUANT == 1) {
    precise float r = roundEven(y * p.out_inv_scale) + float(p.out_zp);
    o[m * p.N + n] = uint(int(clamp(r, float(p.out_qmin), float(p.out_qmax))));
  } else {
    o[m * p.N + n] = floatBitsToUint(y);
  }
}

#define ROWDECL(r)                                                                 \
  uint nr##r = min(n0 + uint(r), p.N - 1);                                         \
  ivec4 zr##r = ivec4(HAS_ZERO_POINT == 1 ? zeros[nr##r] : 128);                   \
  int a##r##0 = 0, a##r##1 = 0, a##r##2 = 0, a##r##3 = 0;                          \
  int a##r##4 = 0, a##r##5 = 0, a##r##6 = 0, a##r##7 = 0;
#define DEC(r)                                                                     \
  ivec4 f##r = ivec4(0);                                                           \
  if (NPW > r)                                                                     \
    f##r = ivec4((uvec4(w[nr##r * p.row_words + wi]) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - zr##r;
#define MAC(r, mm)                                                                 \
  if (NPW > r) a##r##mm += (f##r.x * xq.x + f##r.y * xq.y) + (f##r.z * xq.z + f##r.w * xq.w);
#define XROW(mm)                                                                   \
  if (MT > mm) {                                                                   \
    ivec4 xq = quant4(min(m0 + uint(mm), p.M - 1) * p.K, k0);                      \
    MAC(0, mm) MAC(1, mm) MAC(2, mm) MAC(3, mm) MAC(4, mm) MAC(5, mm) MAC(6, mm)   \
    MAC(7, mm)                                                                     \
  }
#define FIN(r, mm) if (NPW > r && MT > mm) finish(m0 + uint(mm), n0 + uint(r), a##r##mm);
#define FINROW(r) FIN(r, 0) FIN(r, 1) FIN(r, 2) FIN(r, 3) FIN(r, 4) FIN(r, 5) FIN(r, 6) FIN(r, 7)

void tile(uint m0, uint n0) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  uint words = (p.K + 3u) / 4u;
  for (uint wi = 0; wi < words; ++wi) {
    uint k0 = wi * 4u;
    DEC(0) DEC(1) DEC(2) DEC(3) DEC(4) DEC(5) DEC(6) DEC(7)
    XROW(0) XROW(1) XROW(2) XROW(3) XROW(4) XROW(5) XROW(6) XROW(7)
  }
  FINROW(0) FINROW(1) FINROW(2) FINROW(3) FINROW(4) FINROW(5) FINROW(6) FINROW(7)
}

void main() {
  for (uint m0 = gl_WorkGroupID.y * uint(MT); m0 < p.M; m0 += gl_NumWorkGroups.y * uint(MT)) {
    for (uint nb = gl_WorkGroupID.x * uint(WG * NPW); nb < p.N;
         nb += gl_NumWorkGroups.x * uint(WG * NPW)) {
      tile(m0, nb + gl_LocalInvocationID.x * uint(NPW));
    }
  }
}
