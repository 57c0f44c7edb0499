#version 450
// out[i, :] = table[idx[i], :] for a [V, D] table of 32-bit words (embedding);
// negative indices count from the end; out-of-range rows read as 0.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG = 64;
layout(std430, binding = 0) readonly buffer T { uint table[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };
layout(push_constant) uniform P { uint n; uint D; uint V; } p;

void main() {
  uint total = p.n * p.D;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    int r = idx[i / p.D];
    if (r < 0) r += int(p.V);
    y[i] = (r >= 0 && r < int(p.V)) ? table[uint(r) * p.D + i % p.D] : 0u;
  }
}
