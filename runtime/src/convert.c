/* Host tensors to and from the buffer ABI (every element a 32-bit word: float32 for
   float tensors, int32 otherwise), with the casts qopt's Python runtime allows
   (qopt/inputs.py `coerce`: only casts that change no value; `abi.narrow`). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const NAMES[] = {"float32", "float16", "float64", "int8", "int16",
                                    "int32",   "int64",   "uint8",   "bool"};
static const size_t SIZES[] = {4, 2, 8, 1, 2, 4, 8, 1, 1};

size_t qvk_dtype_size(qvk_dtype dtype) {
  return (unsigned)dtype < sizeof SIZES / sizeof SIZES[0] ? SIZES[dtype] : 0;
}

const char *qvk_dtype_name(qvk_dtype dtype) {
  return (unsigned)dtype < sizeof NAMES / sizeof NAMES[0] ? NAMES[dtype] : "?";
}

int qvk_dtype_parse(const char *name, size_t len, qvk_dtype *out) {
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
    if (strlen(NAMES[i]) == len && memcmp(NAMES[i], name, len) == 0) {
      *out = (qvk_dtype)i;
      return 1;
    }
  }
  return 0;
}

int64_t qvk_tensor_numel(const qvk_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

static int is_float(qvk_dtype d) { return d == QVK_FLOAT32 || d == QVK_FLOAT16 || d == QVK_FLOAT64; }

qvk_dtype qvk_abi_dtype(qvk_dtype dtype) { return is_float(dtype) ? QVK_FLOAT32 : QVK_INT32; }

static float half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0) {
    v = ldexpf((float)man, -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = ldexpf((float)(man | 1024), exp - 25);
  }
  return sign ? -v : v;
}

/* IEEE binary16 nearest (ties to even) to `x`, as numpy's astype(float16) gives it. */
static uint16_t double_to_half(double x) {
  uint16_t sign = signbit(x) ? 0x8000u : 0;
  double a = fabs(x);
  if (isnan(x)) return (uint16_t)(sign | 0x7e00u);
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x1p-14) {
    double q = nearbyint(a * 0x1p24); /* exact scaling; rounds ties to even */
    return (uint16_t)(sign | (uint16_t)q);
  }
  int e2;
  frexp(a, &e2); /* a = f * 2^e2, f in [0.5, 1) */
  int exp = e2 - 1;
  double q = nearbyint(ldexp(a, 10 - exp));
  if (q >= 2048.0) {
    q = 1024.0;
    exp += 1;
  }
  if (exp + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint16_t)((exp + 15) << 10) | (uint16_t)((int)q - 1024));
}

static double get_f(const void *data, qvk_dtype d, int64_t i) {
  switch (d) {
    case QVK_FLOAT32: {
      float v;
      memcpy(&v, (const char *)data + 4 * i, 4);
      return v;
    }
    case QVK_FLOAT64: {
      double v;
      memcpy(&v, (const char *)data + 8 * i, 8);
      return v;
    }
    default: {
      uint16_t v;
      memcpy(&v, (const char *)data + 2 * i, 2);
      return half_to_float(v);
    }
  }
}

