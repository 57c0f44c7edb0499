#version 450
// Per row of [rows, cols] (per-tensor: rows = 1): mn = min(min(x), 0), mx = max(max(x), 0),
// then scale and zero point as row_qparams.glsl computes them (MAPPING_ASYMMETRIC,
// MAPPING_SYMMETRIC, MAPPING_SYMMETRIC_NO_CLIPPING_ERR; all in f32, quant.choose_qparams).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int MAPPING = MAPPING_ASYMMETRIC;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Sc { float scale_out[]; };
layout(std430, binding = 2) writeonly buffer Zp { int zp_out[]; };
layout(push_constant) uniform P { uint rows; uint cols; int qmin; int qmax; float eps; } p;
shared float rmin[64];
shared float rmax[64];

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
    }
    barrier();
  }
}
