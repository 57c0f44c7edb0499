#version 450
// Float conv2d, NCHW input [N, C, H, W], weight [OC, C/groups, KH, KW], optional
// bias [OC], out [N, OC, OH, OW]. Each invocation computes OCT output channels x OWT
// output columns of one output row (grid-stride over N * ceil(OC/OCT) * OH *
// ceil(OW/OWT)); workgroups = ceil(that / WG). OCT = OWT = 1 is one output per invocation.
// With stride and dilation 1 along the width, `tile_s1` keeps the tile's x values in a
// window shifted by one column per tap (the same taps, sums and order as `tile`).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int HAS_BIAS = 0;
layout(constant_id = 1) const int WG = 64;
layout(constant_id = 2) const int OCT = 1;  // output channels per invocation (<= 8)
layout(constant_id = 3) const int OWT = 1;  // output columns per invocation (<= 8)
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float y[]; };
layout(push_constant) uniform P {
  uint N; uint C; uint H; uint W; uint OC; uint OH; uint OW; uint KH; uint KW;
  int sh; int sw; int ph; int pw; int dh; int dw; uint groups;
} p;

void finish(uint i, uint oc, float acc) {
  if (HAS_BIAS == 1) acc += bias[oc];
  y[i] = acc;
}

// output (n, oc, oh, ow) of group g alone
void one(uint n, uint oc, uint oh, uint ow, uint cg, uint g) {
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
  finish(((n * p.OC + oc) * p.OH + oh) * p.OW + ow, oc, acc);
}

#define ACC_T float
#define ACC_ZERO 0.0
#define X_T float
#define XLOAD(i) x[i]
#define XMUL(xv, wv) (xv) * (wv)
#define WLOAD(r) float wv##r = 0.0; if (OCT > r) wv##r = w[ch##r * cg * p.KH * p.KW + k];

// The tile: OCT output channels (one group: x shared) x OWT output columns of one output
// row; accumulators named a<r><j> (no private arrays: lavapipe keeps dynamically indexed
// ones in memory). Each x tap is loaded once for the OCT channels, each weight once for
// the OWT columns; every output sums its taps in the order (c, kh, kw) of the one-output
// loop, skipping the padding taps as it does.
#define ROWDECL(r)                                                                 \
  uint ch##r = min(oc0 + uint(r), p.OC - 1);                                       \
  ACC_T a##r##0 = ACC_ZERO, a##r##1 = ACC_ZERO, a##r##2 = ACC_ZERO, a##r##3 = ACC_ZERO;  \
  ACC_T a##r##4 = ACC_ZERO, a##r##5 = ACC_ZERO, a##r##6 = ACC_ZERO, a##r##7 = ACC_ZERO;
#define MAC(r, j) if (OCT > r) a##r##j += XMUL(xv, wv##r);
#define XCOL(j)                                                                    \
  if (OWT > j) {                                                                   \
    int iw = int(ow0 + uint(j)) * p.sw - p.pw + int(kw) * p.dw;                    \
    if (iw >= 0 && iw < int(p.W)) {                                                \
      X_T xv = XLOAD(xrow + uint(iw));                                             \
      MAC(0, j) MAC(1, j) MAC(2, j) MAC(3, j) MAC(4, j) MAC(5, j) MAC(6, j) MAC(7, j) \
    }                                                                              \
  }