static int64_t get_i(const void *data, qvk_dtype d, int64_t i) {
  const char *p = data;
  switch (d) {
    case QVK_INT8: return (int8_t)p[i];
    case QVK_UINT8: return (uint8_t)p[i];
    case QVK_BOOL: return p[i] != 0;
    case QVK_INT16: {
      int16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case QVK_INT32: {
      int32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    default: {
      int64_t v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

static void int_range(qvk_dtype d, int64_t *lo, int64_t *hi) {
  switch (d) {
    case QVK_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case QVK_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case QVK_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case QVK_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case QVK_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

/* A declared float value of a (coerced) source value, in the declared dtype's precision. */
static double as_declared_float(double v, qvk_dtype declared) {
  if (declared == QVK_FLOAT32) return (float)v;
  if (declared == QVK_FLOAT16) return half_to_float(double_to_half(v));
  return v;
}

qvk_status qvk_to_abi(const qvk_tensor *input, qvk_dtype declared, int64_t numel, size_t index,
                      const char *where, void *words, qvk_error *err) {
  qvk_dtype src = input->dtype;
  const void *data = input->data;
  uint32_t *out = words;
  char what[300];
  snprintf(what, sizeof what, "input %zu of %s", index, where);
  if ((unsigned)src > QVK_BOOL) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "%s has an unknown dtype code %d", what, (int)src);
  }
  if (numel > 0 && data == NULL) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "%s has no data", what);
  }
  if (is_float(src) && is_float(declared)) {
    for (int64_t i = 0; i < numel; i++) {
      double v = get_f(data, src, i);
      double d = as_declared_float(v, declared);
      if (isinf(d) && !isinf(v)) {
        return qvk_fail(err, QVK_ERROR_ARGUMENT,
                        "%s has values up to %.3g, beyond %s's range (they would become inf)",
                        what, fabs(v), qvk_dtype_name(declared));
      }
      float f = (float)d;
      if (out != NULL) memcpy(&out[i], &f, 4);
    }
    return QVK_OK;
  }
  if (is_float(src)) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT,
                    "%s has dtype %s, expected %s; convert it explicitly (qopt casts inputs "
                    "only when no value changes)",
                    what, qvk_dtype_name(src), qvk_dtype_name(declared));
  }
  /* integer or boolean source */
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < numel; i++) {
    int64_t v = get_i(data, src, i);
    if (i == 0 || v < lo) lo = v;
    if (i == 0 || v > hi) hi = v;
  }
  if (src != declared && src != QVK_BOOL && numel > 0) {
    if (declared == QVK_BOOL && (lo < 0 || hi > 1)) {
      return qvk_fail(err, QVK_ERROR_ARGUMENT,
                      "%s has dtype %s, expected bool; convert it explicitly (qopt casts inputs "
                      "only when no value changes)",
                      what, qvk_dtype_name(src));
    }
    if (is_float(declared)) {
      int64_t exact = declared == QVK_FLOAT16 ? 1 << 11 : declared == QVK_FLOAT32 ? 1 << 24
                                                                                 : INT64_C(1) << 53;
      if ((lo < 0 ? -(double)lo : (double)lo) > (double)exact || (double)hi > (double)exact) {
        return qvk_fail(err, QVK_ERROR_ARGUMENT,
                        "%s has integer values beyond %lld, which %s cannot hold exactly; pass "
                        "it as a float array",
                        what, (long long)exact, qvk_dtype_name(declared));
      }
    } else if (declared != QVK_BOOL) {
      int64_t dlo, dhi;
      int_range(declared, &dlo, &dhi);
      if (lo < dlo || hi > dhi) {
        return qvk_fail(err, QVK_ERROR_ARGUMENT,
                        "%s has values in [%lld, %lld], outside %s's range [%lld, %lld]: they "
                        "would change in the cast",
                        what, (long long)lo, (long long)hi, qvk_dtype_name(declared),
                        (long long)dlo, (long long)dhi);
      }
    }
  }
  if (is_float(declared)) {
    if (out == NULL) return QVK_OK; /* checked only */
    for (int64_t i = 0; i < numel; i++) {
      float f = (float)as_declared_float((double)get_i(data, src, i), declared);
      memcpy(&out[i], &f, 4);
    }
    return QVK_OK;
  }
  if (declared == QVK_BOOL || src == QVK_BOOL) {
    /* booleans travel as 0/1 (a bool source into an integer dtype is 0/1 too) */
  } else if (numel > 0 && (lo < INT32_MIN || hi > INT32_MAX)) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT,
                    "input %zu holds values in [%lld, %lld], outside int32: Vulkan buffers "
                    "carry integers as int32",
                    index, (long long)lo, (long long)hi);
  }
  if (out == NULL) return QVK_OK; /* checked only */
  for (int64_t i = 0; i < numel; i++) {
    int64_t v = get_i(data, src, i);
    int32_t w = (int32_t)(declared == QVK_BOOL ? v != 0 : v);
    memcpy(&out[i], &w, 4);
  }
  return QVK_OK;
}

void qvk_from_abi(const void *words, qvk_dtype dtype, int64_t numel, void *out) {
  const char *w = words;
  char *o = out;
  for (int64_t i = 0; i < numel; i++) {
    if (is_float(dtype)) {
      float f;
      memcpy(&f, w + 4 * i, 4);
      if (dtype == QVK_FLOAT32) {
        memcpy(o + 4 * i, &f, 4);
      } else if (dtype == QVK_FLOAT64) {
        double d = f;
        memcpy(o + 8 * i, &d, 8);
      } else {
        uint16_t h = double_to_half(f);
        memcpy(o + 2 * i, &h, 2);
      }
      continue;
    }
    int32_t v;
    memcpy(&v, w + 4 * i, 4);
    switch (dtype) {
      case QVK_INT8: o[i] = (char)(int8_t)(uint8_t)(uint32_t)v; break;
      case QVK_UINT8: o[i] = (char)(uint8_t)(uint32_t)v; break;
      case QVK_BOOL: o[i] = v != 0; break;
      case QVK_INT16: {
        int16_t s = (int16_t)(uint16_t)(uint32_t)v;
        memcpy(o + 2 * i, &s, 2);
        break;
      }
      case QVK_INT64: {
        int64_t l = v;
        memcpy(o + 8 * i, &l, 8);
        break;
      }
      default: memcpy(o + 4 * i, &v, 4); break;
    }
  }
}

/* `name` matched against [A-Za-z_]\w*?__\d+(_\d+)* (qopt/dialects/signature.py): the
   method part's length (the shortest prefix that works), or NULL. */
const char *qvk_variant_method(const char *name, size_t *len) {
  size_t n = strlen(name);
  if (n == 0 || !(name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') ||
                  (name[0] >= 'a' && name[0] <= 'z'))) {
    return NULL;
  }
  for (size_t k = 1; k + 2 < n; k++) {
    char c = name[k - 1];
    int word = c == '_' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
               (c >= 'a' && c <= 'z');
    if (!word) return NULL;
    if (name[k] != '_' || name[k + 1] != '_') continue;
    const char *rest = name + k + 2;
    int ok = 1, digits = 0;
    for (const char *p = rest; *p; p++) {
      if (*p >= '0' && *p <= '9') {
        digits++;
      } else if (*p == '_' && digits > 0) {
        digits = 0;
      } else {
        ok = 0;
        break;
      }
    }
    if (ok && digits > 0) {
      *len = k;
      return name;
    }
  }
  return NULL;
}
