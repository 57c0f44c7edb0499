#version 450
// Quantized add (add_q8ta_q8ta_q8to): each operand f32 (quantized in-kernel with its
// static params, A_QUANTIZED/B_QUANTIZED = 0) or i32 already quantized (= 1);
//   da = f32(qa - a_zp) * a_scale; db = f32(qb - b_zp) * b_scale;
//   y = da + db * alpha (MUL = 1, qfused.mul: y = da * db);
//   y = min(max(y, clamp_min), clamp_max) (relu: clamp_min = 0);
//   REQUANT: out = clamp(roundEven(y * out_inv_scale) + out_zp, out_qmin, out_qmax) (i32).
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const int A_QUANTIZED = 0;
layout(constant_id = 1) const int B_QUANTIZED = 0;
layout(constant_id = 2) const int REQUANT = 1;
layout(constant_id = 3) const int WG = 64;
layout(constant_id = 4) const int MUL = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform P {
  uint n;
  float a_inv_scale; int a_zp; int a_qmin; int a_qmax; float a_scale;
  float b_inv_scale; int b_zp; int b_qmin; int b_qmax; float b_scale;
  float alpha; float out_inv_scale; int out_zp; int out_qmin; int out_qmax;
  float clamp_min; float clamp_max;
} p;

int q(uint word, bool quantized, float inv, int zp, int qmin, int qmax) {
  if (quantized) return int(word);
  precise float v = roundEven(uintBitsToFloat(word) * inv) + float(zp);
  return int(clamp(v, float(qmin), float(qmax)));
}

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    int qa = q(a[i], A_QUANTIZED == 1, p.a_inv_scale, p.a_zp, p.a_qmin, p.a_qmax);
    int qb = q(b[i], B_QUANTIZED == 1, p.b_inv_scale, p.b_zp, p.b_qmin, p.b_qmax);
    precise float da = float(qa - p.a_zp) * p.a_scale;
    precise float db = float(qb - p.b_zp) * p.b_scale;
    precise float y;
    if (MUL == 1) y = da * db;
    else y = da + db * p.alpha;
    y = min(max(y, p.clamp_min), p.clamp_max);
    if (REQUANT == 1) {
      precise float r = roundEven(y * p.out_inv_scale) + float(p.out_zp);
      o[i] = uint(int(clamp(r, float(p.out_qmin), float(p.out_qmax))));
    } else {
      o[i] = floatBitsToUint(y);
    }
  }
}
