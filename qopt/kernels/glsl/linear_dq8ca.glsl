#version 450
// Dynamic per-row activation linear (linear_dq8ca_q4gsw / linear_dq8ca_q8csw):
// xq i32 [M, K] with per-row x_scale f32 [M], x_zp i32 [M] (choose_qparams_rows +
// quantize_rows); weights WBITS-bit fields packed by packing.pack_bits (row_words per
// row, rows padded to 128 bits), s f32 [N, ngroups], z i32 [N, ngroups] = zp - lo
// (HAS_ZERO_POINT, else 2^(WBITS-1)).
//   acc_g = sum_{k in group g} (xq - x_zp) * (field - z[n, g])         (exact int32)
//   y = (sum_g f32(acc_g) * s[n, g], in group order) * x_scale[m] (+ bias[n])
// Tiling as linear_qw: each invocation owns NPW output columns x MT rows of x;
// workgroups = (ceil(N / (WG*NPW)), ceil(M / MT), 1). When every 128-bit chunk of a
// weight row lies inside one group and the rows hold exactly K fields (K = 4 * row_words
// * 32 / WBITS), chunks are decoded once into ivec4 lanes and used for all MT rows
// (integer products summed in ivec4 lanes: the int32 sum is exact in any order, so the
// result is bit-identical to the per-element loop); otherwise the per-element loop.
// gemv_fast (NPW <= 4, MT 1) or gemm_tile (MT > 1 or NPW > 4); convert-to-vkc picks
// gemm_tile for every M (`qopt.kernels.qlinear.dq8ca_tile`: NPW 16, MT 1 at M = 1).
layout(local_size_x_id = 6) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int NPW = 4;
layout(constant_id = 5) const int MT = 1;
layout(constant_id = 6) const int WG = 64;
// X_UBO 1: gemv_fast / gemm_tile read xq's ivec4s from the uniform block XU (the same buffer
// bound as a uniform buffer at binding 8, its first 16 * XU_VEC4 bytes, XU_VEC4 >= M*K/4);
// as in linear_qw.glsl (lavapipe gathers a uniform load instead of a per-lane loop per
// component). X_UBO 0: the storage view xv (binding 8 bound, not read).
layout(constant_id = 7) const int X_UBO = 0;
layout(constant_id = 8) const int XU_VEC4 = 1;
// W_TEXEL 1: gemv_fast / gemm_tile fetch the weight chunks w4[i] from the uniform texel
// buffer wt (binding 9, texel i = w4[i]), as linear_qw.glsl's W_TEXEL (the same bits);
// W_TEXEL 0: storage loads (wt bound, not read).
layout(constant_id = 9) const int W_TEXEL = 0;
// X_TEXEL 1 (and X_UBO 0): gemv_fast / gemm_tile read xq's ivec4s from the uniform texel
// buffer xt (binding 10, texel i = xv[i] bit for bit), as linear_qw.glsl's X_TEXEL (an xq
// too large for the uniform block: a gather per channel on lavapipe instead of a per-lane
// loop per component); X_TEXEL 0: storage reads (xt bound, not read). The same bits.
layout(constant_id = 10) const int X_TEXEL = 0;
const uint VPW = uint(32 / WBITS);  // values per word
const uint VPC = 4u * VPW;          // values per 128-bit chunk
const uint MASK = (1u << WBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { int xq[]; };
layout(std430, binding = 0) readonly buffer X4 { ivec4 xv[]; };  // the same buffer, 16-byte view
layout(std430, binding = 1) readonly buffer XS { float x_scale[]; };
layout(std430, binding = 2) readonly buffer XZ { int x_zp[]; };
layout(std430, binding = 3) readonly buffer Wq { uint w[]; };
layout(std430, binding = 3) readonly buffer W4 { uvec4 w4[]; };  // the same buffer
layout(std430, binding = 4) readonly buffer S { float scales[]; };
layout(std430, binding = 5) readonly buffer Z { int zeros[]; };
layout(std430, binding = 6) readonly buffer Bias { float bias[]; };
layout(std430, binding = 7) writeonly buffer Out { float o[]; };
layout(std140, binding = 8) uniform XU { ivec4 xu[XU_VEC4]; };
layout(binding = 9) uniform usamplerBuffer wt;
layout(binding = 10) uniform usamplerBuffer xt;
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;

int zero_of(uint idx) { return HAS_ZERO_POINT == 1 ? zeros[idx] : (1 << (WBITS - 1)); }

// ivec4 i of xq for gemv_fast / gemm_tile: from the uniform block when X_UBO (see above)
ivec4 xq4(uint i) {
  if (X_UBO == 1) return xu[i];
  if (X_TEXEL == 1) return ivec4(texelFetch(xt, int(i)));
  return xv[i];
}

// weight chunk i of gemv_fast / gemm_tile: from the texel view when W_TEXEL
uvec4 wq(uint i) {
  if (W_TEXEL == 1) return texelFetch(wt, int(i));
  return w4[i];
}

int hsum(ivec4 v) { return (v.x + v.y) + (v.z + v.w); }

// acc += (field - z) * xs over one 128-bit chunk q; xs(i) = the i-th ivec4 of the
// chunk's (xq - x_zp) values (8 of them for int4, 4 for int8).
ivec4 chunk4(uvec4 q, int z, ivec4 x0, ivec4 x1, ivec4 x2, ivec4 x3, ivec4 x4, ivec4 x5,
             ivec4 x6, ivec4 x7, ivec4 acc) {
  ivec4 zz = ivec4(z);
  acc += (ivec4((uvec4(q.x) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - zz) * x0;
  acc += (ivec4((uvec4(q.x) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - zz) * x1;
  acc += (ivec4((uvec4(q.y) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - zz) * x2;
  acc += (ivec4((uvec4(q.y) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - zz) * x3;
  acc += (ivec4((uvec4(q.z) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - zz) * x4;
  acc += (ivec4((uvec4(q.z) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - zz) * x5;
  acc += (ivec4((uvec4(q.w) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - zz) * x6;
  acc += (ivec4((uvec4(q.w) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - zz) * x7;
  return acc;
}

ivec4 chunk8(uvec4 q, int z, ivec4 x0, ivec4 x1, ivec4 x2, ivec4 x3, ivec4 acc) {
  ivec4 zz = ivec4(z);
  uvec4 sh = uvec4(0u, 8u, 16u, 24u);
  acc += (ivec4((uvec4(q.x) >> sh) & 255u) - zz) * x0;
  acc += (ivec4((uvec4(q.y) >> sh) & 255u) - zz) * x1;
  acc += (ivec4((uvec4(q.z) >> sh) & 255u) - zz) * x2;
  acc += (ivec4((uvec4(q.w) >> sh) & 255u) - zz) * x3;
  return acc;
}

// One row m of x against NPW (<= 4) weight rows n0.. (M = 1 decoding): the x chunk is
// loaded once for the NPW rows; explicit accumulators (no arrays).
void gemv_fast(uint m, uint n0, uint cpr) {
  uint r0 = min(n0, p.N - 1), r1 = min(n0 + 1u, p.N - 1);
  uint r2 = min(n0 + 2u, p.N - 1), r3 = min(n0 + 3u, p.N - 1);
  ivec4 c0 = ivec4(0), c1 = ivec4(0), c2 = ivec4(0), c3 = ivec4(0);
  precise float y0 = 0.0, y1 = 0.0, y2 = 0.0, y3 = 0.0;
  ivec4 zx = ivec4(x_zp[m]);
  uint xb = m * (p.K / 4u);
  for (uint c = 0; c < cpr; ++c) {
    uint g = (c * VPC) / uint(GROUP_SIZE);
    uint xi = xb + c * (VPC / 4u);
    if (WBITS == 4) {
      ivec4 x0 = xq4(xi) - zx, x1 = xq4(xi + 1u) - zx, x2 = xq4(xi + 2u) - zx;
      ivec4 x3 = xq4(xi + 3u) - zx;
      ivec4 x4 = xq4(xi + 4u) - zx, x5 = xq4(xi + 5u) - zx, x6 = xq4(xi + 6u) - zx;
      ivec4 x7 = xq4(xi + 7u) - zx;
      c0 = chunk4(wq(r0 * cpr + c), zero_of(r0 * p.ngroups + g), x0, x1, x2, x3, x4, x5, x6, x7, c0);
      if (NPW > 1) c1 = chunk4(wq(r1 * cpr + c), zero_of(r1 * p.ngroups + g), x0, x1, x2, x3, x4, x5, x6, x7, c1);
      if (NPW > 2) c2 = chunk4(wq(r2 * cpr + c), zero_of(r2 * p.ngroups + g), x0, x1, x2, x3, x4, x5, x6, x7, c2);
      if (NPW > 3) c3 = chunk4(wq(r3 * cpr + c), zero_of(r3 * p.ngroups + g), x0, x1, x2, x3, x4, x5, x6, x7, c3);
    } else {
      ivec4 x0 = xq4(xi) - zx, x1 = xq4(xi + 1u) - zx, x2 = xq4(xi + 2u) - zx;
      ivec4 x3 = xq4(xi + 3u) - zx;
      c0 = chunk8(wq(r0 * cpr + c), zero_of(r0 * p.ngroups + g), x0, x1, x2, x3, c0);
      if (NPW > 1) c1 = chunk8(wq(r1 * cpr + c), zero_of(r1 * p.ngroups + g), x0, x1, x2, x3, c1);
      if (NPW > 2) c2 = chunk8(wq(r2 * cpr + c), zero_of(r2 * p.ngroups + g), x0, x1, x2, x3, c2);
      if (NPW > 3) c3 = chunk8(wq(r3 * cpr + c), zero_of(r3 * p.ngroups + g), x0, x1, x2, x3, c3);
    }
    if (((c + 1u) * VPC) % uint(GROUP_SIZE) == 0u || c + 1u == cpr) {  // the group ends
      precise float t0 = float(hsum(c0)) * scales[r0 * p.ngroups + g];
      y0 = y0 + t0;
      c0 = ivec4(0);
      if (NPW > 1) {
        precise float t1 = float(hsum(c1)) * scales[r1 * p.ngroups + g];
        y1 = y1 + t1;
        c1 = ivec4(0);
      }
      if (NPW > 2) {
        precise float t2 = float(hsum(c2)) * scales[r2 * p.ngroups + g];
        y2 = y2 + t2;
        c2 = ivec4(0);
      }
      if (NPW > 3) {
        precise float t3 = float(hsum(c3)) * scales[r3 * p.ngroups + g];
        y3 = y3 + t3;
        c3 = ivec4(0);
      }
    }
  }
  float xs = x_scale[m];
  for (int r = 0; r < NPW; ++r) {
    uint n = n0 + uint(r);
    if (n >= p.N) break;
    precise float y = (r == 0 ? y0 : (r == 1 ? y1 : (r == 2 ? y2 : y3))) * xs;
    if (HAS_BIAS == 1) y = y + bias[n];
    o[m * p.N + n] = y;
  }
}

// gemm_tile: NPW (<= 16) weight rows x MT (<= 8) rows of x (prefill, or NPW > 4): each
// weight word is decoded once for the MT rows, each x vec4 loaded once for the NPW rows.
// Accumulators are named scalars (no private arrays, which lavapipe keeps in memory):
// int32 i<r><mm> per group (exact in any order), then y<r><mm> += f32(i) * s in group
// order under `precise`, as the per-element loop.
int idot(ivec4 f, ivec4 x) { return (f.x * x.x + f.y * x.y) + (f.z * x.z + f.w * x.w); }

#define ROWDECL(r)                                                                 \
  uint nr##r = min(n0 + uint(r), p.N - 1);                                         \
  int i##r##0 = 0, i##r##1 = 0, i##r##2 = 0, i##r##3 = 0;                          \
  int i##r##4 = 0, i##r##5 = 0, i##r##6 = 0, i##r##7 = 0;                          \
  precise float y##r##0 = 0.0, y##r##1 = 0.0, y##r##2 = 0.0, y##r##3 = 0.0;        \
  precise float y##r##4 = 0.0, y##r##5 = 0.0, y##r##6 = 0.0, y##r##7 = 0.0;
#define XDECL(mm)                                                                  \
  uint xm##mm = min(m0 + uint(mm), p.M - 1);                                       \
  uint xr##mm = xm##mm * (p.K / 4u);                                               \
  ivec4 zx##mm = ivec4(x_zp[xm##mm]);
#define ROWLOAD(r)                                                                 \
  uvec4 q##r = uvec4(0u);                                                          \
  ivec4 zz##r = ivec4(0);                                                          \
  if (NPW > r) {                                                                   \
    q##r = wq(nr##r * cpr + c);                                                    \
    zz##r = ivec4(zero_of(nr##r * p.ngroups + g));                                 \
  }
#define DEC(r, j)                                                                  \
  ivec4 f##r##a = ivec4(0), f##r##b = ivec4(0);                                    \
  if (NPW > r) {                                                                   \
    if (WBITS == 4) {                                                              \
      f##r##a = ivec4((uvec4(q##r[j]) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - zz##r;    \
      f##r##b = ivec4((uvec4(q##r[j]) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - zz##r; \
    } else {                                                                       \
      f##r##a = ivec4((uvec4(q##r[j]) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - zz##r;  \
    }                                                                              \
  }
#define MAC(r, mm)                                                                 \
  if (NPW > r) i##r##mm += WBITS == 4 ? idot(f##r##a, xa) + idot(f##r##b, xb) : idot(f##r##a, xa);
#define XROW(mm, j)                                                                \
  if (MT > mm) {                                                                   \
    ivec4 xa, xb = ivec4(0);                                                       \
    if (WBITS == 4) {                                                              \
      xa = xq4(xr##mm + xc + uint(2 * j)) - zx##mm;                                \
      xb = xq4(xr##mm + xc + uint(2 * j + 1)) - zx##mm;                            \
    } else {                                                                       \
      xa = xq4(xr##mm + xc + uint(j)) - zx##mm;                                    \
    }                                                                              \
    MAC(0, mm) MAC(1, mm) MAC(2, mm) MAC(3, mm) MAC(4, mm) MAC(5, mm) MAC(6, mm)   \
    MAC(7, mm) MAC(8, mm) MAC(9, mm) MAC(10, mm) MAC(11, mm) MAC(12, mm)           \
    MAC(13, mm) MAC(14, mm) MAC(15, mm)                                            \
  }
#define WORD(j)                                                                    \
  {                                                                                \
    DEC(0, j) DEC(1, j) DEC(2, j) DEC(3, j) DEC(4, j) DEC(5, j) DEC(6, j) DEC(7, j)    \
    DEC(8, j) DEC(9, j) DEC(10, j) DEC(11, j) DEC(12, j) DEC(13, j) DEC(14, j)         \
    DEC(15, j)                                                                     \
    XROW(0, j) XROW(1, j) XROW(2, j) XROW(3, j) XROW(4, j) XROW(5, j) XROW(6, j)   \
    XROW(7, j)                                                                     \
  }
#define FOLD(r, mm)                                                                \
  if (MT > mm) {                                                                   \
    precise float t = float(i##r##mm) * s;                                         \
    y##r##mm = y##r##mm + t;                                                       \
    i##r##mm = 0;                                                                  \
  }
#define FOLDROW(r)                                                                 \
  if (NPW > r) {                                                                   \
    float s = scales[nr##r * p.ngroups + g];                                       \
    FOLD(r, 0) FOLD(r, 1) FOLD(r, 2) FOLD(r, 3) FOLD(r, 4) FOLD(r, 5) FOLD(r, 6)   \
    FOLD(r, 7)                                                                     \
  }
#define STORE(r, mm)                                                               \
  if (NPW > r && MT > mm && n0 + uint(r) < p.N && m0 + uint(mm) < p.M) {           \
    precise float v = y##r##mm * x_scale[m0 + uint(mm)];                           \
    if (HAS_BIAS == 1) v = v + bias[n0 + uint(r)];                                 \
    o[(m0 + uint(mm)) * p.N + n0 + uint(r)] = v;                                   \
  }
#define STOREROW(r)                                                                \
  STORE(r, 0) STORE(r, 1) STORE(r, 2) STORE(r, 3) STORE(r, 4) STORE(r, 5) STORE(r, 6) \
  STORE(r, 7)

void gemm_tile(uint m0, uint n0, uint cpr) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  ROWDECL(8) ROWDECL(9) ROWDECL(10) ROWDECL(11) ROWDECL(12) ROWDECL(13) ROWDECL(14)
  ROWDECL(15)
  XDECL(0) XDECL(1) XDECL(2) XDECL(3) XDECL(4) XDECL(5) XDECL(6) XDECL(7)
  for (uint c = 0; c < cpr; ++c) {
    uint g = (c * VPC) / uint(GROUP_SIZE);
    uint xc = c * (VPC / 4u);
    ROWLOAD(0) ROWLOAD(1) ROWLOAD(2) ROWLOAD(3) ROWLOAD(4) ROWLOAD(5) ROWLOAD(6) ROWLOAD(7)
    ROWLOAD(8) ROWLOAD(9) ROWLOAD(10) ROWLOAD(11) ROWLOAD(12) ROWLOAD(13) ROWLOAD(14)
    ROWLOAD(15)
    for (int j = 0; j < 4; ++j) WORD(j)  // a loop, not 4 copies: a smaller shader
    if (((c + 1u) * VPC) % uint(GROUP_SIZE) == 0u || c + 1u == cpr) {  // the group ends
      FOLDROW(0) FOLDROW(1) FOLDROW(2) FOLDROW(3) FOLDROW(4) FOLDROW(5) FOLDROW(6)
      FOLDROW(7) FOLDROW(8) FOLDROW(9) FOLDROW(10) FOLDROW(11) FOLDROW(12) FOLDROW(13)
      FOLDROW(14) FOLDROW(15)
    }
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7) STOREROW(8) STOREROW(9) STOREROW(10) STOREROW(11) STOREROW(12) STOREROW(13)
  STOREROW(14) STOREROW(15)
}

// The per-element loop: any group size, K and row padding.
void element(uint m, uint n) {
  int zx = x_zp[m];
  precise float y = 0.0;
  for (uint g = 0; g < p.ngroups; ++g) {
    int z = zero_of(n * p.ngroups + g);
    int acc = 0;
    uint kend = min(p.K, (g + 1) * uint(GROUP_SIZE));
    for (uint k = g * uint(GROUP_SIZE); k < kend; ++k) {
      int wv = int((w[n * p.row_words + k / VPW] >> (uint(WBITS) * (k % VPW))) & MASK) - z;
      acc += (xq[m * p.K + k] - zx) * wv;
    }
    precise float term = float(acc) * scales[n * p.ngroups + g];
    y = y + term;
  }
  y = y * x_scale[m];
  if (HAS_BIAS == 1) y = y + bias[n];
  o[m * p.N + n] = y;
}

void main() {
  uint cpr = p.row_words / 4u;
  // fast when every chunk lies inside one group and the rows hold exactly K fields
  bool fast = (uint(GROUP_SIZE) % VPC) == 0u && p.row_words % 4u == 0u && cpr * VPC == p.K;
  // gemm_tile once per invocation, outside any loop, when the grid covers M x N (it does
  // unless group_count capped it at MAX_WORKGROUPS; then the per-element loops below): as
  // in linear_qw.glsl (lavapipe runs a loop's body under the loop's execution mask). Rows
  // and columns past M / N are clamped (reads) and skipped (stores) in the tile.
  bool covers = gl_NumWorkGroups.x * uint(WG * NPW) >= p.N && gl_NumWorkGroups.y * uint(MT) >= p.M;
  if (fast && (MT > 1 || NPW > 4) && covers) {
    uint n0 = gl_WorkGroupID.x * uint(WG * NPW) + gl_LocalInvocationID.x * uint(NPW);
    gemm_tile(gl_WorkGroupID.y * uint(MT), n0, cpr);
    return;
  }
  for (uint m0 = gl_WorkGroupID.y * uint(MT); m0 < p.M; m0 += gl_NumWorkGroups.y * uint(MT)) {
    for (uint nb = gl_WorkGroupID.x * uint(WG * NPW); nb < p.N;
         nb += gl_NumWorkGroups.x * uint(WG * NPW)) {
      uint n0 = nb + gl_LocalInvocationID.x * uint(NPW);
      if (fast && MT == 1 && NPW <= 4) {
        gemv_fast(m0, n0, cpr);
        continue;
      }
      // MT > 1 or NPW > 4 on a capped grid: the per-element loop below (exact arithmetic:
      // the same bits as gemm_tile; a second inlined copy of the unrolled gemm_tile doubled
      // the time every linear_dq8ca pipeline takes to create, whatever its path)
      for (int r = 0; r < NPW; ++r) {
        for (int mm = 0; mm < MT; ++mm) {
          if (n0 + uint(r) < p.N && m0 + uint(mm) < p.M) element(m0 + uint(mm), n0 + uint(r));
        }
      }
    }
  }
}
