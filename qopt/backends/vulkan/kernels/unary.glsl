#version 450
// y[i] = op(x[i]); 32-bit words, f32 or i32 by DTYPE (see kernel_specs.UNARY_OPS).
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int DTYPE = 0;  // 0: f32 input, 1: i32 input
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
layout(push_constant) uniform P { uint n; float a; float b; } p;

float erf_f(float v) {
  // Eigen's float erf: rational approximation on [-4, 4].
  precise float x = clamp(v, -4.0, 4.0);
  precise float x2 = x * x;
  precise float num = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
  num = num * x2 + -2.10102402082508e-06;
  num = num * x2 + -5.69250639462346e-05;
  num = num * x2 + -7.34990630326855e-04;
  num = num * x2 + -2.95459980854025e-03;
  num = num * x2 + -1.60960333262415e-02;
  num = num * x;
  precise float den = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
  den = den * x2 + -1.68282697438203e-03;
  den = den * x2 + -7.37332916720468e-03;
  den = den * x2 + -1.42647390514189e-02;
  return num / den;
}

float tanh_f(float v) { return tanh(clamp(v, -15.0, 15.0)); }

void main() {
  uint stride = gl_NumWorkGroups.x * uint(WG);
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    if (DTYPE == 1) {
      int v = int(x[i]);
      int r = v;
      if (OP == 0) r = v;
      else if (OP == 1) r = max(v, 0);
      else if (OP == 13) r = -v;
      else if (OP == 14) r = abs(v);
      else if (OP == 20) r = clamp(v, int(p.a), int(p.b));
      else if (OP == 24) r = v == 0 ? 1 : 0;
      else if (OP == 26) { y[i] = floatBitsToUint(float(v)); continue; }
      else if (OP == 27) r = v != 0 ? 1 : 0;
      y[i] = uint(r);
      continue;
    }
    precise float v = uintBitsToFloat(x[i]);
    precise float r = v;
    if (OP == 0) r = v;
    else if (OP == 1) r = max(v, 0.0);
    else if (OP == 2) r = v / (1.0 + exp(-v));
    else if (OP == 3) r = 1.0 / (1.0 + exp(-v));
    else if (OP == 4) r = tanh_f(v);
    else if (OP == 5) r = exp(v);
    else if (OP == 6) r = log(v);
    else if (OP == 7) r = sqrt(v);
    else if (OP == 8) r = 1.0 / sqrt(v);  // torch: f32 sqrt, then f32 division
    else if (OP == 9) r = 1.0 / v;
    else if (OP == 10) r = sin(v);
    else if (OP == 11) r = cos(v);
    else if (OP == 12) r = erf_f(v);
    else if (OP == 13) r = -v;
    else if (OP == 14) r = abs(v);
    else if (OP == 15) r = 0.5 * v * (1.0 + erf_f(v * 0.70710678118654752));
    else if (OP == 16) {
      precise float inner = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      r = 0.5 * v * (1.0 + tanh_f(inner));
    }
    else if (OP == 17) r = floor(v);
    else if (OP == 18) r = ceil(v);
    else if (OP == 19) r = roundEven(v);
    else if (OP == 20) r = min(max(v, p.a), p.b);
    else if (OP == 21) r = v > 0.0 ? v : v * p.a;
    else if (OP == 22) r = v * clamp(v + 3.0, 0.0, 6.0) / 6.0;
    else if (OP == 23) r = clamp(v + 3.0, 0.0, 6.0) / 6.0;
    else if (OP == 24) { y[i] = v == 0.0 ? 1u : 0u; continue; }
    else if (OP == 25) { y[i] = uint(int(trunc(v))); continue; }
    else if (OP == 27) { y[i] = v != 0.0 ? 1u : 0u; continue; }
    else if (OP == 28) r = v * v;
    y[i] = floatBitsToUint(r);
  }
}
