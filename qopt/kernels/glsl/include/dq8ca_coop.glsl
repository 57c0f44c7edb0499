// The cooperative decode GEMV of linear_dq8ca (`qopt.kernels.coop`), the text of
// linear_dq8ca_coop.glsl (PRODUCTS_F16 0: int32 products) and linear_dq8ca_coop_f16.glsl
// (PRODUCTS_F16 1: the int4 x int8 products in f16, summed in f32). Picked at load for a
// dispatch with M = 1 whose every 128-bit chunk is on the fast path (`dq8ca_coop_applies`),
// on a device with subgroup arithmetic in the compute stage and the shared memory below.
// The same bindings, push constants and specialization constants (constant ids) as
// linear_dq8ca.glsl, so a bundle's dispatch runs unchanged; NPW, MT and WG are not read.
//
// A workgroup of 64 invocations owns ROWS = 64 consecutive output rows; each subgroup (of
// S = gl_SubgroupSize lanes) takes blocks of R = min(S, 32) rows. Lane l reads chunk
// c0 + l of each of the R rows (adjacent lanes, adjacent 16-byte chunks: coalesced on a
// GPU; its x chunk loaded once for the R rows) and stores the chunk's exact int32 dot
// product in shared memory; then lane r folds row r's S chunk sums in chunk order, as the
// base does: int32 per group (exact in any order), y = y + f32(acc_g) * s[n, g] under
// `precise` when the group ends. So the result is the base's bit for bit (the kernel is
// declared exact). A row of one group (GROUP_SIZE >= K: int8 per channel) needs no fold:
// each lane sums its chunks in int32 and subgroupAdd adds the lanes (exact), two rows at a
// time. A subgroup that is not full (its device runs fewer lanes than gl_SubgroupSize) or
// whose block would not fit `part` computes its rows one per lane, in the base's order.
//
// f16 products (PRODUCTS_F16 1, needs shaderFloat16): (field - 8) in [-8, 7] times
// (xq - x_zp) in [-255, 255] is an integer of magnitude <= 2040 <= 2^11, exact in f16;
// a chunk's 32 products sum exactly in f32 (<= 65280 < 2^24): the same int32 chunk sums,
// so the same bits, for symmetric int4 weights (WBITS 4, HAS_ZERO_POINT 0:
// `dq8ca_f16_applies`) and int8 activations (quantize_rows' range; other values would
// round). Other specializations of that shader take the int32 products.
//
// Reads: xq's ivec4s below cpr*VPC/4 = K/4 (x_scale[0], x_zp[0]), w chunks n*cpr + c for
// n < N, c < cpr, scales / zeros [n*ngroups + c*VPC/GROUP_SIZE], bias[n]; writes o[n]:
// the words linear_dq8ca's chunked paths read and write at M = 1 (its extents).
// workgroups = (ceil(N / ROWS), 1, 1) (`coop.dq8ca_coop_workgroups`).
#ifndef COOP_SERIAL
#define COOP_SERIAL 0  // 1: every subgroup takes the one-row-per-lane path (a test builds it so)
#endif
layout(local_size_x = 64) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int NPW = 4;
layout(constant_id = 5) const int MT = 1;
layout(constant_id = 6) const int WG = 64;
layout(constant_id = 7) const int X_UBO = 0;
layout(constant_id = 8) const int XU_VEC4 = 1;
layout(constant_id = 9) const int W_TEXEL = 0;
layout(constant_id = 10) const int X_TEXEL = 0;
const uint ROWS = 64u;    // output rows per workgroup (coop.DQ8CA_COOP_ROWS)
const uint RMAX = 32u;    // rows a subgroup takes at a time, at most
const uint PART = 2112u;  // 64 * 33 ints: R * (S + 1) per subgroup for S <= 64 (coop.DQ8CA_COOP_SHARED)
const uint VPW = uint(32 / WBITS);
const uint VPC = 4u * VPW;
layout(std430, binding = 0) readonly buffer X4 { ivec4 xv[]; };
layout(std430, binding = 1) readonly buffer XS { float x_scale[]; };
layout(std430, binding = 2) readonly buffer XZ { int x_zp[]; };
layout(std430, binding = 3) readonly buffer W4 { uvec4 w4[]; };
layout(std430, binding = 4) readonly buffer S { float scales[]; };
layout(std430, binding = 5) readonly buffer Z { int zeros[]; };
layout(std430, binding = 6) readonly buffer Bias { float bias[]; };
layout(std430, binding = 7) writeonly buffer Out { float o[]; };
layout(std140, binding = 8) uniform XU { ivec4 xu[XU_VEC4]; };
layout(binding = 9) uniform usamplerBuffer wt;
layout(binding = 10) uniform usamplerBuffer xt;
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;

