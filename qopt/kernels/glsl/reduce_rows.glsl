#version 450
// out[r] = reduce(in[r, 0:cols]) for a [rows, cols] view: OP REDUCE_SUM, REDUCE_MEAN,
// REDUCE_MAX, REDUCE_MIN, REDUCE_ARGMAX, REDUCE_ARGMIN (the index as i32 bits; torch's
// rule: the first extreme, a NaN counting as the extreme). The codes are ordered so
// that OP >= REDUCE_ARGMAX is an index reduction and OP >= REDUCE_MAX a max/min.
// One workgroup of 32 per row (grid-stride over rows).
//
// Sums add in torch's CPU order (qopt/numerics/reductions.py, ATen's cascade_sum), so a
// quantizer after a mean sees torch's value bit for bit: thread t = 8 * chain +
// lane accumulates vectors v = 4 i + chain (8 lanes each) with the 4-level
// cascade (level 0 spills into level 1 every 16 vectors of the chain, level 1
// into 2 every 256, 2 into 3 every 4096); lanes then take the leftover vectors,
// combine chains ((c0 + c1) + c2) + c3, and thread 0 adds the scalar tail and
// the 8 lanes in order. Rows shorter than 8 use torch's scalar 4-chain order.
// max/min use a tree (order does not matter; a NaN propagates as in torch).
// PRE = 1 reduces x * x instead of x (each element squared in f32 as it is read:
// vkc-fuse-elementwise folds a pow(x, 2) / x * x producer in).
layout(local_size_x = 32) in;
layout(constant_id = 0) const int OP = REDUCE_SUM;
layout(constant_id = 1) const int PRE = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;
shared float red[32];
shared int ridx[32];

// max (REDUCE_MAX) or min of a and b with torch's amax / amin rule: a NaN wins (GLSL's
// max / min may return either operand when one is NaN)
float extreme(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return OP == REDUCE_MAX ? max(a, b) : min(a, b);
}

// whether (v, i) beats (b, j) for argmax (ARGMAX) or argmin: NaN first, then the
// value, ties to the smaller index
bool beats(float v, uint i, float b, int j, bool argmax) {
  if (isnan(v) || isnan(b)) return isnan(v) && (!isnan(b) || int(i) < j);
  if (v == b) return int(i) < j;
  return argmax ? v > b : v < b;
}

float ld(uint at) {
  precise float v = x[at];
  precise float s = v * v;
  return PRE == 1 ? s : v;
}

uint ceil_log2(uint v) { return v <= 2u ? 1u : uint(findMSB(v - 1u)) + 1u; }

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
    if (OP >= REDUCE_ARGMAX) {
      bool argmax = OP == REDUCE_ARGMAX;
      float best = 0.0;
      int at = -1;
      for (uint c = t; c < p.cols; c += 32u) {
        float v = ld(base + c);
        if (at < 0 || beats(v, c, best, at, argmax)) {
          best = v;
          at = int(c);
        }
      }
      red[t] = best;
      ridx[t] = at;
      barrier();
      for (uint s = 16u; s > 0u; s >>= 1) {
        if (t < s && ridx[t + s] >= 0 &&
            (ridx[t] < 0 || beats(red[t + s], uint(ridx[t + s]), red[t], ridx[t], argmax))) {
          red[t] = red[t + s];
          ridx[t] = ridx[t + s];
        }
        barrier();
      }
      if (t == 0u) y[r] = intBitsToFloat(max(ridx[0], 0));
      barrier();
      continue;
    }
    if (OP >= REDUCE_MAX) {
      float acc = OP == REDUCE_MAX ? -1.0 / 0.0 : 1.0 / 0.0;
      for (uint c = t; c < p.cols; c += 32u)
        acc = extreme(acc, ld(base + c));
      red[t] = acc;
      barrier();
      for (uint s = 16u; s > 0u; s >>= 1) {
        if (t < s) red[t] = extreme(red[t], red[t + s]);
        barrier();
      }
      if (t == 0u) y[r] = red[0];
      barrier();
      continue;
    }
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
      y[r] = OP == REDUCE_MEAN ? total / float(p.cols) : total;
    }
    barrier();
  }
}
