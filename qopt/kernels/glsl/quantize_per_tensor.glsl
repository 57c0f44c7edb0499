#version 450
// q[i] = clamp(roundEven(x[i] * inv_scale) + zp, qmin, qmax) in f32 (PT2E order;
// ZP_BEFORE_ROUND = 1: roundEven(x * inv_scale + zp)); inv_scale = f32(1 / scale)
// computed by the host; x f32, q i32.
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int ZP_BEFORE_ROUND = 0;
layout(constant_id = 1) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { int q[]; };
layout(push_constant) uniform P { uint n; float inv_scale; int zp; int qmin; int qmax; } p;

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    precise float v = x[i] * p.inv_scale;
    precise float r = ZP_BEFORE_ROUND == 1 ? roundEven(v + float(p.zp))
                                           : roundEven(v) + float(p.zp);
    r = clamp(r, float(p.qmin), float(p.qmax));
    q[i] = int(r);
  }
}
