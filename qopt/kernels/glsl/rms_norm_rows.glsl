#version 450
// RMSNorm over the last dim of [rows, cols] in one dispatch, computing exactly what the
// decomposed form computes in f32 (vkc-fuse-norms folds it in):
//   h = a (+ alpha * b when HAS_ADD: a residual add, binary.glsl's `x + alpha * y`)
//   mean = sum(h * h) / cols   (reduce_rows.glsl with PRE = 1, OP = REDUCE_MEAN: the
//                               same cascade, in torch's CPU order)
//   r = 1.0 / sqrt(mean + eps) (binary add, unary.glsl's RSQRT)
//   y = (h * r) * w[w_off + c] (two binary multiplies)
// and h itself into `h` when HAS_H (the residual stream a later add reads). With QUANT
// it also quantizes each row of y as quantize_rows_dynamic.glsl does (an 8da4w linear's
// input): scale / zp of the row's min(min(y), 0) and max(max(y), 0) (row_qparams.glsl,
// push qmin, qmax, q_eps), written out, then q = clamp(roundEven(y * (1 / scale)) + zp,
// q_qmin, q_qmax) (ZP_BEFORE_ROUND = 1: roundEven(y * inv + zp)), each thread reading
// back the y words it wrote. One workgroup of 32 per row (grid-stride over rows): the
// row's sum as reduce_rows adds it, then every thread writes its columns c = t, t + 32, ...
layout(local_size_x = 32) in;
layout(constant_id = 0) const int HAS_ADD = 0;
layout(constant_id = 1) const int HAS_H = 0;
layout(constant_id = 2) const int QUANT = 0;
layout(constant_id = 3) const int MAPPING = MAPPING_ASYMMETRIC;
layout(constant_id = 4) const int ZP_BEFORE_ROUND = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer H { float h[]; };
layout(std430, binding = 4) buffer Y { float y[]; };
layout(std430, binding = 5) writeonly buffer Sc { float scale_out[]; };
layout(std430, binding = 6) writeonly buffer Zp { int zp_out[]; };
layout(std430, binding = 7) writeonly buffer Q { int q[]; };
layout(push_constant) uniform P {
  uint rows; uint cols; float alpha; float eps; uint w_off;
  int qmin; int qmax; float q_eps; int q_qmin; int q_qmax;
} p;
shared float red[32];
shared float rmax[32];
shared float rstd;
shared float row_scale;
shared int row_zp;

#include "row_qparams.glsl"

float hval(uint at) {
  precise float v = a[at];
  if (HAS_ADD == 1) {
    precise float s = v + p.alpha * b[at];
    return s;
  }
  return v;
}

float ld(uint at) {
  precise float v = hval(at);
  precise float s = v * v;
  return s;
}

uint ceil_log2(uint v) { return v <= 2u ? 1u : uint(findMSB(v - 1u)) + 1u; }

// reduce_rows.glsl's chain_sum (keep the two in step: tests compare them)
float chain_sum(uint base, uint t, uint full) {
  // acc[level]: ATen's multi_row_sum for one (chain, lane) of a 4-chain row.
  uint power = max(4u, ceil_log2(full) / 4u);
  uint step = 1u << power, mask = step - 1u;
  precise float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  uint i = 0u;
  while (i + step <= full) {
    for (uint j = 0u; j < step; ++j, ++i) a0 += ld(base + i * 32u + t);
    a1 += a0; a0 = 0.0;
    if ((i & (mask << power)) != 0u) continue;
    a2 += a1; a1 = 0.0;
    if ((i & (mask << (2u * power))) != 0u) continue;
    a3 += a2; a2 = 0.0;
  }
  for (; i < full; ++i) a0 += ld(base + i * 32u + t);
  a0 += a1;
  a0 += a2;
  a0 += a3;
  return a0;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint base = r * p.cols;
    uint vectors = p.cols / 8u, full = vectors / 4u;
    if (p.cols >= 8u) {
      red[t] = chain_sum(base, t, full);
      barrier();
      if (t < 8u) {
        precise float c0 = red[t];
        for (uint v = full * 4u; v < vectors; ++v) c0 += ld(base + v * 8u + t);
        c0 += red[8u + t];
        c0 += red[16u + t];
        c0 += red[24u + t];
        red[t] = c0;
      }
      barrier();
    }
    if (t == 0u) {
      precise float total = 0.0;
      if (p.cols >= 8u) {
        for (uint k = vectors * 8u; k < p.cols; ++k) total += ld(base + k);
        for (uint l = 0u; l < 8u; ++l) total += red[l];
      } else {
        // scalar row_sum: element k in chain k % 4, leftovers to chain 0
        precise float c[4] = float[4](0.0, 0.0, 0.0, 0.0);
        uint whole = (p.cols / 4u) * 4u;
        for (uint k = 0u; k < whole; ++k) c[k % 4u] += ld(base + k);
        for (uint k = whole; k < p.cols; ++k) c[0] += ld(base + k);
        total = ((c[0] + c[1]) + c[2]) + c[3];
      }
      precise float mean = total / float(p.cols);
      precise float shifted = mean + 1.0 * p.eps;
      precise float inv = 1.0 / sqrt(shifted);
      rstd = inv;
    }
    barrier();
    precise float inv = rstd;
    float lo = 0.0, hi = 0.0;
    for (uint c = t; c < p.cols; c += 32u) {
      precise float v = hval(base + c);
      precise float scaled = v * inv;
      precise float out_v = scaled * w[p.w_off + c];
      if (HAS_H == 1) h[base + c] = v;
      y[base + c] = out_v;
      if (QUANT == 1) {
        lo = min(lo, out_v);
        hi = max(hi, out_v);
      }
    }
    if (QUANT == 1) {
      // red[] is free again: every thread read its rstd after the last barrier
      red[t] = lo;
      rmax[t] = hi;
      barrier();
      for (uint s = 16u; s > 0u; s >>= 1) {
        if (t < s) {
          red[t] = min(red[t], red[t + s]);
          rmax[t] = max(rmax[t], rmax[t + s]);
        }
        barrier();
      }
      if (t == 0u) {
        float scale;
        int zp;
        row_qparams(red[0], rmax[0], p.qmin, p.qmax, p.q_eps, scale, zp);
        scale_out[r] = scale;
        zp_out[r] = zp;
        row_scale = scale;
        row_zp = zp;
      }
      barrier();
      precise float qinv = 1.0 / row_scale;
      float zpf = float(row_zp);
      for (uint c = t; c < p.cols; c += 32u) {
        precise float v = y[base + c] * qinv;
        precise float res = ZP_BEFORE_ROUND == 1 ? roundEven(v + zpf) : roundEven(v) + zpf;
        q[base + c] = int(clamp(res, float(p.q_qmin), float(p.q_qmax)));
      }
    }
    barrier();
  }
}
