#version 450
// choose_qparams_rows and quantize_rows of one x in one dispatch (vkc-fuse-norms folds
// them together): per row of [rows, cols], scale / zp exactly as choose_qparams_rows.glsl
// computes them (written out: the linear reads them), then every element quantized with
// them exactly as quantize_rows.glsl does: q = clamp(roundEven(x * (1 / scale)) + zp,
// q_qmin, q_qmax) (ZP_BEFORE_ROUND = 1: roundEven(x * inv + zp)). One workgroup of 64
// per row (grid-stride over rows).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int MAPPING = MAPPING_ASYMMETRIC;
layout(constant_id = 1) const int ZP_BEFORE_ROUND = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Sc { float scale_out[]; };
layout(std430, binding = 2) writeonly buffer Zp { int zp_out[]; };
layout(std430, binding = 3) writeonly buffer Out { int q[]; };
layout(push_constant) uniform P {
  uint rows; uint cols; int qmin; int qmax; float eps; int q_qmin; int q_qmax;
} p;
shared float rmin[64];
shared float rmax[64];

shared float row_scale;
shared int row_zp;

#include "row_qparams.glsl"

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    float lo = 0.0, hi = 0.0;
    for (uint c = t; c < p.cols; c += 64) {
      float v = x[r * p.cols + c];
      lo = min(lo, v);
      hi = max(hi, v);
    }
    rmin[t] = lo;
    rmax[t] = hi;
    barrier();
    for (uint s = 32; s > 0; s >>= 1) {
      if (t < s) {
        rmin[t] = min(rmin[t], rmin[t + s]);
        rmax[t] = max(rmax[t], rmax[t + s]);
      }
      barrier();
    }
    if (t == 0) {
      float scale;
      int zp;
      row_qparams(rmin[0], rmax[0], p.qmin, p.qmax, p.eps, scale, zp);
      scale_out[r] = scale;
      zp_out[r] = zp;
      row_scale = scale;
      row_zp = zp;
    }
    barrier();
    precise float inv = 1.0 / row_scale;
    float zpf = float(row_zp);
    for (uint c = t; c < p.cols; c += 64) {
      uint i = r * p.cols + c;
      precise float v = x[i] * inv;
      precise float res = ZP_BEFORE_ROUND == 1 ? roundEven(v + zpf) : roundEven(v) + zpf;
      q[i] = int(clamp(res, float(p.q_qmin), float(p.q_qmax)));
    }
    barrier();
  }
}
