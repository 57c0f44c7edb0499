// The elementwise op bodies of unary.glsl, binary.glsl and fused_elementwise.glsl: one
// definition, inserted into each of them by qopt/kernels/source.py where the kernel says
// `#include "elementwise_ops.glsl"` (op codes: qopt/kernels/opcodes.py).

float erf_f(float v) {
  // Eigen's float erf: rational approximation on [-4, 4]; NaN passes (clamp would make
  // it -4 on some drivers).
  if (isnan(v)) return v;
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

// arctan, arcsine and arccosine to a few ulp (the GLSL builtins are rougher: ~1e-4 on
// lavapipe, atan(+-inf) NaN). atan_f: |v| reduced to [0, tan(pi/8)] by atan(a) =
// pi/2 + atan(-1/a) (a > tan(3pi/8)) or pi/4 + atan((a-1)/(a+1)) (a > tan(pi/8)), then
// an odd minimax polynomial (Cephes' atanf coefficients); NaN passes through.
float atan_f(float v) {
  precise float a = abs(v);
  precise float base = 0.0;
  precise float t = a;
  if (a > 2.414213562373095) {
    base = 1.5707963267948966;
    t = -1.0 / a;
  } else if (a > 0.41421356237309503) {
    base = 0.7853981633974483;
    t = (a - 1.0) / (a + 1.0);
  }
  precise float z = t * t;
  precise float p = 8.05374449538e-2 * z - 1.38776856032e-1;
  p = p * z + 1.99777106478e-1;
  p = p * z - 3.33329491539e-1;
  precise float r = base + (p * z * t + t);
  return (floatBitsToUint(v) & 0x80000000u) != 0u ? -r : r;  // -0.0 keeps its sign
}

// asin on [0, 1]: a + a^3 P(a^2) up to 0.5, else pi/2 - 2 asin(sqrt((1 - a) / 2))
// (Cephes' asinf coefficients).
float asin_pos(float a) {
  precise float big = a > 0.5 ? 1.0 : 0.0;
  precise float z = a > 0.5 ? 0.5 * (1.0 - a) : a * a;
  precise float s = a > 0.5 ? sqrt(z) : a;
  precise float p = 4.2163199048e-2 * z + 2.4181311049e-2;
  p = p * z + 4.5470025998e-2;
  p = p * z + 7.4953002686e-2;
  p = p * z + 1.6666752422e-1;
  precise float r = s + s * z * p;
  return big > 0.0 ? 1.5707963267948966 - 2.0 * r : r;
}

// NaN outside [-1, 1] (and for NaN), as torch.
float asin_f(float v) {
  if (!(abs(v) <= 1.0)) return uintBitsToFloat(0x7FC00000u);
  float r = asin_pos(abs(v));
  return (floatBitsToUint(v) & 0x80000000u) != 0u ? -r : r;  // -0.0 keeps its sign
}

// acos(v) = pi/2 - asin(v) for |v| <= 0.5, 2 asin(sqrt((1 - v) / 2)) above,
// pi - 2 asin(sqrt((1 + v) / 2)) below (no cancellation near +-1).
float acos_f(float v) {
  if (!(abs(v) <= 1.0)) return uintBitsToFloat(0x7FC00000u);
  if (v > 0.5) return 2.0 * asin_pos(sqrt(0.5 * (1.0 - v)));
  if (v < -0.5) return 3.141592653589793 - 2.0 * asin_pos(sqrt(0.5 * (1.0 + v)));
  return 1.5707963267948966 - asin_f(v);
}

// log(u) for u near 1 without the device log's absolute error there: with s = (u - 1) /
// (u + 1) (u - 1 exact), log(u) = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), to s^10
// for |u - 1| < 0.25 (|s| < 0.12: truncation below 1e-10 relative); the builtin above.
float log_near1(float u) {
  precise float d = u - 1.0;
  if (!(abs(d) < 0.25)) return log(u);
  precise float s = d / (u + 1.0);
  precise float z = s * s;
  precise float p = z * (1.0 / 11.0) + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  return 2.0 * s + 2.0 * s * (p * z);
}

// expm1 accurate near 0 (Kahan): u = exp(v); v where u == 1, -1 where u - 1 == -1, +inf
// where u is, else (u - 1) * (v / log(u)) (the rounding of u cancels); NaN passes.
float expm1_f(float v) {
  precise float u = exp(v);
  if (u == 1.0) return v;
  precise float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  if (isinf(u)) return u;
  return um1 * (v / log_near1(u));
}

// log1p accurate near 0: u = 1 + v; v where u == 1, else log(u) * (v / (u - 1)) (u - 1
// exact, the rounding of u cancels); +inf at +inf, -inf at -1, NaN below -1 and for NaN.
float log1p_f(float v) {
  precise float u = 1.0 + v;
  if (isnan(v) || u < 0.0) return uintBitsToFloat(0x7FC00000u);
  if (u == 1.0) return v;
  if (u == 0.0) return uintBitsToFloat(0xFF800000u);
  if (isinf(u)) return u;
  return log_near1(u) * (v / (u - 1.0));
}

// v's sign on r >= 0 (-0.0 and NaN keep theirs).
float with_sign_of(float r, float v) {
  return (floatBitsToUint(v) & 0x80000000u) != 0u ? -r : r;
}

// tanh to a few ulp (Cephes' tanhf): a + a^3 P(a^2) for a = |v| < 0.625 (the device's
// tanh loses its relative precision near 0), else 1 - 2 / (exp(2a) + 1) with a clamped to
// 15 (tanh rounds to 1 beyond); v's sign, NaN passes.
float tanh_f(float v) {
  if (isnan(v)) return v;
  precise float a = abs(v);
  precise float r;
  if (a < 0.625) {
    precise float z = a * a;
    precise float p = -5.70498872745e-3 * z + 2.06390887954e-2;
    p = p * z - 5.37397155531e-2;
    p = p * z + 1.33314422036e-1;
    p = p * z - 3.33332819422e-1;
    r = p * z * a + a;
  } else {
    r = 1.0 - 2.0 / (exp(2.0 * min(a, 15.0)) + 1.0);
  }
  return with_sign_of(r, v);
}

// e^a / 2 for a > 20 without overflowing early: (e^(a/2) / 2) e^(a/2) (finite to a = 89.4).
float half_exp(float a) {
  precise float h = exp(0.5 * a);
  return (0.5 * h) * h;
}

// sinh to a few ulp (Cephes' sinhf): a + a^3 P(a^2) for a = |v| <= 1 (no cancellation
// near 0, where the device's sinh loses it), (e - 1 / e) / 2 with e = exp(a) up to 20,
// half_exp above; v's sign (-0.0, NaN pass).
float sinh_f(float v) {
  precise float a = abs(v);
  precise float r;
  if (a <= 1.0) {
    precise float z = a * a;
    precise float p = 2.03721912945e-4 * z + 8.33028376239e-3;
    p = p * z + 1.66667160211e-1;
    r = p * z * a + a;
  } else if (a > 20.0) {
    r = half_exp(a);
  } else {
    precise float e = exp(a);
    r = 0.5 * e - 0.5 / e;
  }
  return with_sign_of(r, v);
}

// cosh: (e + 1 / e) / 2 with e = exp(|v|), half_exp above 20 (finite to 89.4, where the
// builtin overflows at 88.7); NaN passes.
float cosh_f(float v) {
  precise float a = abs(v);
  if (a > 20.0) return half_exp(a);
  precise float e = exp(a);
  return 0.5 * (e + 1.0 / e);
}

// C's pow special cases (the builtin leaves 0, inf, NaN and negative bases undefined):
// 1 where e == 0 or x == 1 (even NaN), NaN where x or e is; x, x * x, sqrt(x) for e = 1,
// 2, 0.5; NaN for a finite negative x and a non-integer e; zero and infinite x and
// infinite e by their limits; the sign of x kept for an odd integer e (-0.0 included).
float powf(float x, float e) {
  if (e == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(e)) return x + e;
  if (e == 1.0) return x;
  if (e == 2.0) return x * x;
  if (e == 0.5) return sqrt(x);
  bool integral = e == floor(e);
  if (x < 0.0 && !integral && !isinf(x)) return uintBitsToFloat(0x7FC00000u);
  bool odd = integral && abs(e) < 16777216.0 && mod(e, 2.0) == 1.0;
  precise float ax = abs(x);
  precise float r;
  float inf = uintBitsToFloat(0x7F800000u);
  if (ax == 0.0) r = e > 0.0 ? 0.0 : inf;
  else if (isinf(ax)) r = e > 0.0 ? inf : 0.0;
  else if (isinf(e)) r = ax == 1.0 ? 1.0 : ((ax > 1.0) == (e > 0.0) ? inf : 0.0);
  else r = pow(ax, e);
  return odd && (floatBitsToUint(x) & 0x80000000u) != 0u ? -r : r;
}

// C's fmod, exact: NaN where x is infinite, y is 0 or either is NaN; x where |x| < |y|
// (y infinite included); else |x| less y * 2^k, the largest such multiple not above the
// rest, until the rest is below |y|: each subtraction is exact (t <= r < 2t), each step
// lowers the rest's exponent (at most 277 steps); x's sign, a zero result included.
float fmod_f(float x, float y) {
  precise float ax = abs(x), ay = abs(y);
  if (isnan(x) || isnan(y) || isinf(x) || ay == 0.0) return uintBitsToFloat(0x7FC00000u);
  if (!(ax >= ay)) return x;
  int ey;
  frexp(ay, ey);
  precise float r = ax;
  for (int i = 0; i < 300 && r >= ay; i++) {
    int er;
    frexp(r, er);
    precise float t = ldexp(ay, er - ey);
    if (t > r) t = ldexp(ay, er - ey - 1);
    r = r - t;
  }
  return (floatBitsToUint(x) & 0x80000000u) != 0u ? -r : r;
}

// torch's (and Python's) float floor division: x / y where y is 0; else with the exact
// m = fmod(x, y), d = (x - m) / y, less 1 where m is nonzero with y's other sign, then
// floor(d), plus 1 where d is above it by more than 1/2; a zero with x / y's sign. Not
// floor(x / y), whose rounding gives 1 // 0.1 = 10 (torch: 9) and 3 // -inf = -0 (-1).
float floordiv_f(float x, float y) {
  if (y == 0.0) return x / y;
  precise float m = fmod_f(x, y);
  precise float d = (x - m) / y;
  if (m != 0.0 && ((y < 0.0) != (m < 0.0))) d = d - 1.0;
  if (d == 0.0) return uintBitsToFloat((floatBitsToUint(x) ^ floatBitsToUint(y)) & 0x80000000u);
  precise float f = floor(d);
  if (d - f > 0.5) f = f + 1.0;
  return f;
}

// torch's integer pow (ATen powi): squaring in int (wrapping); b < 0 gives 1 for
// a == 1, +-1 for a == -1, else 0
int powi(int a, int b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0);
  int r = 1;
  while (b != 0) {
    if ((b & 1) != 0) r *= a;
    b >>= 1;
    a *= a;
  }
  return r;
}

