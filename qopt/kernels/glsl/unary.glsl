#version 450
// y[i] = op(x[i]); 32-bit words, f32 or i32 by DTYPE (op codes: qopt/kernels/opcodes.py).
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const int OP = UNARY_IDENTITY;
layout(constant_id = 1) const int DTYPE = DTYPE_F32;  // DTYPE_F32 or DTYPE_I32 input
layout(constant_id = 2) const int WG = 64;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
// a: clamp min, leaky slope or shrink lambda; b: clamp max.
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
    if (DTYPE == DTYPE_I32) {
      int v = int(x[i]);
      int r = v;
      if (OP == UNARY_IDENTITY) r = v;
      else if (OP == UNARY_RELU) r = max(v, 0);
      else if (OP == UNARY_NEG) r = -v;
      else if (OP == UNARY_ABS) r = abs(v);
      else if (OP == UNARY_CLAMP) r = clamp(v, int(p.a), int(p.b));
      else if (OP == UNARY_LOGICAL_NOT) r = v == 0 ? 1 : 0;
      else if (OP == UNARY_CAST_I32_F32) { y[i] = floatBitsToUint(float(v)); continue; }
      else if (OP == UNARY_TO_BOOL) r = v != 0 ? 1 : 0;
      y[i] = uint(r);
      continue;
    }
    precise float v = uintBitsToFloat(x[i]);
    precise float r = v;
    if (OP == UNARY_IDENTITY) r = v;
    else if (OP == UNARY_RELU) r = isnan(v) ? v : max(v, 0.0);  // NaN stays NaN, as torch
    else if (OP == UNARY_SILU) r = v / (1.0 + exp(-v));
    else if (OP == UNARY_SIGMOID) r = 1.0 / (1.0 + exp(-v));
    else if (OP == UNARY_TANH) r = tanh_f(v);
    else if (OP == UNARY_EXP) r = exp(v);
    else if (OP == UNARY_LOG) r = log(v);
    else if (OP == UNARY_SQRT) r = sqrt(v);
    else if (OP == UNARY_RSQRT) r = 1.0 / sqrt(v);  // torch: f32 sqrt, then f32 division
    else if (OP == UNARY_RECIPROCAL) r = 1.0 / v;
    else if (OP == UNARY_SIN) r = sin(v);
    else if (OP == UNARY_COS) r = cos(v);
    else if (OP == UNARY_ERF) r = erf_f(v);
    else if (OP == UNARY_NEG) r = -v;
    else if (OP == UNARY_ABS) r = abs(v);
    else if (OP == UNARY_GELU) r = 0.5 * v * (1.0 + erf_f(v * 0.70710678118654752));
    else if (OP == UNARY_GELU_TANH) {
      precise float inner = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      r = 0.5 * v * (1.0 + tanh_f(inner));
    }
    else if (OP == UNARY_FLOOR) r = floor(v);
    else if (OP == UNARY_CEIL) r = ceil(v);
    else if (OP == UNARY_ROUND) r = roundEven(v);
    else if (OP == UNARY_CLAMP) r = isnan(v) ? v : min(max(v, p.a), p.b);
    else if (OP == UNARY_LEAKY_RELU) r = v > 0.0 ? v : v * p.a;
    else if (OP == UNARY_HARDSWISH) r = v * clamp(v + 3.0, 0.0, 6.0) / 6.0;
    else if (OP == UNARY_HARDSIGMOID) r = isnan(v) ? v : clamp(v + 3.0, 0.0, 6.0) / 6.0;
    else if (OP == UNARY_LOGICAL_NOT) { y[i] = v == 0.0 ? 1u : 0u; continue; }
    else if (OP == UNARY_CAST_F32_I32) { y[i] = uint(int(trunc(v))); continue; }
    else if (OP == UNARY_TO_BOOL) { y[i] = v != 0.0 ? 1u : 0u; continue; }
    else if (OP == UNARY_SQUARE) r = v * v;
    else if (OP == UNARY_LOG10) r = log2(v) * 0.30102999566398120;
    else if (OP == UNARY_LOG2) r = log2(v);
    else if (OP == UNARY_TAN) r = tan(v);
    else if (OP == UNARY_HARDSHRINK) r = (v >= -p.a && v <= p.a) ? 0.0 : v;
    else if (OP == UNARY_SOFTSHRINK) {
      // torch's x * 0 in between: a zero with x's sign, NaN passes (spelt out, as the
      // driver may fold v * 0.0 to 0.0).
      float zero = isnan(v) ? v : uintBitsToFloat(floatBitsToUint(v) & 0x80000000u);
      r = v > p.a ? v - p.a : (v < -p.a ? v + p.a : zero);
    }
    y[i] = floatBitsToUint(r);
  }
}
