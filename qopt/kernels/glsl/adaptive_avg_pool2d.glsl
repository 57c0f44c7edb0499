#version 450
// adaptive_avg_pool2d over planes [P, H, W] -> [P, OH, OW] (torch's start/end rule).
// Like torch: each window summed in row-major order, then divided by its height
// and then by its width, in f32. (A 1x1 output is torch's `mean`; convert-to-vkc
// lowers it to reduce_rows, which adds in torch's cascade order.)
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P { uint planes; uint H; uint W; uint OH; uint OW; } p;

void main() {
  uint total = p.planes * p.OH * p.OW;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint ow = i % p.OW, oh = (i / p.OW) % p.OH, base = (i / (p.OW * p.OH)) * p.H * p.W;
    uint hs = (oh * p.H) / p.OH, he = ((oh + 1) * p.H + p.OH - 1) / p.OH;
    uint ws = (ow * p.W) / p.OW, we = ((ow + 1) * p.W + p.OW - 1) / p.OW;
    precise float s = 0.0;
    for (uint h = hs; h < he; ++h)
      for (uint w = ws; w < we; ++w) s += x[base + h * p.W + w];
    precise float r = s / float(he - hs);
    y[i] = r / float(we - ws);
  }
}
