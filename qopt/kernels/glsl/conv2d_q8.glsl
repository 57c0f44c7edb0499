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
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int ACT = CONV_ACT_STATIC;
layout(constant_id = 1) const int HAS_ZERO_POINT = 0;
layout(constant_id = 2) const int HAS_BIAS = 0;
layout(constant_id = 3) const int REQUANT = 1;
layout(constant_id = 4) const int WG = 64;
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

void main() {
  uint total = p.N * p.OC * p.OH * p.OW;
  uint cg = p.C / p.groups, ocg = p.OC / p.groups;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint ow = i % p.OW, oh = (i / p.OW) % p.OH, oc = (i / (p.OW * p.OH)) % p.OC;
    uint n = i / (p.OW * p.OH * p.OC);
    uint g = oc / ocg;
    int z = HAS_ZERO_POINT == 1 ? zeros[oc] : 128;
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
          int wv = int((w[oc * p.row_words + k / 4u] >> (8u * (k % 4u))) & 0xFFu) - z;
          uint xi = (xc + uint(ih)) * p.W + uint(iw);
          if (ACT == CONV_ACT_NONE) facc += uintBitsToFloat(x[xi]) * float(wv);
          else iacc += (quant_in(xi) - p.in_zp) * wv;
        }
      }
    }
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
}
