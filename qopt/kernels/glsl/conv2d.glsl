#version 450
// Float conv2d, NCHW input [N, C, H, W], weight [OC, C/groups, KH, KW], optional
// bias [OC], out [N, OC, OH, OW]; one output per invocation (grid-stride).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int HAS_BIAS = 0;
layout(constant_id = 1) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P {
  uint N; uint C; uint H; uint W; uint OC; uint OH; uint OW; uint KH; uint KW;
  int sh; int sw; int ph; int pw; int dh; int dw; uint groups;
} p;

void main() {
  uint total = p.N * p.OC * p.OH * p.OW;
  uint cg = p.C / p.groups, ocg = p.OC / p.groups;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint ow = i % p.OW, oh = (i / p.OW) % p.OH, oc = (i / (p.OW * p.OH)) % p.OC;
    uint n = i / (p.OW * p.OH * p.OC);
    uint g = oc / ocg;
    float acc = 0.0;
    for (uint c = 0; c < cg; ++c) {
      uint xc = (n * p.C + g * cg + c) * p.H;
      uint wc = ((oc * cg + c) * p.KH) * p.KW;
      for (uint kh = 0; kh < p.KH; ++kh) {
        int ih = int(oh) * p.sh - p.ph + int(kh) * p.dh;
        if (ih < 0 || ih >= int(p.H)) continue;
        for (uint kw = 0; kw < p.KW; ++kw) {
          int iw = int(ow) * p.sw - p.pw + int(kw) * p.dw;
          if (iw < 0 || iw >= int(p.W)) continue;
          acc += x[(xc + uint(ih)) * p.W + uint(iw)] * w[wc + kh * p.KW + kw];
        }
      }
    }
    if (HAS_BIAS == 1) acc += bias[oc];
    y[i] = acc;
  }
}
