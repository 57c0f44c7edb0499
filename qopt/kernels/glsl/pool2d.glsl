#version 450
// max_pool2d (OP POOL_MAX) / avg_pool2d (OP POOL_AVG) over planes [P, H, W] -> [P, OH, OW]
// (OH/OW as torch computes them, ceil_mode included); avg divisor as torch:
// divisor_override if nonzero, else the window clipped to the padded input
// (COUNT_INCLUDE_PAD = 1) or to the input (0).
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = POOL_MAX;
layout(constant_id = 1) const int COUNT_INCLUDE_PAD = 1;
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P {
  uint planes; int H; int W; uint OH; uint OW; int KH; int KW; int sh; int sw; int ph; int pw;
  int dh; int dw; int divisor_override;
} p;

void main() {
  uint total = p.planes * p.OH * p.OW;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    int ow = int(i % p.OW), oh = int((i / p.OW) % p.OH);
    uint base = (i / (p.OW * p.OH)) * uint(p.H * p.W);
    int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
    if (OP == POOL_MAX) {
      float m = -1.0 / 0.0;
      for (int kh = 0; kh < p.KH; ++kh) {
        int ih = h0 + kh * p.dh;
        if (ih < 0 || ih >= p.H) continue;
        for (int kw = 0; kw < p.KW; ++kw) {
          int iw = w0 + kw * p.dw;
          if (iw < 0 || iw >= p.W) continue;
          float v = x[base + uint(ih * p.W + iw)];
          m = (v > m || isnan(v)) ? v : m;
        }
      }
      y[i] = m;
    } else {
      int h1 = min(h0 + p.KH, p.H + p.ph), w1 = min(w0 + p.KW, p.W + p.pw);
      int pool = (h1 - h0) * (w1 - w0);
      int hs = max(h0, 0), ws = max(w0, 0), he = min(h1, p.H), we = min(w1, p.W);
      precise float s = 0.0;  // row-major, in f32: torch's order
      for (int ih = hs; ih < he; ++ih)
        for (int iw = ws; iw < we; ++iw) s += x[base + uint(ih * p.W + iw)];
      int div = p.divisor_override != 0 ? p.divisor_override
              : (COUNT_INCLUDE_PAD == 1 ? pool : (he - hs) * (we - ws));
      precise float r = s / float(div);
      y[i] = r;
    }
  }
}
