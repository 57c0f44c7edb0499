#version 450
// Quantized conv2d with per-output-channel int8 weights (conv2d_q8ta_q8csw_q8to,
// conv2d_q8ta_q8csw, conv2d_q8csw): NCHW x [N, C, H, W], w int8 fields packed by
// packing.pack_bits over rows of ICg*KH*KW (OIHW order, lo = -128), s f32 [OC],
// z i32 [OC] = zp - lo (HAS_ZERO_POINT, else 128), bias f32 [OC].
// ACT CONV_ACT_NONE (weight-only): y = (sum x * (field - z)) * s[oc] (+ bias), float accumulate.
// ACT CONV_ACT_STATIC (x f32 quantized in-kernel) / CONV_ACT_QUANTIZED (x i32 already):
//   acc = sum (xq - in_zp) * (field - z) over in-bounds taps (padding contributes 0),
//   y = f32(acc) * (in_scale * s[oc]) (+ bias).
// Then y = min(max(y, clamp_min), clamp_max); REQUANT: i32 out as linear_q8ta.
// Each invocation computes OCT output channels x OWT output columns of one output row
// (grid-stride over N * ceil(OC/OCT) * OH * ceil(OW/OWT)); each x tap quantized once for
// the OCT channels, each weight word loaded once for its 4 taps; int32 sums exact in any
// order, the float sums (CONV_ACT_NONE) in the one-output order. workgroups =
// ceil(that / WG).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int ACT = CONV_ACT_STATIC;
layout(constant_id = 1) const int HAS_ZERO_POINT = 0;
layout(constant_id = 2) const int HAS_BIAS = 0;
layout(constant_id = 3) const int REQUANT = 1;
layout(constant_id = 4) const int WG = 64;
layout(constant_id = 5) const int OCT = 1;  // output channels per invocation (<= 8)
layout(constant_id = 6) const int OWT = 1;  // output columns per invocation (<= 8)
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer Wq { uint w[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform P {
  uint N; uint C; uint H; uint W; uint OC; uint OH; uint OW; uint KH; uint KW;
  int sh; int sw; int ph; int pw; int dh; int dw; uint groups; uint row_words;
  float in_inv_scale; int in_zp; int in_qmin; int in_qmax; float in_scale;
  float out_inv_scale; int out_zp; int out_qmin; int out_qmax; float clamp_min; float clamp_max;
} p;

int quant_in(uint i) {
  if (ACT == CONV_ACT_QUANTIZED) return int(x[i]);
  precise float v = roundEven(uintBitsToFloat(x[i]) * p.in_inv_scale) + float(p.in_zp);
  return int(clamp(v, float(p.in_qmin), float(p.in_qmax)));
}


// y of output i (channel oc) from its accumulator: int32 iacc, or float facc (ACT none)
void finish(uint i, uint oc, int iacc, float facc) {
  precise float y;
  if (ACT == CONV_ACT_NONE) {
    y = facc * scales[oc];
  } else {
    precise float ws = p.in_scale * scales[oc];
    y = float(iacc) * ws;
  }
  if (HAS_BIAS == 1) y = y + bias[oc];
  y = min(max(y, p.clamp_min), p.clamp_max);
  if (REQUANT == 1) {
    precise float r = roundEven(y * p.out_inv_scale) + float(p.out_zp);
    o[i] = uint(int(clamp(r, float(p.out_qmin), float(p.out_qmax))));
  } else {
    o[i] = floatBitsToUint(y);
  }
}

int wfield(uint oc, uint k, int z) {
  return int((w[oc * p.row_words + k / 4u] >> (8u * (k % 4u))) & 0xFFu) - z;
}

int zero_of(uint oc) { return HAS_ZERO_POINT == 1 ? zeros[oc] : 128; }

// output (n, oc, oh, ow) of group g alone
void one(uint n, uint oc, uint oh, uint ow, uint cg, uint g) {
  int z = zero_of(oc);
  int iacc = 0;
  float facc = 0.0;
  for (uint c = 0; c < cg; ++c) {
    uint xc = (n * p.C + g * cg + c) * p.H;
    for (uint kh = 0; kh < p.KH; ++kh) {
      int ih = int(oh) * p.sh - p.ph + int(kh) * p.dh;
      if (ih < 0 || ih >= int(p.H)) continue;
      for (uint kw = 0; kw < p.KW; ++kw) {
        int iw = int(ow) * p.sw - p.pw + int(kw) * p.dw;
        if (iw < 0 || iw >= int(p.W)) continue;
        uint k = (c * p.KH + kh) * p.KW + kw;
        int wv = wfield(oc, k, z);
        uint xi = (xc + uint(ih)) * p.W + uint(iw);
        if (ACT == CONV_ACT_NONE) facc += uintBitsToFloat(x[xi]) * float(wv);
        else iacc += (quant_in(xi) - p.in_zp) * wv;
      }
    }
  }
  finish(((n * p.OC + oc) * p.OH + oh) * p.OW + ow, oc, iacc, facc);
}


// The tile: OCT output channels (one group: x shared) x OWT output columns of one output
// row; accumulators named a<r><j> (no private arrays: lavapipe keeps dynamically indexed
// ones in memory). Each x tap is loaded once for the OCT channels, each weight once for
// the OWT columns; every output sums its taps in the order (c, kh, kw) of the one-output
// loop, skipping the padding taps as it does.
#define ROWDECL(r)                                                                 \
  uint ch##r = min(oc0 + uint(r), p.OC - 1);                                       \
  int z##r = zero_of(ch##r);                                                       \
  int i##r##0 = 0, i##r##1 = 0, i##r##2 = 0, i##r##3 = 0;                          \
  int i##r##4 = 0, i##r##5 = 0, i##r##6 = 0, i##r##7 = 0;                          \
  float f##r##0 = 0.0, f##r##1 = 0.0, f##r##2 = 0.0, f##r##3 = 0.0;                \
  float f##r##4 = 0.0, f##r##5 = 0.0, f##r##6 = 0.0, f##r##7 = 0.0;
#define MAC(r, j)                                                                  \
  if (OCT > r) {                                                                   \
    if (ACT == CONV_ACT_NONE) f##r##j += xf * float(wv##r);                        \
    else i##r##j += xq * wv##r;                                                    \
  }
#define XCOL(j)                                                                    \
  if (OWT > j) {                                                                   \
    int iw = int(ow0 + uint(j)) * p.sw - p.pw + int(kw) * p.dw;                    \
    if (iw >= 0 && iw < int(p.W)) {                                                \
      float xf = 0.0;                                                              \
      int xq = 0;                                                                  \
      if (ACT == CONV_ACT_NONE) xf = uintBitsToFloat(x[xrow + uint(iw)]);          \
      else xq = quant_in(xrow + uint(iw)) - p.in_zp;                               \
      MAC(0, j) MAC(1, j) MAC(2, j) MAC(3, j) MAC(4, j) MAC(5, j) MAC(6, j) MAC(7, j) \
    }                                                                              \
  }
#define FIN(r, j)                                                                  \
  if (OCT > r && OWT > j && oc0 + uint(r) < p.OC && ow0 + uint(j) < p.OW)          \
    finish(((nn * p.OC + ch##r) * p.OH + oh) * p.OW + ow0 + uint(j), ch##r, i##r##j, f##r##j);
#define FINROW(r) FIN(r, 0) FIN(r, 1) FIN(r, 2) FIN(r, 3) FIN(r, 4) FIN(r, 5) FIN(r, 6) FIN(r, 7)

// The tile walks the taps k = (c*KH + kh)*KW + kw in order one weight word (4 taps) at a
// time: the word of each channel is loaded once for its 4 taps (a load is a loop over the
// SIMD lanes on lavapipe), (c, kh, kw) stepped along without divisions.
#define WWORD(r) uint wd##r = 0u; if (OCT > r) wd##r = w[ch##r * p.row_words + k0 / 4u];
#define WTAP(r) int wv##r = 0; if (OCT > r) wv##r = int((wd##r >> (8u * e)) & 0xFFu) - z##r;

void tile(uint nn, uint oc0, uint oh, uint ow0, uint cg, uint g) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  uint taps = cg * p.KH * p.KW;
  uint c = 0u, kh = 0u, kw = 0u;  // of tap k0 + e
  for (uint k0 = 0u; k0 < taps; k0 += 4u) {
    WWORD(0) WWORD(1) WWORD(2) WWORD(3) WWORD(4) WWORD(5) WWORD(6) WWORD(7)
    for (uint e = 0u; e < 4u; ++e) {
      int ih = int(oh) * p.sh - p.ph + int(kh) * p.dh;
      if (k0 + e < taps && ih >= 0 && ih < int(p.H)) {
        uint xrow = ((nn * p.C + g * cg + c) * p.H + uint(ih)) * p.W;
        WTAP(0) WTAP(1) WTAP(2) WTAP(3) WTAP(4) WTAP(5) WTAP(6) WTAP(7)
        XCOL(0) XCOL(1) XCOL(2) XCOL(3) XCOL(4) XCOL(5) XCOL(6) XCOL(7)
      }
      kw += 1u;
      if (kw == p.KW) {
        kw = 0u;
        kh += 1u;
      }
      if (kh == p.KH) {
        kh = 0u;
        c += 1u;
      }
    }
  }
  FINROW(0) FINROW(1) FINROW(2) FINROW(3) FINROW(4) FINROW(5) FINROW(6) FINROW(7)
}

void main() {
  uint cg = p.C / p.groups, ocg = p.OC / p.groups;
  uint owb = (p.OW + uint(OWT) - 1u) / uint(OWT), ocb = (p.OC + uint(OCT) - 1u) / uint(OCT);
  uint total = p.N * ocb * p.OH * owb;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint ow0 = (i % owb) * uint(OWT), oh = (i / owb) % p.OH;
    uint oc0 = ((i / (owb * p.OH)) % ocb) * uint(OCT);
    uint nn = i / (owb * p.OH * ocb);
    uint g = oc0 / ocg;
    if (min(oc0 + uint(OCT) - 1u, p.OC - 1u) / ocg == g) {
      tile(nn, oc0, oh, ow0, cg, g);
      continue;
    }
    // the channels straddle a group boundary: one output at a time
    for (uint r = 0; r < uint(OCT); ++r) {
      for (uint j = 0; j < uint(OWT); ++j) {
        uint oc = oc0 + r, ow = ow0 + j;
        if (oc < p.OC && ow < p.OW) one(nn, oc, oh, ow, cg, oc / ocg);
      }
    }
  }
}