// Unary op `op` (UNARY_*) on the 32-bit word xw, read as f32 or i32 by dt (DTYPE_*; i32:
// the UNARY_INT_OPS only); the result as a word. pa: clamp min, leaky slope or shrink
// lambda; pb: clamp max. logical_not / to_bool / cast_f32_i32 / signbit give i32,
// cast_i32_f32 f32.
uint unary_op(int op, int dt, uint xw, float pa, float pb) {
  if (dt == DTYPE_I32) {
    int v = int(xw);
    int r = v;
    if (op == UNARY_IDENTITY) r = v;
    else if (op == UNARY_RELU) r = max(v, 0);
    else if (op == UNARY_NEG) r = -v;
    else if (op == UNARY_ABS) r = abs(v);
    else if (op == UNARY_CLAMP) r = clamp(v, int(pa), int(pb));
    else if (op == UNARY_LOGICAL_NOT) r = v == 0 ? 1 : 0;
    else if (op == UNARY_CAST_I32_F32) return floatBitsToUint(float(v));
    else if (op == UNARY_TO_BOOL) r = v != 0 ? 1 : 0;
    else if (op == UNARY_SIGN) r = int(v > 0) - int(v < 0);
    else if (op == UNARY_SIGNBIT) r = v < 0 ? 1 : 0;
    return uint(r);
  }
  precise float v = uintBitsToFloat(xw);
  precise float r = v;
  if (op == UNARY_IDENTITY) r = v;
  else if (op == UNARY_RELU) r = v < 0.0 ? 0.0 : v;  // NaN and -0.0 stay, as torch
  else if (op == UNARY_SILU) r = v / (1.0 + exp(-v));
  else if (op == UNARY_SIGMOID) r = 1.0 / (1.0 + exp(-v));
  else if (op == UNARY_TANH) r = tanh_f(v);
  else if (op == UNARY_EXP) r = exp(v);
  else if (op == UNARY_LOG) r = log(v);
  else if (op == UNARY_SQRT) r = sqrt(v);
  else if (op == UNARY_RSQRT) r = 1.0 / sqrt(v);  // torch: f32 sqrt, then f32 division
  else if (op == UNARY_RECIPROCAL) r = 1.0 / v;
  else if (op == UNARY_SIN) r = sin(v);
  else if (op == UNARY_COS) r = cos(v);
  else if (op == UNARY_ERF) r = erf_f(v);
  else if (op == UNARY_NEG) r = -v;
  else if (op == UNARY_ABS) r = abs(v);
  else if (op == UNARY_GELU) r = 0.5 * v * (1.0 + erf_f(v * 0.70710678118654752));
  else if (op == UNARY_GELU_TANH) {
    precise float inner = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    r = 0.5 * v * (1.0 + tanh_f(inner));
  }
  else if (op == UNARY_FLOOR) r = floor(v);
  else if (op == UNARY_CEIL) r = ceil(v);
  else if (op == UNARY_ROUND) r = roundEven(v);
  else if (op == UNARY_CLAMP) {
    // by comparisons, as torch: NaN and -0.0 (against a bound 0) pass, pb where pa > pb
    r = v < pa ? pa : v;
    r = r > pb ? pb : r;
  }
  else if (op == UNARY_LEAKY_RELU) r = v > 0.0 ? v : v * pa;
  else if (op == UNARY_HARDSWISH) r = v * clamp(v + 3.0, 0.0, 6.0) / 6.0;
  else if (op == UNARY_HARDSIGMOID) r = isnan(v) ? v : clamp(v + 3.0, 0.0, 6.0) / 6.0;
  else if (op == UNARY_LOGICAL_NOT) return v == 0.0 ? 1u : 0u;
  else if (op == UNARY_CAST_F32_I32) return uint(int(trunc(v)));
  else if (op == UNARY_TO_BOOL) return v != 0.0 ? 1u : 0u;
  else if (op == UNARY_SIGNBIT) return xw >> 31;  // the bit itself: -0.0 and -NaN too
  else if (op == UNARY_SQUARE) r = v * v;
  else if (op == UNARY_LOG10) r = log2(v) * 0.30102999566398120;
  else if (op == UNARY_LOG2) r = log2(v);
  else if (op == UNARY_TAN) r = tan(v);
  else if (op == UNARY_HARDSHRINK) r = (v >= -pa && v <= pa) ? 0.0 : v;
  else if (op == UNARY_SOFTSHRINK) {
    // torch's x * 0 in between: a zero with x's sign, NaN passes (spelt out, as the
    // driver may fold v * 0.0 to 0.0).
    float zero = isnan(v) ? v : uintBitsToFloat(floatBitsToUint(v) & 0x80000000u);
    r = v > pa ? v - pa : (v < -pa ? v + pa : zero);
  }
  else if (op == UNARY_ASIN) r = asin_f(v);
  else if (op == UNARY_ACOS) r = acos_f(v);
  else if (op == UNARY_ATAN) r = atan_f(v);
  else if (op == UNARY_EXPM1) r = expm1_f(v);
  else if (op == UNARY_LOG1P) r = log1p_f(v);
  else if (op == UNARY_SINH) r = sinh_f(v);
  else if (op == UNARY_COSH) r = cosh_f(v);
  else if (op == UNARY_TRUNC) r = trunc(v);
  else if (op == UNARY_SIGN) r = float(v > 0.0) - float(v < 0.0);  // NaN and -0.0: +0.0, as torch
  return floatBitsToUint(r);
}

