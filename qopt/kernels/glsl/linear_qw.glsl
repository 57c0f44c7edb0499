#version 450
#extension GL_EXT_control_flow_attributes : require
// Weight-only quantized linear (linear_q4gsw / linear_q4gaw / linear_q8csw / ...):
//   out[m, n] = sum_k x[m, k] * (f(w[n, k]) - z[n, k / G]) * s[n, k / G] (+ bias[n])
// x f32 [M, K]; w u32 [N, row_words]: WBITS-bit unsigned fields, 32/WBITS per
// word, element k of row n in word n*row_words + k/(32/WBITS) at bit WBITS*(k%(32/WBITS))
// (even element low), rows padded with zero fields to a multiple of 128 bits;
// s f32 [N, ngroups] and z i32 [N, ngroups] (read only if HAS_ZERO_POINT, else
// z = 2^(WBITS-1)) with ngroups = ceil(K / G); bias f32 [N] (read if HAS_BIAS).
// Tiling: each invocation owns NPW output columns (rows of w) x MT rows of x and walks K
// in 128-bit chunks (one uvec4 load = 32 int4 / 16 int8 weights, decoded once and used
// for the MT rows); the x values of a chunk are the same for every invocation of the
// workgroup (uniform loads: cached on GPUs; lavapipe 22 still loads them lane by lane from
// a storage buffer, with one vector gather from the uniform block of X_UBO below).
// No shared memory and no barriers. workgroups = (ceil(N / (WG*NPW)), ceil(M / MT), 1).
// gemv_sym (NPW <= 4, MT 1; the spec defaults NPW 4, WG 64 are ~4x faster than NPW 1) or
// gemm_tile (MT > 1 or NPW > 4: each weight word decoded once for MT rows). lavapipe runs
// 8 invocations as the lanes of one SIMD vector and every buffer load component as a
// per-lane loop (uniform address or not), so the cost follows the load components per
// invocation: per 128-bit chunk NPW * 5 for the weights and scales and MT * VPC for x
// (VPC / 4 vec4 loads per row of x), against NPW * MT * VPC multiply-adds. The x loads
// dominate unless NPW is large: convert-to-vkc picks gemm_tile with NPW 16, WG 32 and MT
// up to 8 (`qopt.kernels.qlinear.linear_tile`; NPW 16 measured 1.2-1.8x faster than NPW 8
// at M = 16..64, NPW 32 no faster: its accumulators spill), MT 1 at M = 1, with W_TEXEL.
layout(local_size_x_id = 6) in;
layout(constant_id = 0) const int WBITS = 4;
layout(constant_id = 1) const int GROUP_SIZE = 32;
layout(constant_id = 2) const int HAS_ZERO_POINT = 0;
layout(constant_id = 3) const int HAS_BIAS = 0;
layout(constant_id = 4) const int NPW = 4;
layout(constant_id = 5) const int MT = 1;
layout(constant_id = 6) const int WG = 64;
// X_UBO 1: gemv_sym / gemm_tile read x's vec4s from the uniform block XU (the same buffer
// bound as a uniform buffer at binding 6, its first 16 * XU_VEC4 bytes; XU_VEC4 >= M*K/4):
// lavapipe 22 compiles a uniform load at a loop-variant offset to one vector gather where
// a storage load is a per-lane loop per component (GPUs read uniform blocks through their
// constant cache). X_UBO 0:
// the storage view xv (binding 6 is still bound, to at most 16 * XU_VEC4 bytes of x, and
// not read). The other paths always read the storage views.
layout(constant_id = 7) const int X_UBO = 0;
layout(constant_id = 8) const int XU_VEC4 = 1;
// W_TEXEL 1: gemv_sym / gemm_tile fetch the weight chunks w4[i] from the uniform texel
// buffer wt (binding 7: the same buffer viewed as R32G32B32A32_UINT texels, texel i = w4[i];
// `TexelView`): lavapipe 22 compiles a texel fetch through its sampler code (a gather per
// channel) where a storage load is a per-lane loop with a bounds check per component; GPUs
// read it through the texture cache. The same words feed the same arithmetic: W_TEXEL 0
// and 1 give the same bits. W_TEXEL 0: storage loads (wt is still bound, not read).
layout(constant_id = 9) const int W_TEXEL = 0;
// X_TEXEL 1 (and X_UBO 0): gemv_sym / gemm_tile read x's vec4s from the uniform texel
// buffer xt (binding 8: x viewed as R32G32B32A32_UINT texels, texel i = xv[i] bit for
// bit; `TexelView`): for an x too large for the uniform block (a prefill's M * K), on
// lavapipe one gather per channel where a storage load of the vec4 every lane of the
// workgroup reads is a per-lane loop per component (8x the loads: 1.2-1.3x faster gemm_tile
// at M = 64, benchmarks/shapes.py); GPUs read it through the texture cache. The same bits
// as the storage reads; X_TEXEL 0: storage reads (xt is still bound, not read).
layout(constant_id = 10) const int X_TEXEL = 0;
const int VPW = 32 / WBITS;        // values per word
const int VPC = 4 * VPW;           // values per 128-bit chunk
const uint MASK = (1u << WBITS) - 1u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 xv[]; };  // the same buffer, 16-byte view
layout(std430, binding = 1) readonly buffer Wq { uvec4 w4[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std140, binding = 6) uniform XU { vec4 xu[XU_VEC4]; };
layout(binding = 7) uniform usamplerBuffer wt;
layout(binding = 8) uniform usamplerBuffer xt;
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;


float zero_of(uint idx) {
  return HAS_ZERO_POINT == 1 ? float(zeros[idx]) : float(1 << (WBITS - 1));
}

vec4 field4(uint word, int e) {
  uvec4 sh = uvec4(uint(WBITS * e)) + uvec4(0u, uint(WBITS), uint(2 * WBITS), uint(3 * WBITS));
  return vec4((uvec4(word) >> sh) & uvec4(MASK));
}

float xval(uint base, uint k) { return k < p.K ? x[base + k] : 0.0; }

vec4 x4(uint k) { return xv[k >> 2]; }  // k % 4 == 0 (fast path requires K % 4 == 0)

// vec4 i of x for gemv_sym / gemm_tile: from the uniform block when X_UBO (see above)
vec4 xq(uint i) {
  if (X_UBO == 1) return xu[i];
  if (X_TEXEL == 1) return uintBitsToFloat(texelFetch(xt, int(i)));
  return xv[i];
}

// weight chunk i of gemv_sym / gemm_tile: from the texel view when W_TEXEL
uvec4 wq(uint i) {
  if (W_TEXEL == 1) return texelFetch(wt, int(i));
  return w4[i];
}

// sum over one full 128-bit chunk of (field - z) * x[xb + i] (no arrays: stays in registers)
float chunk_dot(uvec4 q, float z, uint xb) {
  float d = 0.0;
  for (int j = 0; j < 4; ++j) {
    uint wd = q[j];
    uint kb = xb + uint(j * VPW);
    if (WBITS == 4) {
      vec4 lo = vec4((uvec4(wd) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z;
      vec4 hi = vec4((uvec4(wd) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z;
      d += dot(lo, x4(kb)) + dot(hi, x4(kb + 4u));
    } else if (WBITS == 8) {
      d += dot(vec4((uvec4(wd) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z, x4(kb));
    } else {
      for (int e = 0; e < VPW; e += 4) d += dot(field4(wd, e) - z, x4(kb + uint(e)));
    }
  }
  return d;
}

// Register-tiled path (WBITS 4 or 8, MT 1, NPW <= 4, every chunk fast): NPW rows of w per
// invocation in explicit vec4 accumulators (4 independent fma chains each), the x chunk
// loaded once for all of them. Without a zero point, field - 2^(WBITS-1) is the field with
// its top bit flipped, read as signed: each field is shifted to the top of the word, masked
// and converted, giving the value times 2^(32-WBITS) exactly (a power of two, so products
// and sums round exactly as the unscaled ones would); UNSCALE divides it out at the end.
// (no && in spec-constant initializers: glslang emits a Phi there)
const int SYM = WBITS == 4 ? 1 : (WBITS == 8 ? 1 : 0);
#include "qw_chunk.glsl"

// NPW (<= 4) output columns n0.. of row m of x, every chunk on the fast path; explicit
// scalar/vec4 accumulators (no arrays). whole_row: one group per row (scale applied once).
void gemv_sym(uint m, uint n0, uint cpr, bool whole_row) {
  uint r0 = min(n0, p.N - 1), r1 = min(n0 + 1u, p.N - 1);
  uint r2 = min(n0 + 2u, p.N - 1), r3 = min(n0 + 3u, p.N - 1);
  vec4 p0 = vec4(0.0), p1 = vec4(0.0), p2 = vec4(0.0), p3 = vec4(0.0);
  float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  uint xb = m * (p.K / 4u);
  for (uint c = 0; c < cpr; ++c) {
    uint xi = xb + c * uint(VPC / 4);
    uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    p0 = sym_chunk(wq(r0 * cpr + c), xi, p0, zero_of(r0 * p.ngroups + g));
    if (NPW > 1) p1 = sym_chunk(wq(r1 * cpr + c), xi, p1, zero_of(r1 * p.ngroups + g));
    if (NPW > 2) p2 = sym_chunk(wq(r2 * cpr + c), xi, p2, zero_of(r2 * p.ngroups + g));
    if (NPW > 3) p3 = sym_chunk(wq(r3 * cpr + c), xi, p3, zero_of(r3 * p.ngroups + g));
    if (!whole_row) {
      a0 += scales[r0 * p.ngroups + g] * hsum(p0);
      p0 = vec4(0.0);
      if (NPW > 1) {
        a1 += scales[r1 * p.ngroups + g] * hsum(p1);
        p1 = vec4(0.0);
      }
      if (NPW > 2) {
        a2 += scales[r2 * p.ngroups + g] * hsum(p2);
        p2 = vec4(0.0);
      }
      if (NPW > 3) {
        a3 += scales[r3 * p.ngroups + g] * hsum(p3);
        p3 = vec4(0.0);
      }
    }
  }
  if (whole_row) {
    a0 = scales[r0] * hsum(p0);
    a1 = scales[r1] * hsum(p1);
    a2 = scales[r2] * hsum(p2);
    a3 = scales[r3] * hsum(p3);
  }
  for (int r = 0; r < NPW; ++r) {
    uint n = n0 + uint(r);
    if (n >= p.N) break;
    float a = r == 0 ? a0 : (r == 1 ? a1 : (r == 2 ? a2 : a3));
    o[m * p.N + n] = a * UNSCALE + (HAS_BIAS == 1 ? bias[n] : 0.0);
  }
}

// One 32-bit weight word, decoded (field - z) * s into f0 (and f1 for int4): the VPW
// weights of the word, pre-scaled. Without a zero point the field with its top bit flipped,
// shifted to the top of the word and shifted back arithmetically, is field - 2^(WBITS-1).
void decode_word(uint v, float s, float z, out vec4 f0, out vec4 f1) {
  if (HAS_ZERO_POINT == 1) {
    if (WBITS == 4) {
      f0 = (vec4((uvec4(v) >> uvec4(0u, 4u, 8u, 12u)) & 15u) - z) * s;
      f1 = (vec4((uvec4(v) >> uvec4(16u, 20u, 24u, 28u)) & 15u) - z) * s;
    } else {
      f0 = (vec4((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u) - z) * s;
      f1 = vec4(0.0);
    }
  } else {
    ivec4 t = ivec4(uvec4(v ^ FLIP));
    if (WBITS == 4) {
      f0 = vec4((t << ivec4(28, 24, 20, 16)) >> 28) * s;
      f1 = vec4((t << ivec4(12, 8, 4, 0)) >> 28) * s;
    } else {
      f0 = vec4((t << ivec4(24, 16, 8, 0)) >> 24) * s;
      f1 = vec4(0.0);
    }
  }
}

// a + the word's VPW weights (f0, f1: pre-scaled) times the matching x values (x0, x1):
// one scalar fma chain (scalar accumulators keep a tile of NPW*MT of them in registers)
float word_fma(vec4 f0, vec4 f1, vec4 x0, vec4 x1, float a) {
  a = fma(f0.x, x0.x, a);
  a = fma(f0.y, x0.y, a);
  a = fma(f0.z, x0.z, a);
  a = fma(f0.w, x0.w, a);
  if (WBITS == 4) {
    a = fma(f1.x, x1.x, a);
    a = fma(f1.y, x1.y, a);
    a = fma(f1.z, x1.z, a);
    a = fma(f1.w, x1.w, a);
  }
  return a;
}

void store_out(uint m, uint n, float a) {
  if (m < p.M && n < p.N) o[m * p.N + n] = a + (HAS_BIAS == 1 ? bias[n] : 0.0);
}

// gemm_tile: NPW (<= 16) weight rows x MT (<= 8) rows of x per invocation, every chunk on
// the fast path. Each weight word is loaded and decoded (scale folded in) once and used for
// the MT rows of x; each x vec4 is loaded once for the NPW weight rows. Accumulators are
// named scalars a<r><mm> under constant guards (macros below), so nothing is indexed
// dynamically (lavapipe keeps a dynamically indexed private array in memory). Weights
// are scaled per element, sums run per row in k order (not the interpreter's float64
// order: linear_qw is a tolerance kernel).
#define XV4(mm, i) xq(xr##mm + xc + (i))
#define DEC(r, j)                                                                  \
  vec4 f##r##a = vec4(0.0), f##r##b = vec4(0.0);                                   \
  if (NPW > r) decode_word(q##r[j], s##r, z##r, f##r##a, f##r##b);
#define MAC(r, mm)                                                                 \
  if (NPW > r) a##r##mm = word_fma(f##r##a, f##r##b, xa, xb, a##r##mm);
#define XROW(mm, j)                                                                \
  if (MT > mm) {                                                                   \
    vec4 xa, xb = vec4(0.0);                                                       \
    if (WBITS == 4) {                                                              \
      xa = XV4(mm, 2 * j);                                                         \
      xb = XV4(mm, 2 * j + 1);                                                     \
    } else {                                                                       \
      xa = XV4(mm, j);                                                             \
    }                                                                              \
    MAC(0, mm) MAC(1, mm) MAC(2, mm) MAC(3, mm)                                    \
    MAC(4, mm) MAC(5, mm) MAC(6, mm) MAC(7, mm)                                    \
    MAC(8, mm) MAC(9, mm) MAC(10, mm) MAC(11, mm)                                  \
    MAC(12, mm) MAC(13, mm) MAC(14, mm) MAC(15, mm)                                \
  }
#define WORD(j)                                                                    \
  {                                                                                \
    DEC(0, j) DEC(1, j) DEC(2, j) DEC(3, j) DEC(4, j) DEC(5, j) DEC(6, j) DEC(7, j)    \
    DEC(8, j) DEC(9, j) DEC(10, j) DEC(11, j) DEC(12, j) DEC(13, j) DEC(14, j)         \
    DEC(15, j)                                                                     \
    XROW(0, j) XROW(1, j) XROW(2, j) XROW(3, j) XROW(4, j) XROW(5, j) XROW(6, j)   \
    XROW(7, j)                                                                     \
  }
#define ROWDECL(r)                                                                 \
  uint nr##r = min(n0 + uint(r), p.N - 1);                                          \
  float a##r##0 = 0.0, a##r##1 = 0.0, a##r##2 = 0.0, a##r##3 = 0.0;                \
  float a##r##4 = 0.0, a##r##5 = 0.0, a##r##6 = 0.0, a##r##7 = 0.0;
#define ROWLOAD(r)                                                                 \
  uvec4 q##r = uvec4(0u);                                                          \
  float s##r = 0.0, z##r = 0.0;                                                    \
  if (NPW > r) {                                                                   \
    q##r = wq(nr##r * cpr + c);                                                     \
    s##r = scales[nr##r * p.ngroups + g];                                           \
    z##r = zero_of(nr##r * p.ngroups + g);                                          \
  }
#define XDECL(mm) uint xr##mm = min(m0 + uint(mm), p.M - 1) * kq;
#define STORE(r, mm) if (NPW > r && MT > mm) store_out(m0 + uint(mm), n0 + uint(r), a##r##mm);
#define STOREROW(r)                                                                \
  STORE(r, 0) STORE(r, 1) STORE(r, 2) STORE(r, 3) STORE(r, 4) STORE(r, 5) STORE(r, 6) \
  STORE(r, 7)

void gemm_tile(uint m0, uint n0, uint cpr, bool whole_row) {
  uint kq = p.K / 4u;
  ROWDECL(0) ROWDECL(1) ROWDECL(2) ROWDECL(3) ROWDECL(4) ROWDECL(5) ROWDECL(6) ROWDECL(7)
  ROWDECL(8) ROWDECL(9) ROWDECL(10) ROWDECL(11) ROWDECL(12) ROWDECL(13) ROWDECL(14)
  ROWDECL(15)
  XDECL(0) XDECL(1) XDECL(2) XDECL(3) XDECL(4) XDECL(5) XDECL(6) XDECL(7)
  for (uint c = 0; c < cpr; ++c) {
    uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    uint xc = c * uint(VPC / 4);
    ROWLOAD(0) ROWLOAD(1) ROWLOAD(2) ROWLOAD(3) ROWLOAD(4) ROWLOAD(5) ROWLOAD(6) ROWLOAD(7)
    ROWLOAD(8) ROWLOAD(9) ROWLOAD(10) ROWLOAD(11) ROWLOAD(12) ROWLOAD(13) ROWLOAD(14)
    ROWLOAD(15)
    // int4: the 4 words unrolled (no accumulators carried through a loop per word): on
    // lavapipe 0.80-0.93x the CPU time of the loop at M = 64 on five Llama shapes (512-2816
    // wide, interleaved medians); int8 (and linear_dq8ca) no faster: the loop, a smaller shader
    [[unroll]] for (int j = 0; j < 4; ++j) WORD(j)
  }
  STOREROW(0) STOREROW(1) STOREROW(2) STOREROW(3) STOREROW(4) STOREROW(5) STOREROW(6)
  STOREROW(7) STOREROW(8) STOREROW(9) STOREROW(10) STOREROW(11) STOREROW(12) STOREROW(13)
  STOREROW(14) STOREROW(15)
}

// gemm_tile's arithmetic with loops and an indexed accumulator array, for the grid-stride
// loops of a grid capped at MAX_WORKGROUPS (M > 65535 * MT, or N > 65535 * WG * NPW): every
// accumulator takes the same fma sequence as in gemm_tile (word j of chunk c, decoded with
// its scale folded in, times the same x vec4s, in k order), so the bits are gemm_tile's
// (tests/unit/kernels/test_linear_grid.py). Slow on lavapipe (the array lives in memory)
// and rarely run, but small: a second inlined copy of the unrolled gemm_tile doubled the
// time every linear_qw pipeline takes to create, whatever its path (0.7 -> 0.35 s on lavapipe).
void gemm_tile_rolled(uint m0, uint n0, uint cpr, bool whole_row) {
  uint kq = p.K / 4u;
  float acc[NPW * MT];
  for (int i = 0; i < NPW * MT; ++i) acc[i] = 0.0;
  for (uint c = 0; c < cpr; ++c) {
    uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    uint xc = c * uint(VPC / 4);
    for (int j = 0; j < 4; ++j) {
      for (int r = 0; r < NPW; ++r) {
        uint nr = min(n0 + uint(r), p.N - 1);
        vec4 fa = vec4(0.0), fb = vec4(0.0);
        decode_word(wq(nr * cpr + c)[j], scales[nr * p.ngroups + g],
                    zero_of(nr * p.ngroups + g), fa, fb);
        for (int mm = 0; mm < MT; ++mm) {
          uint xr = min(m0 + uint(mm), p.M - 1) * kq;
          vec4 xa, xb = vec4(0.0);
          if (WBITS == 4) {
            xa = xq(xr + xc + uint(2 * j));
            xb = xq(xr + xc + uint(2 * j + 1));
          } else {
            xa = xq(xr + xc + uint(j));
          }
          acc[r * MT + mm] = word_fma(fa, fb, xa, xb, acc[r * MT + mm]);
        }
      }
    }
  }
  for (int r = 0; r < NPW; ++r) {
    for (int mm = 0; mm < MT; ++mm) store_out(m0 + uint(mm), n0 + uint(r), acc[r * MT + mm]);
  }
}

void main() {
  uint cpr = p.row_words / 4;
  // chunks [0, nfast) lie inside one group and inside K: the fast path, no branch;
  // the rest (a K tail, or groups narrower than a chunk) take the per-element path.
  bool aligned = (GROUP_SIZE % VPC) == 0 || p.ngroups == 1;
  uint nfast = aligned && (p.K % 4u) == 0u ? p.K / uint(VPC) : 0u;
  // gemm_tile once per invocation, outside any loop, when the grid covers M x N (it does
  // unless group_count capped it at MAX_WORKGROUPS; then the grid-stride loops below run
  // gemm_tile_rolled, the same bits):
  // lavapipe runs a loop's body under the loop's execution mask (every store a masked
  // per-lane loop), measured 0.71-0.75x the CPU time of the same tile inside the loops at
  // K = 512 and 0.89x at K = 2048 (M = 64). Rows and columns past M / N are clamped in the
  // tile (reads) and skipped (stores), so a larger grid is safe too.
  bool covers = gl_NumWorkGroups.x * uint(WG * NPW) >= p.N && gl_NumWorkGroups.y * uint(MT) >= p.M;
  if (SYM == 1 && (MT > 1 || NPW > 4) && nfast == cpr && covers) {
    uint m0 = gl_WorkGroupID.y * uint(MT);
    uint n0 = gl_WorkGroupID.x * uint(WG * NPW) + gl_LocalInvocationID.x * uint(NPW);
    gemm_tile(m0, n0, cpr, p.ngroups == 1);
    return;
  }
  for (uint m0 = gl_WorkGroupID.y * MT; m0 < p.M; m0 += gl_NumWorkGroups.y * MT) {
    for (uint nb = gl_WorkGroupID.x * WG * NPW; nb < p.N; nb += gl_NumWorkGroups.x * WG * NPW) {
      uint n0 = nb + gl_LocalInvocationID.x * NPW;
      if (SYM == 1 && (MT > 1 || NPW > 4) && nfast == cpr) {
        gemm_tile_rolled(m0, n0, cpr, p.ngroups == 1);
        continue;
      }
      if (SYM == 1 && NPW <= 4 && MT == 1 && nfast == cpr) {
        if (m0 < p.M) {
          if (p.ngroups == 1) gemv_sym(m0, n0, cpr, true);
          else gemv_sym(m0, n0, cpr, false);
        }
        continue;
      }
      if (NPW == 1 && MT == 1) {  // GEMV: a scalar accumulator, nothing indexed
        uint n = min(n0, p.N - 1);
        uint xb = min(m0, p.M - 1) * p.K;
        float a1 = 0.0;
        for (uint c = 0; c < nfast; ++c) {
          uint gi = p.ngroups == 1 ? n : n * p.ngroups + (c * uint(VPC)) / uint(GROUP_SIZE);
          a1 += scales[gi] * chunk_dot(w4[n * cpr + c], zero_of(gi), xb + c * uint(VPC));
        }
        for (uint c = nfast; c < cpr; ++c) {
          uvec4 q = w4[n * cpr + c];
          for (int j = 0; j < 4; ++j) {
            for (int e = 0; e < VPW; ++e) {
              uint k = c * uint(VPC) + uint(j * VPW + e);
              uint gi = n * p.ngroups + min(k / GROUP_SIZE, p.ngroups - 1);
              float wv = (float((q[j] >> uint(WBITS * e)) & MASK) - zero_of(gi)) * scales[gi];
              a1 += wv * xval(xb, k);
            }
          }
        }
        if (n0 < p.N && m0 < p.M) o[m0 * p.N + n0] = a1 + (HAS_BIAS == 1 ? bias[n0] : 0.0);
        continue;
      }
      float acc[NPW * MT];
      for (int i = 0; i < NPW * MT; ++i) acc[i] = 0.0;
      for (uint c = 0; c < cpr; ++c) {
        uint k0 = c * VPC;
        uint g0 = min(k0 / GROUP_SIZE, p.ngroups - 1);
        bool fast = c < nfast;
        for (int r = 0; r < NPW; ++r) {
          uint n = min(n0 + r, p.N - 1);
          uvec4 q = w4[n * cpr + c];
          if (fast) {
            uint gi = n * p.ngroups + g0;
            float s = scales[gi];
            float z = zero_of(gi);
            for (int mm = 0; mm < MT; ++mm) {
              uint xb = min(m0 + mm, p.M - 1) * p.K + k0;
              acc[r * MT + mm] += s * chunk_dot(q, z, xb);
            }
          } else {
            for (int j = 0; j < 4; ++j) {
              for (int e = 0; e < VPW; ++e) {
                uint k = k0 + uint(j * VPW + e);
                uint gi = n * p.ngroups + min(k / GROUP_SIZE, p.ngroups - 1);
                float wv = (float((q[j] >> uint(WBITS * e)) & MASK) - zero_of(gi)) * scales[gi];
                for (int mm = 0; mm < MT; ++mm) {
                  uint xb = min(m0 + mm, p.M - 1) * p.K;
                  acc[r * MT + mm] += wv * xval(xb, k);
                }
              }
            }
          }
        }
      }
      for (int r = 0; r < NPW; ++r) {
        uint n = n0 + r;
        if (n >= p.N) break;
        float b = HAS_BIAS == 1 ? bias[n] : 0.0;
        for (int mm = 0; mm < MT; ++mm) {
          uint m = m0 + mm;
          if (m < p.M) o[m * p.N + n] = acc[r * MT + mm] + b;
        }
      }
    }
  }
}
