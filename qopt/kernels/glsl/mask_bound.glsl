#version 450
// The keys an additive attention mask leaves open, computed on the device: over a
// mask of rows x S (row-major, the last dim the keys), bound[0] = 1 + the largest key s
// with mask[r*S + s] != -inf in some row r (0 when every entry is -inf). sdpa (BOUNDED
// = 1) loops its keys to min(S, bound[0]): every key past it is -inf in every row, a
// score sdpa skips, so bounding the loop reads fewer cache rows and computes the same
// bits. One workgroup: thread t scans keys S-1-t, S-1-t-64, ... downwards and stops at
// its first open key (or below what it already found), so the scan reads about the
// masked tail of each row, not the whole row; NaN is open (kept, never skipped).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Mask { float mask[]; };
layout(std430, binding = 1) writeonly buffer Bound { uint bound[]; };
layout(push_constant) uniform P { uint rows; uint S; } p;
shared uint best[64];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint found = 0u;  // 1 + the largest open key this thread saw
  for (uint r = 0u; r < p.rows; ++r) {
    for (int key = int(p.S) - 1 - int(t); key >= int(found); key -= 64) {
      if (mask[r * p.S + uint(key)] != -1.0 / 0.0) {
        found = uint(key) + 1u;
        break;
      }
    }
  }
  best[t] = found;
  barrier();
  for (uint h = 32u; h > 0u; h >>= 1) {
    if (t < h) best[t] = max(best[t], best[t + h]);
    barrier();
  }
  if (t == 0u) bound[0] = best[0];
}
