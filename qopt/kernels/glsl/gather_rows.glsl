#version 450
// out[i, :] = table[idx[i], :] for a [V, D] table of 32-bit words (embedding);
// an index in [-V, 0) reads row idx + V, one outside [-V, V) reads as 0. Any index
// outside [0, V) (torch's range for embedding / index_select) sets status[0] = 1: the
// runtime zeroes it before a run and raises an error naming the op when it is set.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG = 64;
layout(std430, binding = 0) readonly buffer T { uint table[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };
layout(std430, binding = 3) buffer Status { uint status[]; };
layout(push_constant) uniform P { uint n; uint D; uint V; } p;

void main() {
  uint total = p.n * p.D;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    int r = idx[i / p.D];
    if (r < 0 || r >= int(p.V)) atomicOr(status[0], 1u);
    if (r < 0) r += int(p.V);
    y[i] = (r >= 0 && r < int(p.V)) ? table[uint(r) * p.D + i % p.D] : 0u;
  }
}
