#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Cooperative GEMV variant of linear_qw (`qopt.kernels.coop`): picked at load, for a
// dispatch with M = 1 whose every 128-bit chunk is on the fast path, on a device with
// subgroup arithmetic in the compute stage. The same bindings, push constants and
// specialization constants (constant ids) as linear_qw.glsl, so a bundle's dispatch runs
// unchanged; NPW, MT and WG (the base's tile) are not read.
// A workgroup of 64 invocations owns ROWS consecutive output rows; its subgroups (of
// gl_SubgroupSize lanes, whatever the device's) take RA rows at a time, and the lanes of a
// subgroup split the row's K chunks (lane l: chunks l, l + S, ...), each lane a partial sum
// per row (scale applied per group, as gemv_sym does), reduced with subgroupAdd; one lane
// writes. The weights a subgroup reads are contiguous across its lanes (coalesced on a
// GPU), x is read once per RA rows. Reads: x vec4s below cpr*VPC/4, w chunks n*cpr + c,
// scales / zeros [n*ngroups + g], bias[n]: the words linear_qw's gemm_tile reads (its
// extents), nothing else. workgroups = (ceil(N / ROWS), 1, 1) (`coop.qw_coop_workgroups`).
// The sums run in a different order than the base's: a tolerance kernel like the base.
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
const uint ROWS = 16u;  // output rows per workgroup (coop.QW_COOP_ROWS)
const int VPW = 32 / WBITS;
const int VPC = 4 * VPW;
layout(std430, binding = 0) readonly buffer X4 { vec4 xv[]; };
layout(std430, binding = 1) readonly buffer Wq { uvec4 w4[]; };
layout(std430, binding = 2) readonly buffer S { float scales[]; };
layout(std430, binding = 3) readonly buffer Z { int zeros[]; };
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std140, binding = 6) uniform XU { vec4 xu[XU_VEC4]; };
layout(binding = 7) uniform usamplerBuffer wt;
layout(push_constant) uniform P { uint M; uint N; uint K; uint row_words; uint ngroups; } p;

float zero_of(uint idx) {
  return HAS_ZERO_POINT == 1 ? float(zeros[idx]) : float(1 << (WBITS - 1));
}

vec4 xq(uint i) {
  if (X_UBO == 1) return xu[i];
  return xv[i];
}

uvec4 wq(uint i) {
  if (W_TEXEL == 1) return texelFetch(wt, int(i));
  return w4[i];
}

#include "qw_chunk.glsl"


void store(uint n, float total, bool whole_row) {
  if (subgroupElect() && n < p.N) {
    float s = whole_row ? scales[n] : 1.0;
    o[n] = total * s * UNSCALE + (HAS_BIAS == 1 ? bias[n] : 0.0);
  }
}

void main() {
  uint cpr = p.row_words / 4u;
  bool whole_row = p.ngroups == 1u;
  for (uint base = gl_WorkGroupID.x * ROWS; base < p.N; base += gl_NumWorkGroups.x * ROWS) {
    // two rows at a time per subgroup: each x chunk read once for both
    for (uint r = gl_SubgroupID * 2u; r < ROWS; r += gl_NumSubgroups * 2u) {
      uint n0 = base + r, n1 = base + r + 1u;
      uint c0 = min(n0, p.N - 1u), c1 = min(n1, p.N - 1u);
      float a0 = 0.0, a1 = 0.0;
      for (uint c = gl_SubgroupInvocationID; c < cpr; c += gl_SubgroupSize) {
        uint g = whole_row ? 0u : (c * uint(VPC)) / uint(GROUP_SIZE);
        uint xi = c * uint(VPC / 4);
        float d0 = hsum(sym_chunk(wq(c0 * cpr + c), xi, vec4(0.0), zero_of(c0 * p.ngroups + g)));
        float d1 = hsum(sym_chunk(wq(c1 * cpr + c), xi, vec4(0.0), zero_of(c1 * p.ngroups + g)));
        a0 += whole_row ? d0 : scales[c0 * p.ngroups + g] * d0;
        a1 += whole_row ? d1 : scales[c1 * p.ngroups + g] * d1;
      }
      float t0 = subgroupAdd(a0), t1 = subgroupAdd(a1);
      store(n0, t0, whole_row);
      store(n1, t1, whole_row);
    }
  }
}
