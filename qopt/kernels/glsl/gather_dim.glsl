#version 450
// y[p, s, q] = x[p, idx[s], q] for x [P, N, Q] and y [P, S, Q] of 32-bit words: a gather
// along one dim with indices read from a buffer (aten.index, index_select with run-time
// indices). NEG = 1: an index in [-N, 0) counts from the end (torch's advanced indexing);
// NEG = 0: only [0, N) is valid (index_select). An invalid index reads 0 and sets
// status[0] = 1: the runtime zeroes it before a run and raises an error naming the op.
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int NEG = 0;
layout(constant_id = 1) const int WG = 64;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(std430, binding = 3) buffer Status { uint status[]; };
layout(push_constant) uniform Push { uint P; uint N; uint Q; uint S; } p;

void main() {
  uint total = p.P * p.S * p.Q;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint q = i % p.Q, t = i / p.Q;
    uint s = t % p.S, outer = t / p.S;
    int r = idx[s];
    if (NEG == 1 && r < 0) r += int(p.N);
    bool ok = r >= 0 && r < int(p.N);
    if (!ok) atomicOr(status[0], 1u);
    y[i] = ok ? x[(outer * p.N + uint(r)) * p.Q + q] : 0u;
  }
}