#define FIN(r, j)                                                                  \
  if (OCT > r && OWT > j && oc0 + uint(r) < p.OC && ow0 + uint(j) < p.OW)          \
    finish(((nn * p.OC + ch##r) * p.OH + oh) * p.OW + ow0 + uint(j), ch##r, a##r##j);
#define FINROW(r) FIN(r, 0) FIN(r, 1) FIN(r, 2) FIN(r, 3) FIN(r, 4) FIN(r, 5) FIN(r, 6) FIN(r, 7)

void tile(uint nn, uint oc0, uint oh, uint ow0, uint cg, uint g) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  for (uint c = 0; c < cg; ++c) {
    uint xc = (nn * p.C + g * cg + c) * p.H;
    for (uint kh = 0; kh < p.KH; ++kh) {
      int ih = int(oh) * p.sh - p.ph + int(kh) * p.dh;
      if (ih < 0 || ih >= int(p.H)) continue;
      uint xrow = (xc + uint(ih)) * p.W;
      for (uint kw = 0; kw < p.KW; ++kw) {
        uint k = (c * p.KH + kh) * p.KW + kw;
        WLOAD(0) WLOAD(1) WLOAD(2) WLOAD(3) WLOAD(4) WLOAD(5) WLOAD(6) WLOAD(7)
        XCOL(0) XCOL(1) XCOL(2) XCOL(3) XCOL(4) XCOL(5) XCOL(6) XCOL(7)
      }
    }
  }
  FINROW(0) FINROW(1) FINROW(2) FINROW(3) FINROW(4) FINROW(5) FINROW(6) FINROW(7)
}

// Stride 1 and dilation 1 along the width: the x values of the OWT columns at tap kw + 1
// are those of columns 1.. at tap kw, so the window xv<j> (inside the row: xk<j>) is
// shifted by one column per tap and only its last column loaded (OWT + KW - 1 x loads per
// kernel row instead of OWT * KW; a load is a loop over the SIMD lanes on lavapipe).
// Out-of-row columns read the row's clamped column and are skipped, as in `tile`.
#define XAT(j, kw_)                                                                \
  {                                                                                \
    int iw = int(ow0 + uint(j)) - p.pw + int(kw_);                                 \
    xk##j = iw >= 0 && iw < int(p.W);                                              \
    xv##j = x[xrow + uint(clamp(iw, 0, int(p.W) - 1))];                            \
  }
#define XFIRST(j) if (OWT > j) XAT(j, 0)
#define XSHIFT(j, jn) if (OWT > jn) { xv##j = xv##jn; xk##j = xk##jn; }
#define XLAST(j) if (OWT == j + 1) XAT(j, kw + 1u)
#define WCOL(j)                                                                    \
  if (OWT > j && xk##j) {                                                          \
    X_T xv = xv##j;                                                                \
    MAC(0, j) MAC(1, j) MAC(2, j) MAC(3, j) MAC(4, j) MAC(5, j) MAC(6, j) MAC(7, j) \
  }

void tile_s1(uint nn, uint oc0, uint oh, uint ow0, uint cg, uint g) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  float xv0 = 0.0, xv1 = 0.0, xv2 = 0.0, xv3 = 0.0, xv4 = 0.0, xv5 = 0.0, xv6 = 0.0;
  float xv7 = 0.0;
  bool xk0 = false, xk1 = false, xk2 = false, xk3 = false, xk4 = false, xk5 = false;
  bool xk6 = false, xk7 = false;
  for (uint c = 0; c < cg; ++c) {
    uint xc = (nn * p.C + g * cg + c) * p.H;
    for (uint kh = 0; kh < p.KH; ++kh) {
      int ih = int(oh) * p.sh - p.ph + int(kh) * p.dh;
      if (ih < 0 || ih >= int(p.H)) continue;
      uint xrow = (xc + uint(ih)) * p.W;
      XFIRST(0) XFIRST(1) XFIRST(2) XFIRST(3) XFIRST(4) XFIRST(5) XFIRST(6) XFIRST(7)
      for (uint kw = 0; kw < p.KW; ++kw) {
        uint k = (c * p.KH + kh) * p.KW + kw;
        WLOAD(0) WLOAD(1) WLOAD(2) WLOAD(3) WLOAD(4) WLOAD(5) WLOAD(6) WLOAD(7)
        WCOL(0) WCOL(1) WCOL(2) WCOL(3) WCOL(4) WCOL(5) WCOL(6) WCOL(7)
        XSHIFT(0, 1) XSHIFT(1, 2) XSHIFT(2, 3) XSHIFT(3, 4) XSHIFT(4, 5) XSHIFT(5, 6)
        XSHIFT(6, 7)
        XLAST(0) XLAST(1) XLAST(2) XLAST(3) XLAST(4) XLAST(5) XLAST(6) XLAST(7)
      }
    }
  }
  FINROW(0) FINROW(1) FINROW(2) FINROW(3) FINROW(4) FINROW(5) FINROW(6) FINROW(7)
}

void main() {
  uint cg = p.C / p.groups, ocg = p.OC / p.groups;
  uint owb = (p.OW + uint(OWT) - 1u) / uint(OWT), ocb = (p.OC + uint(OCT) - 1u) / uint(OCT);
  uint total = p.N * ocb * p.OH * owb;
  bool s1 = p.sw == 1 && p.dw == 1 && p.W > 0u;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint ow0 = (i % owb) * uint(OWT), oh = (i / owb) % p.OH;
    uint oc0 = ((i / (owb * p.OH)) % ocb) * uint(OCT);
    uint nn = i / (owb * p.OH * ocb);
    uint g = oc0 / ocg;
    if (min(oc0 + uint(OCT) - 1u, p.OC - 1u) / ocg == g) {
      if (s1) tile_s1(nn, oc0, oh, ow0, cg, g);
      else tile(nn, oc0, oh, ow0, cg, g);
      continue;
    }
    // the channels straddle a group boundary: one output at a time
    for (uint r = 0; r < uint(OCT); ++r) {
      for (uint j = 0; j < uint(OWT); ++j) {
        uint oc = oc0 + r, ow = ow0 + j;
        if (oc < p.OC && ow < p.OW) one(nn, oc, oh, ow, cg, oc / ocg);
      }
    }
  }
}
