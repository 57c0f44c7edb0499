#version 450
// out[i] = start + i * step (MODE DTYPE_F32: f32 arange, DTYPE_I32: i32 arange); a fill is
// step = 0.
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = DTYPE_F32;
layout(constant_id = 1) const int WG = 64;
layout(std430, binding = 0) writeonly buffer Out { uint y[]; };
layout(push_constant) uniform P { uint n; uint start; uint step; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    if (MODE == DTYPE_F32) {
      precise float v = uintBitsToFloat(p.start) + float(i) * uintBitsToFloat(p.step);
      y[i] = floatBitsToUint(v);
    } else {
      y[i] = uint(int(p.start) + int(i) * int(p.step));
    }
  }
}
