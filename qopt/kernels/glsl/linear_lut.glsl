#version 450
// LUT (palettized) weight linear: W[n, k] = cb[((n / BN) * GK + k / BK) * L + code[n, k]],
// out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]).
// codes: FBITS-bit fields (FBITS = nbits rounded up to 1/2/4/8) packed by
// packing.pack_bits (lo = 0), row_words per row; codebook f32 [N/BN, K/BK, L]
// (qfused's [.., .., 2^nbits, 1] flattened); codes >= L (never packed, but FBITS may hold
// them) read entry L - 1.
// Tiling as linear_qw's gemm_tile: each invocation owns NPW output columns (weight rows,
// clamped to N - 1) x MT rows of x (clamped to M - 1) and walks K one code word (VPW
// codes) at a time: each code is looked up once and used for the MT rows, each x value
// once for the NPW weight rows. Accumulators are named scalars a<r><mm> (no private
// arrays: lavapipe keeps dynamically indexed ones in memory); the palette index k / BK is
// computed once per word when BK is a multiple of VPW. Sums per output in k order.
// Paths (chosen per dispatch in main; all give the same value for each code, so the same
// sums bit for bit):
// - tile_v4 (BK a multiple of VPW, K % 4 == 0; with CB_UBO, or when the palette path does
//   not apply): x read as vec4s (from the uniform block XU when X_UBO), each code's entry
//   looked up with `entry` (from the uniform block CBU when CB_UBO). On lavapipe a
//   uniform load at a loop-variant offset is one vector gather and a storage load a loop
//   over the lanes (3.7-3.8x faster than the select tree at M = 1 on the Llama shapes);
//   for palettes shared by the rows (torchao's [-1, 16] blocks) the lookup is a
//   lane-varying index into a small table every lane reads: cached on a GPU (where
//   constant caches serialize divergent indices, CB_UBO 0 reads the storage buffer).
// - tile_palette (no CB_UBO; FBITS <= 4, BK a multiple of VPW, K a multiple of BK): walks
//   K one palette block at a time: at its start each weight row's 2^FBITS entries (entry
//   l = cb[pb + min(l, L - 1)]) are loaded into named registers, and each code picks its
//   entry with a select tree on its bits (`pick`) instead of a per-code storage load.
// - tile (otherwise: K tails, palette blocks narrower than a word): scalar x loads and a
//   storage lookup per code.
// Measured at M = 1 and not taken (lavapipe on a 2-core AMD EPYC, AVX2; codebook4 blocks
// [-1, 16] at 2816 x 1024, 1024 x 2816, 2048 x 2048; one lavapipe thread, interleaved
// CPU-time medians, a loaded machine): the palette lookup (tile_v4's uniform gather) is
// 20-40% of the time (an index in its place: 0.58-0.80x), the codes' storage loads ~25%,
// the rest the per-code index arithmetic and fma. A T-MAC table in shared memory (per
// workgroup and 32-column chunk, t[pair][c0 + 16 c1] = x[k] P[c0] + x[k+1] P[c1], one
// lookup per byte of codes) was 2.5-4x slower: llvmpipe's shared loads at lane-varying
// addresses and its shared stores are loops over the lanes. Built once per forward it
// needs its own dispatch and a view the lookups gather from (a uniform block of 64 KiB
// holds 64 column pairs; texel views are R32G32B32A32: four gathers per lookup). The
// codes through a texel view (four words per fetch; no clamp and tail tests for full
// palettes): 0.98-1.02x, with 2-10x the SPIR-V. Reading the codebook's vec4 component
// statically instead of by index: 0.93-1.03x (the dynamic component is no extra cost).
// A palette shared by the invocation's rows (torchao's [-1, 16]) loaded once per block
// from the uniform block (16 gathers per 16 codes, not one per code and row) with each
// code's entry picked by `pick`'s select tree: 1.3-1.5x slower at M = 1 (NPW 8 and 4) and
// at M = 64 (NPW 4 and 8, MT 8, X_TEXEL) on 2048 x 2048, 2048 x 5632, 5632 x 2048: 15
// blends per code and row cost more than one gather (2026-12-08, AMD EPYC AVX2).
// CB_UBO / X_UBO 0: the storage buffers (bindings 5 and 6 are still bound, to at most
// 16 * CBU_VEC4 / 16 * XU_VEC4 bytes of the codebook and of x, and not read); the runtime
// turns a block off on a device whose maxUniformBufferRange is smaller.
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int FBITS = 4;
layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int WG = 64;
layout(constant_id = 3) const int NPW = 4;
layout(constant_id = 4) const int MT = 1;
layout(constant_id = 5) const int CB_UBO = 0;
layout(constant_id = 6) const int CBU_VEC4 = 1;
layout(constant_id = 7) const int X_UBO = 0;
layout(constant_id = 8) const int XU_VEC4 = 1;
// X_TEXEL 1 (and X_UBO 0): tile_v4 reads x's vec4s from the uniform texel buffer xt
// (binding 7, texel i = xv[i] bit for bit), as linear_qw.glsl's X_TEXEL (an x too large
// for the uniform block); X_TEXEL 0: storage reads (xt bound, not read). The same bits.
layout(constant_id = 9) const int X_TEXEL = 0;
const int VPW = 32 / FBITS;
const uint MASK = (1u << FBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 xv[]; };  // the same buffer, 16-byte view
layout(std430, binding = 1) readonly buffer C { uint codes[]; };
layout(std430, binding = 2) readonly buffer CB { float cb[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(std430, binding = 4) writeonly buffer Out { float o[]; };
layout(std140, binding = 5) uniform CBU { vec4 cbu[CBU_VEC4]; };
layout(std140, binding = 6) uniform XU { vec4 xu[XU_VEC4]; };
layout(binding = 7) uniform usamplerBuffer xt;
layout(push_constant) uniform P {
  uint M; uint N; uint K; uint row_words; uint BN; uint BK; uint GK; uint L;
} p;

void store_out(uint m, uint n, float a) {
  if (m < p.M && n < p.N) o[m * p.N + n] = a + (HAS_BIAS == 1 ? bias[n] : 0.0);
}

// codebook entry i (cb[i]): from the uniform block when CB_UBO
float entry(uint i) {
  if (CB_UBO == 1) return cbu[i >> 2u][i & 3u];
  return cb[i];
}

// vec4 i of x: from the uniform block when X_UBO
vec4 xq(uint i) {
  if (X_UBO == 1) return xu[i];
  if (X_TEXEL == 1) return uintBitsToFloat(texelFetch(xt, int(i)));
  return xv[i];
}

// weight of row r for code e of the current word (palette row pb##r: (cbrow + k / BK) * L)
#define LOOK(r, e)                                                                 \
  float v##r = 0.0;                                                                \
  if (NPW > r) v##r = cb[pb##r + min((q##r >> uint(FBITS * (e))) & MASK, p.L - 1u)];
#define MAC(r, mm) if (NPW > r) a##r##mm = fma(v##r, xs, a##r##mm);
#define XROW(mm, k)                                                                \
  if (MT > mm) {                                                                   \
    float xs = x[xr##mm + (k)];                                                    \
    MAC(0, mm) MAC(1, mm) MAC(2, mm) MAC(3, mm) MAC(4, mm) MAC(5, mm) MAC(6, mm)   \
    MAC(7, mm)                                                                     \
  }
// code e of the word (k = k0 + e); tail: only k < K (x has no column k >= K)
#define CODE(e)                                                                    \
  if (!tail || k0 + uint(e) < p.K) {                                               \
    if (per_code) {                                                                \
      uint kb = (k0 + uint(e)) / p.BK;                                             \
      PB(0, kb) PB(1, kb) PB(2, kb) PB(3, kb) PB(4, kb) PB(5, kb) PB(6, kb) PB(7, kb) \
    }                                                                              \
    LOOK(0, e) LOOK(1, e) LOOK(2, e) LOOK(3, e)                                    \
    LOOK(4, e) LOOK(5, e) LOOK(6, e) LOOK(7, e)                                    \
    uint kk = k0 + uint(e);                                                        \
    XROW(0, kk) XROW(1, kk) XROW(2, kk) XROW(3, kk)                                \
    XROW(4, kk) XROW(5, kk) XROW(6, kk) XROW(7, kk)                                \
  }
#define PB(r, kb) pb##r = (cbrow##r + (kb)) * p.L;
#define ROWDECL(r)                                                                 \
  uint nr##r = min(n0 + uint(r), p.N - 1);                                         \
  uint cbrow##r = (nr##r / p.BN) * p.GK;                                           \
  uint pb##r = 0u;                                                                 \
  float a##r##0 = 0.0, a##r##1 = 0.0, a##r##2 = 0.0, a##r##3 = 0.0;                \
  float a##r##4 = 0.0, a##r##5 = 0.0, a##r##6 = 0.0, a##r##7 = 0.0;
#define ROWLOAD(r)                                                                 \
  uint q##r = 0u;                                                                  \
  if (NPW > r) q##r = codes[nr##r * p.row_words + wi];
#define XDECL(mm) uint xr##mm = min(m0 + uint(mm), p.M - 1) * p.K;
#define STORE(r, mm) if (NPW > r && MT > mm) store_out(m0 + uint(mm), n0 + uint(r), a##r##mm);
#define STOREROW(r)                                                                \
  STORE(r, 0) STORE(r, 1) STORE(r, 2) STORE(r, 3) STORE(r, 4) STORE(r, 5) STORE(r, 6) \
  STORE(r, 7)

// per_code: the palette index is computed per code (BK not a multiple of VPW)
void tile(uint m0, uint n0, bool per_code) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  XDECL(0) XDECL(1) XDECL(2) XDECL(3) XDECL(4) XDECL(5) XDECL(6) XDECL(7)
  uint words = (p.K + uint(VPW) - 1u) / uint(VPW);
  for (uint wi = 0; wi < words; ++wi) {
    uint k0 = wi * uint(VPW);
    bool tail = k0 + uint(VPW) > p.K;
    if (!per_code) {
      uint kb = k0 / p.BK;
      PB(0, kb) PB(1, kb) PB(2, kb) PB(3, kb) PB(4, kb) PB(5, kb) PB(6, kb) PB(7, kb)
    }
    ROWLOAD(0) ROWLOAD(1) ROWLOAD(2) ROWLOAD(3) ROWLOAD(4) ROWLOAD(5) ROWLOAD(6) ROWLOAD(7)
    for (int e = 0; e < VPW; ++e) CODE(e)  // a loop, not 32 copies: a small shader
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7)
}

// entry c (< 2^FBITS) of the palette p0.. (a select tree on the bits of c)
float pick(uint c, float p0, float p1, float p2, float p3, float p4, float p5, float p6,
           float p7, float p8, float p9, float p10, float p11, float p12, float p13,
           float p14, float p15) {
  bvec4 b = notEqual(uvec4(c) & uvec4(1u, 2u, 4u, 8u), uvec4(0u));
  float q0 = mix(p0, p1, b.x), q1 = mix(p2, p3, b.x);
  float q2 = FBITS > 2 ? mix(p4, p5, b.x) : 0.0, q3 = FBITS > 2 ? mix(p6, p7, b.x) : 0.0;
  float q4 = FBITS > 3 ? mix(p8, p9, b.x) : 0.0, q5 = FBITS > 3 ? mix(p10, p11, b.x) : 0.0;
  float q6 = FBITS > 3 ? mix(p12, p13, b.x) : 0.0, q7 = FBITS > 3 ? mix(p14, p15, b.x) : 0.0;
  if (FBITS == 1) return q0;
  float s0 = mix(q0, q1, b.y);
  if (FBITS == 2) return s0;
  float s1 = mix(q2, q3, b.y);
  float t0 = mix(s0, s1, b.z);
  if (FBITS == 3) return t0;
  return mix(t0, mix(mix(q4, q5, b.y), mix(q6, q7, b.y), b.z), b.w);
}

#define PE(r, l) c##r##_##l = uint(l) < (1u << FBITS) ? cb[pb##r + min(uint(l), p.L - 1u)] : 0.0;
#define PALDECL(r)                                                                 \
  float c##r##_0 = 0.0, c##r##_1 = 0.0, c##r##_2 = 0.0, c##r##_3 = 0.0;            \
  float c##r##_4 = 0.0, c##r##_5 = 0.0, c##r##_6 = 0.0, c##r##_7 = 0.0;            \
  float c##r##_8 = 0.0, c##r##_9 = 0.0, c##r##_10 = 0.0, c##r##_11 = 0.0;          \
  float c##r##_12 = 0.0, c##r##_13 = 0.0, c##r##_14 = 0.0, c##r##_15 = 0.0;
#define PALLOAD(r)                                                                 \
  if (NPW > r) {                                                                   \
    PE(r, 0) PE(r, 1) PE(r, 2) PE(r, 3) PE(r, 4) PE(r, 5) PE(r, 6) PE(r, 7)        \
    PE(r, 8) PE(r, 9) PE(r, 10) PE(r, 11) PE(r, 12) PE(r, 13) PE(r, 14) PE(r, 15)  \
  }
#define PICK(r, e)                                                                 \
  float v##r = 0.0;                                                                \
  if (NPW > r)                                                                     \
    v##r = pick((q##r >> uint(FBITS * (e))) & MASK, c##r##_0, c##r##_1, c##r##_2,  \
                c##r##_3, c##r##_4, c##r##_5, c##r##_6, c##r##_7, c##r##_8,        \
                c##r##_9, c##r##_10, c##r##_11, c##r##_12, c##r##_13, c##r##_14,   \
                c##r##_15);
#define PCODE(e)                                                                   \
  {                                                                                \
    PICK(0, e) PICK(1, e) PICK(2, e) PICK(3, e) PICK(4, e) PICK(5, e) PICK(6, e)   \
    PICK(7, e)                                                                     \
    uint kk = k0 + uint(e);                                                        \
    XROW(0, kk) XROW(1, kk) XROW(2, kk) XROW(3, kk)                                \
    XROW(4, kk) XROW(5, kk) XROW(6, kk) XROW(7, kk)                                \
  }

void tile_palette(uint m0, uint n0) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  XDECL(0) XDECL(1) XDECL(2) XDECL(3) XDECL(4) XDECL(5) XDECL(6) XDECL(7)
  PALDECL(0) PALDECL(1) PALDECL(2) PALDECL(3) PALDECL(4) PALDECL(5) PALDECL(6) PALDECL(7)
  uint words = p.K / uint(VPW), wpb = p.BK / uint(VPW);  // K = blocks * BK, BK = wpb * VPW
  for (uint kb = 0, w0 = 0; w0 < words; ++kb, w0 += wpb) {  // palette blocks along K
    // the palettes loaded here, not under a branch in the word loop: lavapipe runs a
    // branch's loads whatever its condition
    PB(0, kb) PB(1, kb) PB(2, kb) PB(3, kb) PB(4, kb) PB(5, kb) PB(6, kb) PB(7, kb)
    PALLOAD(0) PALLOAD(1) PALLOAD(2) PALLOAD(3) PALLOAD(4) PALLOAD(5) PALLOAD(6) PALLOAD(7)
    for (uint wi = w0; wi < w0 + wpb; ++wi) {
      uint k0 = wi * uint(VPW);
      ROWLOAD(0) ROWLOAD(1) ROWLOAD(2) ROWLOAD(3) ROWLOAD(4) ROWLOAD(5) ROWLOAD(6) ROWLOAD(7)
      for (int e = 0; e < VPW; ++e) PCODE(e)  // no K tail: K is a multiple of BK and VPW
    }
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7)
}

#define LOOKV(r, e)                                                                \
  float v##r = 0.0;                                                                \
  if (NPW > r) v##r = entry(pb##r + min((q##r >> uint(FBITS * (e))) & MASK, p.L - 1u));
#define MACV(r, mm, c) if (NPW > r) a##r##mm = fma(v##r, X##mm.c, a##r##mm);
#define XROWV(mm, c)                                                               \
  if (MT > mm) {                                                                   \
    MACV(0, mm, c) MACV(1, mm, c) MACV(2, mm, c) MACV(3, mm, c) MACV(4, mm, c)     \
    MACV(5, mm, c) MACV(6, mm, c) MACV(7, mm, c)                                   \
  }
#define CODEV(e, c)                                                                \
  {                                                                                \
    LOOKV(0, e) LOOKV(1, e) LOOKV(2, e) LOOKV(3, e)                                \
    LOOKV(4, e) LOOKV(5, e) LOOKV(6, e) LOOKV(7, e)                                \
    XROWV(0, c) XROWV(1, c) XROWV(2, c) XROWV(3, c)                                \
    XROWV(4, c) XROWV(5, c) XROWV(6, c) XROWV(7, c)                                \
  }
#define XV(mm) vec4 X##mm = vec4(0.0); if (MT > mm) X##mm = xq(xr##mm + (k0 >> 2) + uint(g));
#define XDECLV(mm) uint xr##mm = min(m0 + uint(mm), p.M - 1) * (p.K >> 2);

void tile_v4(uint m0, uint n0) {
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  XDECLV(0) XDECLV(1) XDECLV(2) XDECLV(3) XDECLV(4) XDECLV(5) XDECLV(6) XDECLV(7)
  uint words = (p.K + uint(VPW) - 1u) / uint(VPW);
  for (uint wi = 0; wi < words; ++wi) {
    uint k0 = wi * uint(VPW);
    uint kb = k0 / p.BK;
    PB(0, kb) PB(1, kb) PB(2, kb) PB(3, kb) PB(4, kb) PB(5, kb) PB(6, kb) PB(7, kb)
    ROWLOAD(0) ROWLOAD(1) ROWLOAD(2) ROWLOAD(3) ROWLOAD(4) ROWLOAD(5) ROWLOAD(6) ROWLOAD(7)
    // groups of 4 codes in this word: all of them unless K is not a multiple of BK (push
    // values no codebook has, but the kernel stays inside x for them)
    uint ng = min(uint(VPW), p.K - k0) >> 2;
    for (int g = 0; g < VPW / 4; ++g) {
      if (uint(g) >= ng) break;
      XV(0) XV(1) XV(2) XV(3) XV(4) XV(5) XV(6) XV(7)
      CODEV(4 * g, x) CODEV(4 * g + 1, y) CODEV(4 * g + 2, z) CODEV(4 * g + 3, w)
    }
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7)
}

void main() {
  bool per_code = p.BK % uint(VPW) != 0u;
  bool palette = FBITS <= 4 && !per_code && p.K % p.BK == 0u;  // whole palette blocks
  bool vec4s = !per_code && p.K % 4u == 0u && (CB_UBO == 1 || !palette);
  // the fast paths once per invocation, outside any loop, when the grid covers M x N (it
  // does unless group_count capped it at MAX_WORKGROUPS; then the grid-stride loops below
  // run `tile`, the same bits), as linear_qw's gemm_tile: lavapipe runs a loop's body
  // under the loop's execution mask (each load and store a masked per-lane loop). Rows
  // and columns past M / N are clamped in the tiles (reads) and skipped (stores), so a
  // larger grid is safe too. One call site per tile function: lavapipe inlines each call
  // (here 0.7-0.9x the creation time of the old four call sites).
  bool covers = gl_NumWorkGroups.x * uint(WG * NPW) >= p.N && gl_NumWorkGroups.y * uint(MT) >= p.M;
  if (covers && (vec4s || palette)) {
    uint m0 = gl_WorkGroupID.y * uint(MT);
    uint n0 = gl_WorkGroupID.x * uint(WG * NPW) + gl_LocalInvocationID.x * uint(NPW);
    if (vec4s) tile_v4(m0, n0);
    else tile_palette(m0, n0);
    return;
  }
  for (uint m0 = gl_WorkGroupID.y * uint(MT); m0 < p.M; m0 += gl_NumWorkGroups.y * uint(MT)) {
    for (uint nb = gl_WorkGroupID.x * uint(WG * NPW); nb < p.N;
         nb += gl_NumWorkGroups.x * uint(WG * NPW)) {
      tile(m0, nb + gl_LocalInvocationID.x * uint(NPW), per_code);
    }
  }
}