shared int part[PART];

int zero_of(uint idx) { return HAS_ZERO_POINT == 1 ? zeros[idx] : (1 << (WBITS - 1)); }

ivec4 xq4(uint i) {
  if (X_UBO == 1) return xu[i];
  if (X_TEXEL == 1) return ivec4(texelFetch(xt, int(i)));
  return xv[i];
}

uvec4 wq(uint i) {
  if (W_TEXEL == 1) return texelFetch(wt, int(i));
  return w4[i];
}

int hsum(ivec4 v) { return (v.x + v.y) + (v.z + v.w); }

// The fields of word v (int4: 8, as lo / hi ivec4s; int8: 4, as lo) minus z.
ivec4 lo4(uint v, int z) { return ivec4((uvec4(v) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - ivec4(z); }
ivec4 hi4(uint v, int z) { return ivec4((uvec4(v) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - ivec4(z); }
ivec4 b8(uint v, int z) { return ivec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - ivec4(z); }

#if PRODUCTS_F16 == 1
#define XT f16vec4
#define XCONV(v) f16vec4(v)
// sum over one int4 chunk of (field - z) * x in f16 products (exact, see above), f32 sums
int dot4(uvec4 q, int z, XT x0, XT x1, XT x2, XT x3, XT x4, XT x5, XT x6, XT x7) {
  vec4 a = vec4(f16vec4(lo4(q.x, z)) * x0) + vec4(f16vec4(hi4(q.x, z)) * x1);
  a += vec4(f16vec4(lo4(q.y, z)) * x2) + vec4(f16vec4(hi4(q.y, z)) * x3);
  a += vec4(f16vec4(lo4(q.z, z)) * x4) + vec4(f16vec4(hi4(q.z, z)) * x5);
  a += vec4(f16vec4(lo4(q.w, z)) * x6) + vec4(f16vec4(hi4(q.w, z)) * x7);
  return int((a.x + a.y) + (a.z + a.w));
}
#else
#define XT ivec4
#define XCONV(v) (v)
int dot4(uvec4 q, int z, XT x0, XT x1, XT x2, XT x3, XT x4, XT x5, XT x6, XT x7) {
  ivec4 a = lo4(q.x, z) * x0 + hi4(q.x, z) * x1 + lo4(q.y, z) * x2 + hi4(q.y, z) * x3;
  a += lo4(q.z, z) * x4 + hi4(q.z, z) * x5 + lo4(q.w, z) * x6 + hi4(q.w, z) * x7;
  return hsum(a);
}
#endif

int dot8(uvec4 q, int z, ivec4 x0, ivec4 x1, ivec4 x2, ivec4 x3) {
  return hsum(b8(q.x, z) * x0 + b8(q.y, z) * x1 + b8(q.z, z) * x2 + b8(q.w, z) * x3);
}

// The exact int32 dot product of chunk c of weight row n with x (x - x_zp as xa..: int4
// takes 8 XT, int8 the first 4 ivec4 of xi..).
#define DOT(n, c)                                                                      \
  (WBITS == 4                                                                          \
       ? dot4(wq((n) * cpr + (c)), zero_of((n) * p.ngroups + ((c) * VPC) / uint(GROUP_SIZE)), \
              xa0, xa1, xa2, xa3, xa4, xa5, xa6, xa7)                                  \
       : dot8(wq((n) * cpr + (c)), zero_of((n) * p.ngroups + ((c) * VPC) / uint(GROUP_SIZE)), \
              xi0, xi1, xi2, xi3))

// x chunk c minus the zero point: xi0..xi7 (ivec4), xa0..xa7 (XT, int4 only)
#define XLOAD(c)                                                                       \
  uint xc = (c) * (VPC / 4u);                                                          \
  ivec4 xi0 = xq4(xc) - zx, xi1 = xq4(xc + 1u) - zx, xi2 = xq4(xc + 2u) - zx;          \
  ivec4 xi3 = xq4(xc + 3u) - zx;                                                       \
  ivec4 xi4 = ivec4(0), xi5 = ivec4(0), xi6 = ivec4(0), xi7 = ivec4(0);                \
  if (WBITS == 4) {                                                                    \
    xi4 = xq4(xc + 4u) - zx;                                                           \
    xi5 = xq4(xc + 5u) - zx;                                                           \
    xi6 = xq4(xc + 6u) - zx;                                                           \
    xi7 = xq4(xc + 7u) - zx;                                                           \
  }                                                                                    \
  XT xa0 = XCONV(xi0), xa1 = XCONV(xi1), xa2 = XCONV(xi2), xa3 = XCONV(xi3);           \
  XT xa4 = XCONV(xi4), xa5 = XCONV(xi5), xa6 = XCONV(xi6), xa7 = XCONV(xi7);

bool group_ends(uint c, uint cpr) {
  return ((c + 1u) * VPC) % uint(GROUP_SIZE) == 0u || c + 1u == cpr;
}

// y (the folded sum) * x_scale (+ bias) into o[n], as the base stores it
void store(uint n, float y) {
  precise float v = y * x_scale[0];
  if (HAS_BIAS == 1) v = v + bias[n];
  o[n] = v;
}

// Row n alone, chunk after chunk in the base's order (a subgroup that cannot cooperate).
void serial_row(uint n, uint cpr, ivec4 zx) {
  int acc = 0;
  precise float y = 0.0;
  for (uint c = 0u; c < cpr; ++c) {
    XLOAD(c)
    acc += DOT(n, c);
    if (group_ends(c, cpr)) {
      precise float t = float(acc) * scales[n * p.ngroups + (c * VPC) / uint(GROUP_SIZE)];
      y = y + t;
      acc = 0;
    }
  }
  store(n, y);
}

void main() {
  uint cpr = p.row_words / 4u;
  uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint R = min(S, RMAX);
  ivec4 zx = ivec4(x_zp[0]);
  uint lanes = subgroupAdd(1u);  // uniform control flow: every invocation of the subgroup
  bool full = COOP_SERIAL == 0 && lanes == S;
  bool fits = full && (sg + 1u) * R * (S + 1u) <= PART;
  bool whole = uint(GROUP_SIZE) >= cpr * VPC;  // one group per row: no fold
  uint slot = (sg * R) * (S + 1u);
  for (uint base = gl_WorkGroupID.x * ROWS; base < p.N; base += gl_NumWorkGroups.x * ROWS) {
    for (uint rb = base + sg * R; rb < base + ROWS && rb < p.N; rb += gl_NumSubgroups * R) {
      if (full && whole) {  // two rows at a time: int32 lane sums, subgroupAdd
        for (uint r = 0u; r < R; r += 2u) {
          uint n0 = min(rb + r, p.N - 1u), n1 = min(rb + r + 1u, p.N - 1u);
          int a0 = 0, a1 = 0;
          for (uint c = lane; c < cpr; c += S) {
            XLOAD(c)
            a0 += DOT(n0, c);
            a1 += DOT(n1, c);
          }
          int t0 = subgroupAdd(a0), t1 = subgroupAdd(a1);
          if (subgroupElect()) {
            for (uint i = 0u; i < 2u; ++i) {
              uint n = rb + r + i;
              if (n < p.N && r + i < R) {
                precise float y = 0.0;
                precise float t = float(i == 0u ? t0 : t1) * scales[n * p.ngroups];
                y = y + t;
                store(n, y);
              }
            }
          }
        }
      } else if (fits) {  // chunk sums through shared memory, folded by lane r
        uint nr = min(rb + lane, p.N - 1u);
        int acc = 0;
        precise float y = 0.0;
        for (uint c0 = 0u; c0 < cpr; c0 += S) {
          uint c = c0 + lane;
          if (c < cpr) {
            XLOAD(c)
            for (uint r = 0u; r < R; ++r) part[slot + r * (S + 1u) + lane] = DOT(min(rb + r, p.N - 1u), c);
          }
          subgroupMemoryBarrierShared();
          subgroupBarrier();
          if (lane < R) {
            uint end = min(S, cpr - c0);
            for (uint i = 0u; i < end; ++i) {
              acc += part[slot + lane * (S + 1u) + i];
              if (group_ends(c0 + i, cpr)) {
                precise float t = float(acc) * scales[nr * p.ngroups + ((c0 + i) * VPC) / uint(GROUP_SIZE)];
                y = y + t;
                acc = 0;
              }
            }
          }
          subgroupBarrier();  // the next round overwrites part
        }
        if (lane < R && rb + lane < p.N) store(rb + lane, y);
      } else {  // the rows of the block one per lane present
        uint li = subgroupExclusiveAdd(1u);
        for (uint r = li; r < R; r += lanes) {
          if (rb + r < p.N) serial_row(rb + r, cpr, zx);
        }
      }
    }
  }
}
