#version 450
// Shared-memory tiled GEMM variant of linear_qw for prefill (`qopt.kernels.variants`,
// "smem_gemm"; the rules: `qopt.kernels.coop`): a workgroup of 64 invocations owns a tile of
// BM rows of x by BN weight rows (output columns). Per 128-bit weight chunk c (VPC values of
// k) it stages the tile's x values and the tile's weights, decoded and scaled once (the
// base's decode_word), in shared memory, then each invocation adds a TM x TN register
// micro-tile from there, k in order. Each weight is decoded once per BM rows of x (the base:
// once per MT rows in each invocation), each x value read once per workgroup from the
// buffer; on a GPU the staging loads are coalesced (adjacent invocations, adjacent words).
// Every output is the base's fma chain: the same decoded weight times the same x value
// added in the same k order, so the bits are the base gemm_tile's. Picked at load for a
// dispatch with M > 1 that the base runs through gemm_tile (WBITS 4 or 8, every chunk inside
// one group and inside K), on a device with the shared memory below; preferred on GPUs.
// The same bindings, push and specialization constants (constant ids) as linear_qw.glsl
// (NPW, MT, WG not read). workgroups = (ceil(N / BN), ceil(M / BM), 1). Reads: x vec4s of
// rows < M inside K (rows clamped to M - 1), weight chunks n * cpr + c and scales / zeros
// [n * ngroups + g] for n < N (clamped to N - 1), bias[n]: inside the base's extents.
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
const int VPW = 32 / WBITS;        // values per word
const int VPC = 4 * VPW;           // values per 128-bit chunk
const uint BM = 32u, BN = 32u;     // tile: rows of x, weight rows (`coop.QW_SMEM_TILE`)
const uint TM = 4u, TN = 4u;       // micro-tile per invocation (8 x 8 invocations)
const uint STRIDE = 33u;           // shared row stride (32 values of k + 1: no bank conflicts)
layout(std430, binding = 0) readonly buffer X4 { vec4 xv[]; };
layout(std430, binding = 1) readonly buffer Wq { uvec4 w4[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std140, binding = 6) uniform XU { vec4 xu[XU_VEC4]; };
layout(binding = 7) uniform usamplerBuffer wt;
layout(binding = 8) uniform usamplerBuffer xt;
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;

shared float xs[BM * STRIDE];
shared float ws[BN * STRIDE];

float zero_of(uint idx) {
  return HAS_ZERO_POINT == 1 ? float(zeros[idx]) : float(1 << (WBITS - 1));
}

vec4 xq(uint i) {
  if (X_UBO == 1) return xu[i];
  if (X_TEXEL == 1) return uintBitsToFloat(texelFetch(xt, int(i)));
  return xv[i];
}

uvec4 wq(uint i) {
  if (W_TEXEL == 1) return texelFetch(wt, int(i));
  return w4[i];
}

const uint FLIP = WBITS == 4 ? 0x88888888u : 0x80808080u;

// linear_qw.glsl's decode_word (the same bits): the VPW weights of word v, (field - z) * s
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

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 8u, ty = tid / 8u;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint cpr = p.row_words / 4u, kq = p.K / 4u;
  const uint XV = uint(VPC / 4);   // x vec4s per chunk and row
  float acc[TM * TN];
  for (uint i = 0u; i < TM * TN; ++i) acc[i] = 0.0;
  for (uint c = 0u; c < cpr; ++c) {
    uint g = p.ngroups == 1u ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
    for (uint i = tid; i < BM * XV; i += 64u) {  // the tile's x values of chunk c
      uint r = i / XV, v = i % XV;
      vec4 x4 = xq(min(m0 + r, p.M - 1u) * kq + c * XV + v);
      uint b = r * STRIDE + 4u * v;
      xs[b] = x4.x;
      xs[b + 1u] = x4.y;
      xs[b + 2u] = x4.z;
      xs[b + 3u] = x4.w;
    }
    for (uint i = tid; i < BN * 4u; i += 64u) {  // the tile's weight words, decoded once
      uint r = i / 4u, j = i % 4u;
      uint n = min(n0 + r, p.N - 1u);
      uvec4 q = wq(n * cpr + c);
      vec4 f0, f1;
      decode_word(q[j], scales[n * p.ngroups + g], zero_of(n * p.ngroups + g), f0, f1);
      uint b = r * STRIDE + j * uint(VPW);
      ws[b] = f0.x;
      ws[b + 1u] = f0.y;
      ws[b + 2u] = f0.z;
      ws[b + 3u] = f0.w;
      if (WBITS == 4) {
        ws[b + 4u] = f1.x;
        ws[b + 5u] = f1.y;
        ws[b + 6u] = f1.z;
        ws[b + 7u] = f1.w;
      }
    }
    barrier();
    for (uint k = 0u; k < uint(VPC); ++k) {
      for (uint i = 0u; i < TM; ++i) {
        float xk = xs[(ty * TM + i) * STRIDE + k];
        for (uint j = 0u; j < TN; ++j) {
          acc[i * TN + j] = fma(ws[(tx * TN + j) * STRIDE + k], xk, acc[i * TN + j]);
        }
      }
    }
    barrier();
  }
  for (uint i = 0u; i < TM; ++i) {
    uint m = m0 + ty * TM + i;
    for (uint j = 0u; j < TN; ++j) {
      uint n = n0 + tx * TN + j;
      if (m < p.M && n < p.N) o[m * p.N + n] = acc[i * TN + j] + (HAS_BIAS == 1 ? bias[n] : 0.0);
    }
  }
}