// Binary op `op` (BINARY_*) on the words aw, bw, both f32 or both i32 by dt (DTYPE_*);
// the result as a word: arithmetic in the input type (alpha scales b of add/sub; i32
// div is floor division, i32 remainder Python's mod, i32 fmod C's with 0 for a divisor
// of 0), comparisons and logical ops i32 0/1.
uint binary_op(int op, int dt, uint aw, uint bw, float alpha) {
  if (dt == DTYPE_I32) {
    int x = int(aw), y = int(bw);
    int r = 0;
    int al = int(alpha);
    if (op == BINARY_ADD) r = x + al * y;
    else if (op == BINARY_SUB) r = x - al * y;
    else if (op == BINARY_MUL) r = x * y;
    else if (op == BINARY_DIV || op == BINARY_FLOOR_DIVIDE) {
      int q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
      r = q;
    }
    else if (op == BINARY_POW) r = powi(x, y);
    else if (op == BINARY_MAXIMUM) r = max(x, y);
    else if (op == BINARY_MINIMUM) r = min(x, y);
    else if (op == BINARY_EQ) r = int(x == y);
    else if (op == BINARY_NE) r = int(x != y);
    else if (op == BINARY_LT) r = int(x < y);
    else if (op == BINARY_LE) r = int(x <= y);
    else if (op == BINARY_GT) r = int(x > y);
    else if (op == BINARY_GE) r = int(x >= y);
    else if (op == BINARY_LOGICAL_AND) r = int(x != 0 && y != 0);
    else if (op == BINARY_LOGICAL_OR) r = int(x != 0 || y != 0);
    else if (op == BINARY_REMAINDER) {
      int m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      r = m;
    }
    else if (op == BINARY_BITWISE_AND) r = x & y;
    else if (op == BINARY_BITWISE_OR) r = x | y;
    else if (op == BINARY_BITWISE_XOR) r = x ^ y;
    else if (op == BINARY_FMOD) r = (y == 0 || y == -1) ? 0 : x - (x / y) * y;  // truncating /
    // torch's shifts: 0 for a left shift by < 0 or >= 32; a right shift by < 0 or >= 31
    // fills with the sign bit
    else if (op == BINARY_BITWISE_LEFT_SHIFT) r = (y < 0 || y >= 32) ? 0 : int(uint(x) << uint(y));
    else if (op == BINARY_BITWISE_RIGHT_SHIFT) r = x >> ((y < 0 || y >= 31) ? 31 : y);
    else if (op == BINARY_TRUNC_DIVIDE) r = y == 0 ? 0 : (y == -1 ? -x : x / y);  // truncating
    return uint(r);
  }
  precise float x = uintBitsToFloat(aw), y = uintBitsToFloat(bw);
  precise float r = 0.0;
  if (op == BINARY_ADD) r = x + alpha * y;
  else if (op == BINARY_SUB) r = x - alpha * y;
  else if (op == BINARY_MUL) r = x * y;
  else if (op == BINARY_DIV) r = x / y;
  else if (op == BINARY_POW) r = powf(x, y);
  else if (op == BINARY_MAXIMUM) r = isnan(x) || isnan(y) ? x + y : max(x, y);  // NaN wins
  else if (op == BINARY_MINIMUM) r = isnan(x) || isnan(y) ? x + y : min(x, y);
  else if (op >= BINARY_EQ && op <= BINARY_LOGICAL_OR) {
    bool t = false;
    if (op == BINARY_EQ) t = x == y;
    else if (op == BINARY_NE) t = x != y;
    else if (op == BINARY_LT) t = x < y;
    else if (op == BINARY_LE) t = x <= y;
    else if (op == BINARY_GT) t = x > y;
    else if (op == BINARY_GE) t = x >= y;
    else if (op == BINARY_LOGICAL_AND) t = x != 0.0 && y != 0.0;
    else t = x != 0.0 || y != 0.0;
    return t ? 1u : 0u;
  }
  else if (op == BINARY_REMAINDER) {
    // torch's: fmod, then + y where it is nonzero with y's other sign (exact fmod: a zero
    // keeps x's sign, 3 % -inf is -inf)
    r = fmod_f(x, y);
    if (r != 0.0 && ((r < 0.0) != (y < 0.0))) r = r + y;
  }
  else if (op == BINARY_FMOD) r = fmod_f(x, y);
  else if (op == BINARY_FLOOR_DIVIDE) r = floordiv_f(x, y);
  else if (op == BINARY_TRUNC_DIVIDE) r = trunc(x / y);
  return floatBitsToUint(r);
}
