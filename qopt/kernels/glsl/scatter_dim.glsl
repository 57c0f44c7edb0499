#version 450
// out[p, idx[s], q] = vals[p, s, q] for out [P, N, Q] and vals [P, S, Q] of 32-bit words:
// a scatter along one dim at positions read from a buffer (aten.index_put with one
// indexed dim, aten.index_copy: a KV-cache update). Only the S rows are written; the
// rest of `out` keeps its words (the caller copies `self` there first, or `out` is the
// state buffer updated in place). Repeated indices: the last one wins (an element is
// written only when no later s has the same row), as qopt's interpreters do. NEG = 1:
// an index in [-N, 0) counts from the end (index_put); NEG = 0: only [0, N) is valid
// (index_copy). An invalid index writes nothing and sets status[0] = 1: the runtime
// zeroes it before a run and raises an error naming the op. VMAP = 1: vals is read
// through a strided map, vals[VOFF + p*VSP + s*VSS + q*VSQ] instead of vals[i] (a copy
// folded in by vkc-fold-copies: a transposed or sliced source).
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int NEG = 0;
layout(constant_id = 1) const int WG = 64;
layout(constant_id = 2) const int VMAP = 0;
layout(constant_id = 3) const int VOFF = 0;
layout(constant_id = 4) const int VSP = 0;
layout(constant_id = 5) const int VSS = 0;
layout(constant_id = 6) const int VSQ = 0;
layout(std430, binding = 0) readonly buffer V { uint vals[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) buffer Out { uint o[]; };
layout(std430, binding = 3) buffer Status { uint status[]; };
layout(push_constant) uniform Push { uint P; uint N; uint Q; uint S; } p;

int row(uint s) {
  int r = idx[s];
  if (NEG == 1 && r < 0) r += int(p.N);
  return r;
}

void main() {
  uint total = p.P * p.S * p.Q;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint q = i % p.Q, t = i / p.Q;
    uint s = t % p.S, outer = t / p.S;
    int r = row(s);
    if (r < 0 || r >= int(p.N)) {
      atomicOr(status[0], 1u);
      continue;
    }
    bool last = true;
    for (uint later = s + 1; later < p.S; ++later) {
      if (row(later) == r) {
        last = false;
        break;
      }
    }
    uint src = VMAP == 1 ? uint(VOFF) + outer * uint(VSP) + s * uint(VSS) + q * uint(VSQ) : i;
    if (last) o[(outer * p.N + uint(r)) * p.Q + q] = vals[src];
  }
}
