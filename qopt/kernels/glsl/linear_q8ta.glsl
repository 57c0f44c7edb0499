#version 450
// Static-activation int8 linear (linear_q8ta_q8csw, with REQUANT linear_q8ta_q8csw_q8to):
//   xq = INPUT_QUANTIZED ? x (i32) : clamp(roundEven(x * in_inv_scale) + in_zp, in_qmin, in_qmax)
//   acc = sum_k (xq - in_zp) * (field(w[n, k]) - z[n])            (exact int32)
//   y = f32(acc) * (in_scale * s[n]) (+ bias[n]); y = min(max(y, clamp_min), clamp_max)
//   REQUANT: out = clamp(roundEven(y * out_inv_scale) + out_zp, out_qmin, out_qmax) (i32)
// w: int8 fields (value - lo, lo = -128 for signed data) packed by packing.pack_bits,
// row_words words per row; s f32 [N]; z i32 [N] = zp - lo (HAS_ZERO_POINT, else 128).
// One output per invocation (grid-stride over M*N).
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const int INPUT_QUANTIZED = 0;
layout(constant_id = 1) const int HAS_ZERO_POINT = 0;
layout(constant_id = 2) const int HAS_BIAS = 0;
layout(constant_id = 3) const int REQUANT = 0;
layout(constant_id = 4) const int WG = 64;
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

void main() {
  uint total = p.M * p.N;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint m = i / p.N, n = i % p.N;
    int z = HAS_ZERO_POINT == 1 ? zeros[n] : 128;
    int acc = 0;
    for (uint k = 0; k < p.K; ++k) {
      int wv = int((w[n * p.row_words + k / 4u] >> (8u * (k % 4u))) & 0xFFu) - z;
      acc += (quant_in(m * p.K + k) - p.in_zp) * wv;
    }
    precise float ws = p.in_scale * scales[n];
    precise float y = float(acc) * ws;
    if (HAS_BIAS == 1) y = y + bias[n];
    y = min(max(y, p.clamp_min), p.clamp_max);
    if (REQUANT == 1) {
      precise float r = roundEven(y * p.out_inv_scale) + float(p.out_zp);
      o[i] = uint(int(clamp(r, float(p.out_qmin), float(p.out_qmax))));
    } else {
      o[i] = floatBitsToUint(y);
    }
  }
}
