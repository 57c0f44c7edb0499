#version 450
// Dynamic per-row quantization of [rows, cols] with the row's scale (f32) and zp (i32):
// q = clamp(roundEven(x * f32(1 / scale)) + zp, qmin, qmax) (ZP_BEFORE_ROUND = 1:
// roundEven(x * inv + zp)), in f32 (qopt.numerics.quant.quantize).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ZP_BEFORE_ROUND = 0;
layout(constant_id = 1) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Sc { float scales[]; };
layout(std430, binding = 2) readonly buffer Zp { int zps[]; };
layout(std430, binding = 3) writeonly buffer Out { int q[]; };
layout(push_constant) uniform P { uint rows; uint cols; int qmin; int qmax; } p;

void main() {
  uint total = p.rows * p.cols;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint r = i / p.cols;
    precise float inv = 1.0 / scales[r];
    precise float v = x[i] * inv;
    precise float res = ZP_BEFORE_ROUND == 1 ? roundEven(v + float(zps[r]))
                                             : roundEven(v) + float(zps[r]);
    q[i] = int(clamp(res, float(p.qmin), float(p.qmax)));
  }
}
