#version 450
// Per row of [rows, cols]: RMS = 0: y = (x - mean) * rsqrt(var + eps) [* w] [+ b]
// (biased variance, two passes); RMS = 1: y = x * rsqrt(mean(x^2) + eps) [* w] [+ b].
// Unused weight/bias bindings must still be bound (any buffer).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int HAS_WEIGHT = 1;
layout(constant_id = 1) const int HAS_BIAS = 1;
layout(constant_id = 2) const int RMS = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Bi { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; float eps; } p;
shared float red[64];

float block_sum(float v) {
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  float n = float(p.cols);
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint base = r * p.cols;
    float mean = 0.0;
    if (RMS == 0) {
      float s = 0.0;
      for (uint c = t; c < p.cols; c += 64) s += x[base + c];
      mean = block_sum(s) / n;
    }
    float s2 = 0.0;
    for (uint c = t; c < p.cols; c += 64) {
      float d = x[base + c] - mean;
      s2 += d * d;
    }
    float inv = inversesqrt(block_sum(s2) / n + p.eps);
    for (uint c = t; c < p.cols; c += 64) {
      float v = (x[base + c] - mean) * inv;
      if (HAS_WEIGHT == 1) v *= w[c];
      if (HAS_BIAS == 1) v += bias[c];
      y[base + c] = v;
    }
  }
}
