#version 450
// y[r, :] = softmax(x[r, :]) (LOG = 1: log_softmax) over the last dim of [rows, cols].
layout(local_size_x = 64) in;
layout(constant_id = 0) const int LOG = 0;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; } p;
shared float red[64];

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint base = r * p.cols;
    float m = -1.0 / 0.0;
    for (uint c = t; c < p.cols; c += 64) m = max(m, x[base + c]);
    red[t] = m;
    barrier();
    for (uint s = 32; s > 0; s >>= 1) {
      if (t < s) red[t] = max(red[t], red[t + s]);
      barrier();
    }
    m = red[0];
    barrier();
    float sum = 0.0;
    for (uint c = t; c < p.cols; c += 64) sum += exp(x[base + c] - m);
    red[t] = sum;
    barrier();
    for (uint s = 32; s > 0; s >>= 1) {
      if (t < s) red[t] += red[t + s];
      barrier();
    }
    sum = red[0];
    barrier();
    if (LOG == 1) {
      float ls = log(sum);
      for (uint c = t; c < p.cols; c += 64) y[base + c] = x[base + c] - m - ls;
    } else {
      float inv = 1.0 / sum;
      for (uint c = t; c < p.cols; c += 64) y[base + c] = exp(x[base + c] - m) * inv;
    }
  }
}
