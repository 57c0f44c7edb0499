/* Reading and checking a `.qvk` bundle (docs/qvk-format.md; the Python reader is
   qopt/backends/vulkan/bundle.py `load_bundle` + `check_program`): every structural check
   of the Python loader, in the same order, and each kernel checked against the catalogue
   this runtime was built with (its SPIR-V byte for byte). The per-dispatch buffer
   extents and workgroup counts of each dispatch are checked with the kernel's own rules
   (`KernelSpec.extents` / `workgroups`, translated into C at build time by
   runtime/gen_rules.py); robustBufferAccess (session.c) stays as a second line. */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAGIC "QVKB"
#define MIN_VERSION 3u
#define MAX_VERSION 4u
#define MAX_WHAT 400
#define MAX_NAME 400
#define MAX_WORKGROUPS 65535
#define JSON_DEPTH 64

qvk_status qvk_fail(qvk_error *err, qvk_status status, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    for (char *p = err->message; *p; p++) {
      if (*p == '\n' || *p == '\r') *p = ' '; /* one line */
    }
    err->status = status;
  }
  return status;
}

const char *qvk_runtime_qopt_version(void) { return qvk_cat_qopt_version; }

/* ----- JSON helpers (Python's _int, _record, _list) ------------------------------------ */

typedef struct {
  const char *path;
  qvk_error *err;
  const qvk_cat_limits *limits;
} ctx_t;

#define FAIL(...) qvk_fail(c->err, QVK_ERROR_BUNDLE, __VA_ARGS__)
#define TRY(expr)                        \
  do {                                   \
    qvk_status s_ = (expr);              \
    if (s_ != QVK_OK) return s_;         \
  } while (0)

static int is_int(json_object *v) { return v != NULL && json_object_get_type(v) == json_type_int; }

#define NO_HIGH INT64_MAX

/* a JSON integer >= low (and <= high unless high is NO_HIGH: high < low refuses every
   value, as Python's _int does for an empty range); int64 overflow counts as too big */
static qvk_status get_int(ctx_t *c, json_object *v, const char *what, int64_t low, int64_t high,
                          int64_t *out) {
  *out = 0;
  if (!is_int(v)) {
    const char *text = v == NULL ? "None" : json_object_to_json_string(v);
    return FAIL("%s must be an integer >= %" PRId64 ", got '%.40s'", what, low, text);
  }
  int64_t x = json_object_get_int64(v);
  if (x < low) return FAIL("%s must be an integer >= %" PRId64 ", got %" PRId64, what, low, x);
  if (high != NO_HIGH && x > high) return FAIL("%s must be at most %" PRId64 ", got %" PRId64, what, high, x);
  if (x == INT64_MAX) return FAIL("%s is too large", what);
  *out = x;
  return QVK_OK;
}

static json_object *member(json_object *obj, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(obj, key, &v)) return NULL;
  return v;
}

static int has(json_object *obj, const char *key) { return json_object_object_get_ex(obj, key, NULL); }

/* an object holding at least `keys` (NULL-terminated); `exact`: no other key */
static qvk_status get_record(ctx_t *c, json_object *v, const char *what, const char *const *keys,
                             int exact) {
  int ok = v != NULL && json_object_get_type(v) == json_type_object;
  size_t n = 0;
  for (const char *const *k = keys; ok && *k; k++, n++) ok = has(v, *k);
  if (!ok) {
    char list[300] = "";
    /* keys sorted as Python prints them */
    const char *sorted[16];
    size_t m = 0;
    for (const char *const *k = keys; *k && m < 16; k++) sorted[m++] = *k;
    for (size_t i = 0; i < m; i++) {
      for (size_t j = i + 1; j < m; j++) {
        if (strcmp(sorted[j], sorted[i]) < 0) {
          const char *t = sorted[i];
          sorted[i] = sorted[j];
          sorted[j] = t;
        }
      }
    }
    for (size_t i = 0; i < m; i++) {
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", sorted[i]);
    }
    return FAIL("%s must be an object with %s", what, list);
  }
  if (exact) {
    json_object_object_foreach(v, key, val) {
      (void)val;
      int known = 0;
      for (const char *const *k = keys; *k; k++) known |= strcmp(*k, key) == 0;
      if (!known) {
        return FAIL("'%s' has a corrupted manifest: %s got an unexpected keyword argument '%.40s'",
                    c->path, what, key);
      }
    }
  }
  return QVK_OK;
}

static qvk_status get_list(ctx_t *c, json_object *v, const char *what, size_t *n) {
  *n = 0;
  if (v == NULL || json_object_get_type(v) != json_type_array) return FAIL("%s must be a list", what);
  *n = json_object_array_length(v);
  return QVK_OK;
}

static const char *str_of(json_object *v, size_t *len) {
  *len = 0;
  if (v == NULL || json_object_get_type(v) != json_type_string) return NULL;
  *len = (size_t)json_object_get_string_len(v);
  return json_object_get_string(v);
}

static int str_eq(json_object *v, const char *s) {
  size_t len;
  const char *t = str_of(v, &len);
  return t != NULL && len == strlen(s) && memcmp(t, s, len) == 0;
}

/* Python's str.isprintable() on UTF-8 text (json-c validated it), at most `max_chars`
   code points: no control, format, surrogate, private-use, line/paragraph separator or
   space other than ' ' (the Unicode categories Python treats as unprintable, for the
   code points a name can hold; unassigned code points are not tabulated here). */
static int printable(const char *s, size_t len, size_t min_chars, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < len;) {
    unsigned char b = (unsigned char)s[i];
    uint32_t cp;
    size_t n;
    if (b < 0x80) { cp = b; n = 1; }
    else if ((b & 0xe0) == 0xc0) { cp = b & 0x1f; n = 2; }
    else if ((b & 0xf0) == 0xe0) { cp = b & 0x0f; n = 3; }
    else if ((b & 0xf8) == 0xf0) { cp = b & 0x07; n = 4; }
    else return 0;
    if (i + n > len) return 0;
    for (size_t k = 1; k < n; k++) cp = cp << 6 | ((unsigned char)s[i + k] & 0x3f);
    i += n;
    chars++;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) return 0;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f)) return 0;
    if ((cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff) return 0;
    if ((cp >= 0xd800 && cp <= 0xf8ff) || (cp >= 0xfff9 && cp <= 0xfffb)) return 0;
    if (cp >= 0xf0000 || (cp & 0xfffe) == 0xfffe || (cp >= 0xe0000 && cp <= 0xe0fff)) return 0;
    if (cp == 0x061c || cp == 0x180e || (cp >= 0x0600 && cp <= 0x0605) || cp == 0x06dd) return 0;
  }
  return chars >= min_chars && chars <= max_chars;
}

static char *dup_n(const char *s, size_t n) {
  char *out = malloc(n + 1);
  if (out != NULL) {
    memcpy(out, s, n);
    out[n] = '\0';
  }
  return out;
}

static qvk_status get_name(ctx_t *c, json_object *v, const char *what, char **out) {
  size_t len;
  const char *s = str_of(v, &len);
  if (s == NULL || !printable(s, len, 1, MAX_NAME)) {
    return FAIL("%s must be one printable line of 1 to %d characters", what, MAX_NAME);
  }
  *out = dup_n(s, len);
  if (*out == NULL) return qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
  return QVK_OK;
}

static qvk_status check_limit(ctx_t *c, const char *what, int64_t value, long long bound,
                              const char *name) {
  if (value > bound) {
    return FAIL("%s is %" PRId64 ", over qopt's limit %s=%lld for untrusted inputs; if the file "
                "is genuine, raise it with --limits %s=N (Python: limits=qopt.Limits(...))",
                what, value, name, bound, name);
  }
  return QVK_OK;
}

/* shape list + dtype: rank and elements within limits */
static qvk_status get_shape(ctx_t *c, json_object *v, const char *what, int *rank, int64_t *shape,
                            int64_t *numel, int check_elements) {
  size_t n;
  char buf[300];
  snprintf(buf, sizeof buf, "%s's shape", what);
  TRY(get_list(c, v, buf, &n));
  snprintf(buf, sizeof buf, "%s's rank", what);
  TRY(check_limit(c, buf, (int64_t)n, c->limits->max_tensor_rank, "max_tensor_rank"));
  if (n > QVK_MAX_RANK) return FAIL("%s has rank %zu (this runtime holds %d)", what, n, QVK_MAX_RANK);
  int64_t count = 1;
  int big = 0;
  for (size_t i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "%s's dimension", what);
    int64_t d;
    TRY(get_int(c, json_object_array_get_idx(v, i), buf, 0, NO_HIGH, &d));
    shape[i] = d;
    if (d != 0 && count > INT64_MAX / d) big = 1;
    else count *= d;
  }
  for (size_t i = 0; i < n; i++) if (shape[i] == 0) { big = 0; count = 0; }
  if (check_elements) {
    snprintf(buf, sizeof buf, "%s's elements", what);
    if (big) return FAIL("%s's elements overflow", what);
    TRY(check_limit(c, buf, count, c->limits->max_tensor_elements, "max_tensor_elements"));
  } else if (big) {
    count = INT64_MAX;
  }
  *rank = (int)n;
  *numel = count;
  return QVK_OK;
}

static qvk_status get_dtype(ctx_t *c, json_object *v, const char *what, qvk_dtype *out) {
  size_t len;
  const char *s = str_of(v, &len);
  if (s == NULL || !qvk_dtype_parse(s, len, out)) {
    const char *text = v == NULL ? "None" : (s != NULL ? s : json_object_to_json_string(v));
    return FAIL("%s: dtype '%.20s' is not a tensor dtype", what, text);
  }
  return QVK_OK;
}

/* ----- freeing ------------------------------------------------------------------------ */

void qvk_bundle_close(qvk_bundle *b) {
  if (b == NULL) return;
  for (size_t i = 0; i < b->n_kernels; i++) free(b->kernels[i].spec);
  free(b->kernels);
  free(b->constants);
  for (size_t i = 0; i < b->n_buffers; i++) free(b->buffers[i].what);
  free(b->buffers);
  free(b->slots);
  free(b->inputs);
  free(b->outputs);
  for (size_t i = 0; i < b->n_steps; i++) {
    free(b->steps[i].buffers);
    free(b->steps[i].push);
  }
  free(b->steps);
  for (size_t i = 0; i < b->n_states; i++) free(b->states[i].name);
  free(b->states);
  for (size_t i = 0; i < b->n_methods; i++) free(b->methods[i].name);
  free(b->methods);
  for (size_t i = 0; i < b->n_logical; i++) free(b->logical[i]);
  free(b->logical);
  free(b->qopt_version);
  free(b->path);
  free(b->data);
  free(b);
}

/* ----- parsing ------------------------------------------------------------------------ */

static const qvk_cat_kernel *find_kernel(const char *name, size_t len) {
  for (size_t i = 0; i < qvk_cat_kernel_count; i++) {
    const qvk_cat_kernel *k = &qvk_cat_kernels[i];
    if (strlen(k->name) == len && memcmp(k->name, name, len) == 0) return k;
  }
  return NULL;
}

static qvk_status blob(ctx_t *c, json_object *rec, const char *what, const uint8_t *blobs,
                       size_t n_blobs, const uint8_t **out, size_t *size) {
  static const char *const keys[] = {"offset", "size", "sha256", NULL};
  char buf[200];
  snprintf(buf, sizeof buf, "'%s': %s's blob", c->path, what);
  TRY(get_record(c, rec, buf, keys, 0));
  int64_t lo, n;
  snprintf(buf, sizeof buf, "'%s': %s's offset", c->path, what);
  TRY(get_int(c, member(rec, "offset"), buf, 0, NO_HIGH, &lo));
  snprintf(buf, sizeof buf, "'%s': %s's size", c->path, what);
  TRY(get_int(c, member(rec, "size"), buf, 0, NO_HIGH, &n));
  if ((uint64_t)lo > n_blobs || (uint64_t)n > n_blobs - (uint64_t)lo) {
    return FAIL("'%s' is truncated (%s)", c->path, what);
  }
  char hex[65];
  qvk_sha256_hex(blobs + lo, (size_t)n, hex);
  if (!str_eq(member(rec, "sha256"), hex)) {
    return FAIL("'%s' is corrupted: the hash of %s does not match", c->path, what);
  }
  *out = blobs + lo;
  *size = (size_t)n;
  return QVK_OK;
}


static void *xcalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

#define ALLOC(ptr, n)                                                                   \
  do {                                                                                  \
    (ptr) = xcalloc((n), sizeof *(ptr));                                                \
    if ((ptr) == NULL) return qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");     \
  } while (0)

typedef struct {
  json_object *kernels, *constants, *buffers, *slots, *inputs, *outputs, *steps, *states, *methods,
      *host_calls;
} manifest_t;

static qvk_status parse_kernels(ctx_t *c, qvk_bundle *b, manifest_t *m, const uint8_t *blobs,
                                size_t n_blobs) {
  static const char *const keys[] = {"kernel", "glsl", "spec", "spirv", NULL};
  char buf[300];
  size_t n;
  snprintf(buf, sizeof buf, "'%s': kernels", c->path);
  TRY(get_list(c, m->kernels, buf, &n));
  ALLOC(b->kernels, n);
  for (size_t i = 0; i < n; i++) {
    json_object *k = json_object_array_get_idx(m->kernels, i);
    snprintf(buf, sizeof buf, "'%s': kernel %zu", c->path, i);
    TRY(get_record(c, k, buf, keys, 0));
    size_t name_len, glsl_len;
    const char *name = str_of(member(k, "kernel"), &name_len);
    const char *glsl = str_of(member(k, "glsl"), &glsl_len);
    if (name == NULL || glsl == NULL) return FAIL("'%s': kernel %zu's names must be strings", c->path, i);
    json_object *spec = member(k, "spec");
    if (spec == NULL || json_object_get_type(spec) != json_type_object) {
      snprintf(buf, sizeof buf, "'%s': kernel %zu's spec", c->path, i);
      return FAIL("%s must be an object with ", buf);
    }
    const uint8_t *code;
    size_t code_len;
    snprintf(buf, sizeof buf, "kernel %zu", i);
    TRY(blob(c, member(k, "spirv"), buf, blobs, n_blobs, &code, &code_len));
    b->n_kernels = i + 1;
    /* the catalogue: known kernel, its source, its specialization values, its SPIR-V */
    const qvk_cat_kernel *cat = find_kernel(name, name_len);
    if (cat == NULL) {
      return FAIL("'%s': kernel %zu: '%.40s' is not one of the Vulkan kernels of this runtime "
                  "(built from qopt %s; the bundle was written by qopt %s): run it with a qvk "
                  "runtime built from that qopt, or recompile the bundle with qopt %s",
                  c->path, i, name, qvk_cat_qopt_version, b->qopt_version, qvk_cat_qopt_version);
    }
    if (strlen(cat->glsl) != glsl_len || memcmp(cat->glsl, glsl, glsl_len) != 0) {
      return FAIL("'%s': kernel %zu: %s is compiled from %s, not %.40s", c->path, i, cat->name,
                  cat->glsl, glsl);
    }
    b->kernels[i].cat = cat;
    ALLOC(b->kernels[i].spec, cat->n_spec);
    for (size_t s = 0; s < cat->n_spec; s++) b->kernels[i].spec[s] = cat->spec[s].def;
    json_object_object_foreach(spec, key, val) {
      size_t s = 0;
      while (s < cat->n_spec && strcmp(cat->spec[s].name, key) != 0) s++;
      if (s == cat->n_spec) {
        return FAIL("'%s': kernel %zu: kernel %s has no specialization constant %.40s", c->path, i,
                    cat->name, key);
      }
      const qvk_cat_spec *sp = &cat->spec[s];
      if (!sp->has_bounds) {
        return FAIL("'%s': kernel %zu: kernel %s: specialization constant %s has no range",
                    c->path, i, cat->name, key);
      }
      if (!is_int(val)) {
        return FAIL("'%s': kernel %zu: kernel %s: %s must be an integer, got %.40s", c->path, i,
                    cat->name, key, json_object_to_json_string(val));
      }
      int64_t x = json_object_get_int64(val);
      if (x < sp->lo || x > sp->hi || x == INT64_MAX) {
        return FAIL("'%s': kernel %zu: kernel %s: specialization constant %s = %" PRId64
                    " is outside [%lld, %lld]",
                    c->path, i, cat->name, key, x, sp->lo, sp->hi);
      }
      b->kernels[i].spec[s] = (int32_t)x;
    }
    const qvk_cat_source *src = &qvk_cat_sources[cat->source];
    if (code_len != src->nbytes || memcmp(code, src->words, code_len) != 0) {
      return FAIL("'%s': kernel %zu (%s): its SPIR-V is not this runtime's compilation of %s "
                  "(built from qopt %s; the bundle was written by qopt %s): recompile the bundle "
                  "with `qopt-opt ... -t vkbundle` of qopt %s",
                  c->path, i, cat->name, cat->glsl, qvk_cat_qopt_version, b->qopt_version,
                  qvk_cat_qopt_version);
    }
  }
  return QVK_OK;
}

static qvk_status parse_constants(ctx_t *c, qvk_bundle *b, manifest_t *m, const uint8_t *blobs,
                                  size_t n_blobs) {
  static const char *const keys[] = {"dtype", NULL};
  char buf[300];
  size_t n;
  snprintf(buf, sizeof buf, "'%s': constants", c->path);
  TRY(get_list(c, m->constants, buf, &n));
  ALLOC(b->constants, n);
  for (size_t i = 0; i < n; i++) {
    json_object *k = json_object_array_get_idx(m->constants, i);
    snprintf(buf, sizeof buf, "'%s': constant %zu", c->path, i);
    TRY(get_record(c, k, buf, keys, 0));
    json_object *dt = member(k, "dtype");
    int code = str_eq(dt, "float32") ? 0 : str_eq(dt, "int32") ? 1 : str_eq(dt, "uint32") ? 2 : -1;
    if (code < 0) {
      size_t len;
      const char *s = str_of(dt, &len);
      return FAIL("'%s': constant %zu has dtype '%.20s'", c->path, i,
                  s != NULL ? s : json_object_to_json_string(dt));
    }
    snprintf(buf, sizeof buf, "constant %zu", i);
    TRY(blob(c, k, buf, blobs, n_blobs, &b->constants[i].bytes, &b->constants[i].nbytes));
    if (b->constants[i].nbytes % 4) {
      return FAIL("'%s': constant %zu is not a whole number of words", c->path, i);
    }
    b->constants[i].dtype = code;
    b->n_constants = i + 1;
  }
  return QVK_OK;
}

/* The records' shapes as `load_bundle` builds its dataclasses (missing or unknown keys). */
static qvk_status parse_records(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  char buf[300];
  size_t n;
  static const char *const tkeys[] = {"buffer", "shape", "dtype", NULL};
  static const char *const tall[] = {"buffer", "shape", "dtype", "index", NULL};
  static const char *const skeys[] = {"kernel", "buffers", "push", "groups", NULL};
  static const char *const ekeys[] = {"name", "buffer", "shape", "dtype", "initial", NULL};
  static const char *const mkeys[] = {"name", "steps", "inputs", "outputs", NULL};
  static const char *const hkeys[] = {"method", "at", "reads", "writes", "ir", "ops", NULL};
  struct {
    json_object *list;
    const char *name, *item;
    const char *const *keys, *const *all;
  } groups[] = {
      {m->inputs, "inputs", "input", tkeys, tall},
      {m->outputs, "outputs", "output", tkeys, tall},
      {m->steps, "dispatches", "dispatch", skeys, skeys},
      {m->states, "states", "state", ekeys, ekeys},
      {m->methods, "methods", "method", mkeys, mkeys},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    snprintf(buf, sizeof buf, "'%s': %s", c->path, groups[g].name);
    TRY(get_list(c, groups[g].list, buf, &n));
    for (size_t i = 0; i < n; i++) {
      json_object *v = json_object_array_get_idx(groups[g].list, i);
      snprintf(buf, sizeof buf, "'%s': %s", c->path, groups[g].item);
      TRY(get_record(c, v, buf, groups[g].keys, 0));
      TRY(get_record(c, v, buf, groups[g].all, 1));
    }
  }
  if (m->host_calls != NULL && b->version < 4) {
    return FAIL("'%s': host segments need a version 4 bundle", c->path);
  }
  if (m->host_calls != NULL) {
    snprintf(buf, sizeof buf, "'%s': host segments", c->path);
    TRY(get_list(c, m->host_calls, buf, &n));
    for (size_t i = 0; i < n; i++) {
      json_object *v = json_object_array_get_idx(m->host_calls, i);
      snprintf(buf, sizeof buf, "'%s': host segment", c->path);
      TRY(get_record(c, v, buf, hkeys, 0));
      TRY(get_record(c, v, buf, hkeys, 1));
    }
  }
  return QVK_OK;
}

/* ----- check_program ------------------------------------------------------------------ */

static qvk_status check_methods(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  char buf[300];
  size_t n;
  TRY(get_list(c, m->methods, "methods", &n));
  if (n == 0) return FAIL("'%s': the bundle has no method", c->path);
  ALLOC(b->methods, n);
  size_t totals[3] = {json_object_array_length(m->steps), json_object_array_length(m->inputs),
                      json_object_array_length(m->outputs)};
  int64_t ends[3] = {0, 0, 0};
  static const char *const fields[3] = {"steps", "inputs", "outputs"};
  for (size_t i = 0; i < n; i++) {
    json_object *v = json_object_array_get_idx(m->methods, i);
    qvk_method_rec *rec = &b->methods[i];
    snprintf(buf, sizeof buf, "'%s': method %zu's name", c->path, i);
    TRY(get_name(c, member(v, "name"), buf, &rec->name));
    b->n_methods = i + 1;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(b->methods[j].name, rec->name) == 0) {
        return FAIL("'%s': method %zu: a second method named '%s'", c->path, i, rec->name);
      }
    }
    for (int k = 0; k < 3; k++) {
      json_object *bounds = member(v, fields[k]);
      size_t len;
      snprintf(buf, sizeof buf, "'%s': method %zu's %s", c->path, i, fields[k]);
      TRY(get_list(c, bounds, buf, &len));
      if (len != 2) return FAIL("%s must be [start, stop]", buf);
      int64_t lo = 0, hi = 0;
      snprintf(buf, sizeof buf, "'%s': method %zu's %s start", c->path, i, fields[k]);
      TRY(get_int(c, json_object_array_get_idx(bounds, 0), buf, ends[k], ends[k], &lo));
      snprintf(buf, sizeof buf, "'%s': method %zu's %s stop", c->path, i, fields[k]);
      TRY(get_int(c, json_object_array_get_idx(bounds, 1), buf, lo, (int64_t)totals[k], &hi));
      ends[k] = hi;
      size_t *range = k == 0 ? rec->steps : k == 1 ? rec->inputs : rec->outputs;
      range[0] = (size_t)lo;
      range[1] = (size_t)hi;
    }
  }
  for (int k = 0; k < 3; k++) {
    if ((size_t)ends[k] != totals[k]) {
      return FAIL("'%s': the methods do not cover every step, input and output", c->path);
    }
  }
  return QVK_OK;
}

static qvk_status check_buffers(ctx_t *c, qvk_bundle *b, manifest_t *m, int64_t *device_bytes) {
  char buf[300];
  size_t n;
  static const char *const keys[] = {"kind", "nbytes", NULL};
  TRY(get_list(c, m->slots, "slots", &n));
  ALLOC(b->slots, n);
  b->n_slots = n;
  for (size_t i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "'%s': slot %zu's size", c->path, i);
    TRY(get_int(c, json_object_array_get_idx(m->slots, i), buf, 0, NO_HIGH, &b->slots[i]));
    *device_bytes += b->slots[i] > 4 ? b->slots[i] : 4;
  }
  TRY(get_list(c, m->buffers, "buffers", &n));
  ALLOC(b->buffers, n);
  b->n_buffers = n;
  for (size_t i = 0; i < n; i++) {
    json_object *v = json_object_array_get_idx(m->buffers, i);
    qvk_buffer_rec *r = &b->buffers[i];
    snprintf(buf, sizeof buf, "'%s': buffer %zu", c->path, i);
    TRY(get_record(c, v, buf, keys, 0));
    snprintf(buf, sizeof buf, "'%s': buffer %zu's nbytes", c->path, i);
    TRY(get_int(c, member(v, "nbytes"), buf, 0, NO_HIGH, &r->nbytes));
    if (r->nbytes % 4) {
      return FAIL("'%s': buffer %zu: nbytes %" PRId64 " is not a whole number of 4-byte words",
                  c->path, i, r->nbytes);
    }
    json_object *kind = member(v, "kind");
    int64_t big = r->nbytes > 4 ? r->nbytes : 4;
    if (str_eq(kind, "constant")) {
      r->kind = KIND_CONSTANT;
      snprintf(buf, sizeof buf, "'%s': buffer %zu's constant", c->path, i);
      TRY(get_int(c, member(v, "constant"), buf, 0, (int64_t)b->n_constants - 1, &r->constant));
      if ((int64_t)b->constants[r->constant].nbytes != r->nbytes) {
        return FAIL("'%s': buffer %zu: constant %" PRId64 " holds %zu bytes", c->path, i,
                    r->constant, b->constants[r->constant].nbytes);
      }
    } else if (str_eq(kind, "slot")) {
      r->kind = KIND_SLOT;
      snprintf(buf, sizeof buf, "'%s': buffer %zu's slot", c->path, i);
      TRY(get_int(c, member(v, "slot"), buf, 0, (int64_t)b->n_slots - 1, &r->slot));
      int64_t held = b->slots[r->slot] > 4 ? b->slots[r->slot] : 4;
      if (held < r->nbytes) {
        return FAIL("'%s': buffer %zu: slot %" PRId64 " holds fewer than its %" PRId64 " bytes",
                    c->path, i, r->slot, r->nbytes);
      }
    } else if (str_eq(kind, "input")) {
      r->kind = KIND_INPUT;
      snprintf(buf, sizeof buf, "'%s': buffer %zu's method", c->path, i);
      TRY(get_int(c, member(v, "method"), buf, 0, (int64_t)b->n_methods - 1, &r->method));
      qvk_method_rec *mm = &b->methods[r->method];
      int64_t count = (int64_t)(mm->inputs[1] - mm->inputs[0]);
      snprintf(buf, sizeof buf, "'%s': buffer %zu's input index", c->path, i);
      TRY(get_int(c, member(v, "index"), buf, 0, count - 1, &r->index));
      *device_bytes += big;
    } else if (str_eq(kind, "alloc") || str_eq(kind, "state")) {
      r->kind = str_eq(kind, "alloc") ? KIND_ALLOC : KIND_STATE;
      r->state = -1;
      json_object *st = member(v, "state");
      if (r->kind == KIND_STATE && is_int(st)) r->state = json_object_get_int64(st);
      *device_bytes += big;
    } else if (str_eq(kind, "status")) {
      r->kind = KIND_STATUS;
      if (r->nbytes != 4) {
        return FAIL("'%s': buffer %zu: a status buffer holds 4 bytes, not %" PRId64, c->path, i,
                    r->nbytes);
      }
      size_t len;
      const char *what = str_of(member(v, "what"), &len);
      if (what == NULL || (len > 0 && !printable(what, len, 0, MAX_WHAT))) {
        return FAIL("'%s': buffer %zu: a status buffer's 'what' must be one printable line of at "
                    "most %d characters",
                    c->path, i, MAX_WHAT);
      }
      r->what = dup_n(what, len);
      if (r->what == NULL) return qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
      *device_bytes += 4;
    } else {
      size_t len;
      const char *s = str_of(kind, &len);
      return FAIL("'%s': buffer %zu: unknown kind '%.20s'", c->path, i,
                  s != NULL ? s : json_object_to_json_string(kind));
    }
  }
  return QVK_OK;
}

static qvk_status check_states(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  char buf[300], what[200];
  size_t n = json_object_array_length(m->states);
  ALLOC(b->states, n);
  for (size_t i = 0; i < n; i++) {
    json_object *v = json_object_array_get_idx(m->states, i);
    qvk_state_rec *s = &b->states[i];
    snprintf(what, sizeof what, "'%s': state %zu", c->path, i);
    snprintf(buf, sizeof buf, "%s's name", what);
    TRY(get_name(c, member(v, "name"), buf, &s->name));
    b->n_states = i + 1;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(b->states[j].name, s->name) == 0) {
        return FAIL("%s: a second state named '%s'", what, s->name);
      }
    }
    snprintf(buf, sizeof buf, "%s's buffer", what);
    TRY(get_int(c, member(v, "buffer"), buf, 0, (int64_t)b->n_buffers - 1, &s->buffer));
    qvk_buffer_rec *r = &b->buffers[s->buffer];
    int owned = 0;
    for (size_t j = 0; j < i; j++) owned |= b->states[j].buffer == s->buffer;
    if (r->kind != KIND_STATE || r->state != (int64_t)i || owned) {
      return FAIL("%s: buffer %" PRId64 " is not its state buffer", what, s->buffer);
    }
    TRY(get_dtype(c, member(v, "dtype"), what, &s->dtype));
    TRY(get_shape(c, member(v, "shape"), what, &s->rank, s->shape, &s->numel, 1));
    int64_t nbytes = 4 * (s->numel > 1 ? s->numel : 1);
    if (r->nbytes != nbytes) {
      return FAIL("%s: its buffer %" PRId64 " holds %" PRId64 " bytes, a %s state needs %" PRId64
                  " bytes",
                  what, s->buffer, r->nbytes, qvk_dtype_name(s->dtype), nbytes);
    }
    json_object *init = member(v, "initial");
    s->initial = -1;
    if (init != NULL && json_object_get_type(init) != json_type_null) {
      snprintf(buf, sizeof buf, "%s's initial value", what);
      TRY(get_int(c, init, buf, 0, (int64_t)b->n_constants - 1, &s->initial));
      const qvk_constant_rec *k = &b->constants[s->initial];
      int want = s->dtype == QVK_FLOAT32 || s->dtype == QVK_FLOAT16 || s->dtype == QVK_FLOAT64 ? 0 : 1;
      if ((int64_t)k->nbytes != nbytes || k->dtype != want) {
        return FAIL("%s: its initial value (constant %" PRId64 ": %zu bytes of %s) is not %" PRId64
                    " bytes of %s",
                    what, s->initial, k->nbytes,
                    k->dtype == 0 ? "float32" : k->dtype == 1 ? "int32" : "uint32", nbytes,
                    want == 0 ? "float32" : "int32");
      }
    }
  }
  for (size_t i = 0; i < b->n_buffers; i++) {
    if (b->buffers[i].kind != KIND_STATE) continue;
    int owned = 0;
    for (size_t j = 0; j < b->n_states; j++) owned |= b->states[j].buffer == (int64_t)i;
    if (!owned) return FAIL("'%s': buffer %zu is a state buffer of no state", c->path, i);
  }
  return QVK_OK;
}

static qvk_status check_tensor(ctx_t *c, qvk_bundle *b, json_object *v, const char *what,
                               qvk_tensor_rec *t) {
  char buf[300];
  snprintf(buf, sizeof buf, "%s's buffer", what);
  TRY(get_int(c, member(v, "buffer"), buf, 0, (int64_t)b->n_buffers - 1, &t->buffer));
  TRY(get_dtype(c, member(v, "dtype"), what, &t->dtype));
  TRY(get_shape(c, member(v, "shape"), what, &t->rank, t->shape, &t->numel, 0));
  int64_t words = (b->buffers[t->buffer].nbytes > 4 ? b->buffers[t->buffer].nbytes : 4) / 4;
  if ((t->numel > 1 ? t->numel : 1) > words) {
    return FAIL("%s: %" PRId64 " elements do not fit buffer %" PRId64 " (%" PRId64 " words)", what,
                t->numel, t->buffer, words);
  }
  return QVK_OK;
}

static qvk_status check_io(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  char what[200], buf[300];
  size_t n_in = json_object_array_length(m->inputs), n_out = json_object_array_length(m->outputs);
  ALLOC(b->inputs, n_in);
  ALLOC(b->outputs, n_out);
  b->n_inputs = n_in;
  b->n_outputs = n_out;
  for (size_t mi = 0; mi < b->n_methods; mi++) {
    qvk_method_rec *method = &b->methods[mi];
    for (size_t i = method->inputs[0]; i < method->inputs[1]; i++) {
      size_t position = i - method->inputs[0];
      json_object *v = json_object_array_get_idx(m->inputs, i);
      qvk_tensor_rec *t = &b->inputs[i];
      snprintf(what, sizeof what, "'%s': input %zu", c->path, i);
      TRY(check_tensor(c, b, v, what, t));
      qvk_buffer_rec *r = &b->buffers[t->buffer];
      int64_t index = 0;
      json_object *idx = member(v, "index");
      snprintf(buf, sizeof buf, "%s's index", what);
      if (idx != NULL) TRY(get_int(c, idx, buf, 0, (int64_t)position, &index));
      if (r->kind != KIND_INPUT || r->index != index || r->method != (int64_t)mi ||
          index != (int64_t)position) {
        return FAIL("%s: buffer %" PRId64 " is not the upload buffer of input %" PRId64
                    " of method %s",
                    what, t->buffer, index, method->name);
      }
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    json_object *v = json_object_array_get_idx(m->outputs, i);
    snprintf(what, sizeof what, "'%s': output %zu", c->path, i);
    TRY(check_tensor(c, b, v, what, &b->outputs[i]));
    if (b->buffers[b->outputs[i].buffer].kind == KIND_STATUS) {
      return FAIL("'%s': output %zu: buffer %" PRId64 " is a status buffer", c->path, i,
                  b->outputs[i].buffer);
    }
  }
  return QVK_OK;
}

static qvk_status check_push(ctx_t *c, const qvk_cat_kernel *k, json_object *push, const char *what,
                             uint32_t *words) {
  /* exactly the kernel's push constants, each representable in its kind */
  size_t given = (size_t)json_object_object_length(push);
  int same = given == k->n_push;
  for (size_t i = 0; same && i < k->n_push; i++) same = has(push, k->push[i].name);
  if (!same) {
    char names[600] = "";
    for (size_t i = 0; i < k->n_push; i++) {
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s'%s'", i ? ", " : "", k->push[i].name);
    }
    return FAIL("%s: kernel %s takes push constants [%s], got %zu others", what, k->name, names,
                given);
  }
  for (size_t i = 0; i < k->n_push; i++) {
    json_object *v = member(push, k->push[i].name);
    json_type type = json_object_get_type(v);
    if (k->push[i].kind == QVK_PUSH_F32) {
      if (type != json_type_int && type != json_type_double) {
        return FAIL("%s: kernel %s: push constant %s must be a number", what, k->name,
                    k->push[i].name);
      }
      float f = type == json_type_int ? (float)(double)json_object_get_int64(v)
                                      : (float)json_object_get_double(v);
      memcpy(&words[i], &f, 4);
      continue;
    }
    int64_t lo = k->push[i].kind == QVK_PUSH_U32 ? 0 : INT32_MIN;
    int64_t hi = k->push[i].kind == QVK_PUSH_U32 ? (int64_t)UINT32_MAX : INT32_MAX;
    int64_t x = type == json_type_int ? json_object_get_int64(v) : 0;
    if (type != json_type_int || x < lo || x > hi) {
      return FAIL("%s: kernel %s: push constant %s must be an integer in [%" PRId64 ", %" PRId64
                  "] (%s), got %.40s",
                  what, k->name, k->push[i].name, lo, hi,
                  k->push[i].kind == QVK_PUSH_U32 ? "u32" : "i32", json_object_to_json_string(v));
    }
    words[i] = (uint32_t)x;
  }
  return QVK_OK;
}

static qvk_status check_steps(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  char what[200], buf[300];
  size_t n = json_object_array_length(m->steps);
  snprintf(buf, sizeof buf, "'%s': the number of dispatches", c->path);
  TRY(check_limit(c, buf, (int64_t)n, c->limits->max_dispatches, "max_dispatches"));
  ALLOC(b->steps, n);
  int64_t *status_users;
  ALLOC(status_users, b->n_buffers);
  for (size_t i = 0; i < b->n_buffers; i++) status_users[i] = -1;
  qvk_status st = QVK_OK;
  for (size_t i = 0; i < n && st == QVK_OK; i++) {
    json_object *v = json_object_array_get_idx(m->steps, i);
    qvk_step_rec *s = &b->steps[i];
    b->n_steps = i + 1;
    snprintf(what, sizeof what, "'%s': dispatch %zu", c->path, i);
    snprintf(buf, sizeof buf, "%s's kernel", what);
    if ((st = get_int(c, member(v, "kernel"), buf, 0, (int64_t)b->n_kernels - 1, &s->kernel))) break;
    const qvk_cat_kernel *k = b->kernels[s->kernel].cat;
    json_object *ids = member(v, "buffers");
    snprintf(buf, sizeof buf, "%s's buffers", what);
    if ((st = get_list(c, ids, buf, &s->n_buffers))) break;
    s->buffers = xcalloc(s->n_buffers, sizeof *s->buffers);
    s->push = xcalloc(k->n_push, sizeof *s->push);
    if (s->buffers == NULL || s->push == NULL) {
      st = qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
      break;
    }
    snprintf(buf, sizeof buf, "%s's buffer id", what);
    for (size_t j = 0; j < s->n_buffers && st == QVK_OK; j++) {
      st = get_int(c, json_object_array_get_idx(ids, j), buf, 0, (int64_t)b->n_buffers - 1,
                   &s->buffers[j]);
    }
    if (st) break;
    json_object *push = member(v, "push");
    if (push == NULL || json_object_get_type(push) != json_type_object) {
      st = FAIL("%s: push constants must be an object", what);
      break;
    }
    json_object *groups = member(v, "groups");
    size_t n_groups;
    snprintf(buf, sizeof buf, "%s's workgroups", what);
    if ((st = get_list(c, groups, buf, &n_groups))) break;
    /* KernelSpec.check_dispatch: spec (checked per kernel), push, workgroups, bindings */
    if ((st = check_push(c, k, push, what, s->push))) break;
    int good = n_groups == 3;
    for (size_t g = 0; good && g < 3; g++) {
      json_object *x = json_object_array_get_idx(groups, g);
      good = is_int(x) && json_object_get_int64(x) >= 1 && json_object_get_int64(x) <= MAX_WORKGROUPS;
      if (good) s->groups[g] = (uint32_t)json_object_get_int64(x);
    }
    if (!good) {
      st = FAIL("%s: kernel %s: workgroup counts must be 3 integers in [1, %d], got %.60s", what,
                k->name, MAX_WORKGROUPS, json_object_to_json_string(groups));
      break;
    }
    /* the kernel's own rules (KernelSpec.workgroups / extents, translated into C) */
    int64_t P[256], S[256], need[64];
    for (size_t j = 0; j < k->n_push; j++) {
      P[j] = k->push[j].kind == QVK_PUSH_I32 ? (int64_t)(int32_t)s->push[j] : (int64_t)s->push[j];
    }
    for (size_t j = 0; j < k->n_spec; j++) S[j] = b->kernels[s->kernel].spec[j];
    qvk_rule_ctx rule = {k->name, 0, ""};
    if (k->workgroups(P, S, need, &rule) != 0) {
      st = FAIL("%s: %s", what, rule.msg);
      break;
    }
    for (size_t g = 0; g < 3; g++) need[g] = need[g] > 1 ? need[g] : 1;
    if (s->groups[0] > need[0] || s->groups[1] > need[1] || s->groups[2] > need[2]) {
      /* every kernel loops over its work: more workgroups only burn device time */
      st = FAIL("%s: kernel %s: [%u, %u, %u] workgroups, more than the [%" PRId64 ", %" PRId64
                ", %" PRId64 "] these push constants need",
                what, k->name, s->groups[0], s->groups[1], s->groups[2], need[0], need[1],
                need[2]);
      break;
    }
    if (s->n_buffers != k->n_bindings) {
      st = FAIL("%s: kernel %s has %zu bindings, got %zu buffers", what, k->name, k->n_bindings,
                s->n_buffers);
      break;
    }
    if (k->extents(P, S, need, &rule) != 0) {
      st = FAIL("%s: %s", what, rule.msg);
      break;
    }
    for (size_t j = 0; j < k->n_bindings && st == QVK_OK; j++) {
      int64_t nbytes = b->buffers[s->buffers[j]].nbytes;
      int64_t words = (nbytes > 4 ? nbytes : 4) / 4;
      if (need[j] > words) {
        st = FAIL("%s: kernel %s: binding %s can touch %" PRId64 " words with these push "
                  "constants, but its buffer holds %" PRId64,
                  what, k->name, k->bindings[j].name, need[j], words);
      }
    }
    if (st) break;
    for (size_t j = 0; j < k->n_bindings && st == QVK_OK; j++) {
      const qvk_cat_binding *binding = &k->bindings[j];
      int64_t id = s->buffers[j];
      int kind = b->buffers[id].kind;
      static const char *const kinds[] = {"input", "constant", "slot", "alloc", "status", "state"};
      if (binding->is_status && kind != KIND_STATUS) {
        st = FAIL("%s: kernel %s binds %s buffer %" PRId64 " at its status binding (it takes a "
                  "status buffer)",
                  what, k->name, kinds[kind], id);
      } else if (kind == KIND_STATUS && !binding->is_status) {
        st = FAIL("%s: kernel %s binds status buffer %" PRId64 " at binding %s (a status buffer "
                  "is bound only at a status binding)",
                  what, k->name, id, binding->name);
      } else if (kind == KIND_STATUS) {
        if (status_users[id] >= 0) {
          st = FAIL("%s: status buffer %" PRId64 " is also bound by dispatch %" PRId64
                    " (each dispatch has its own)",
                    what, id, status_users[id]);
        }
        status_users[id] = (int64_t)i;
      } else if (binding->writes && kind != KIND_ALLOC && kind != KIND_SLOT && kind != KIND_STATE) {
        st = FAIL("%s: kernel %s writes binding %s into %s buffer %" PRId64 " (only transient "
                  "and state buffers are written)",
                  what, k->name, binding->name, kinds[kind], id);
      }
    }
  }
  free(status_users);
  return st;
}

/* Host segments need qopt's interpreter: refused, after the structural checks the
   Python loader makes of their place in the program. */
static qvk_status refuse_host_calls(ctx_t *c, qvk_bundle *b, manifest_t *m) {
  if (m->host_calls == NULL || json_object_array_length(m->host_calls) == 0) return QVK_OK;
  char ops[700] = "";
  size_t n = json_object_array_length(m->host_calls), count = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *list = member(json_object_array_get_idx(m->host_calls, i), "ops");
    if (list == NULL || json_object_get_type(list) != json_type_array) continue;
    for (size_t j = 0; j < json_object_array_length(list); j++) {
      size_t len;
      const char *s = str_of(json_object_array_get_idx(list, j), &len);
      if (s == NULL || !printable(s, len, 0, MAX_WHAT)) continue;
      size_t used = strlen(ops);
      if (used + len + 8 < sizeof ops) {
        snprintf(ops + used, sizeof ops - used, "%s%.*s", count ? "; " : "", (int)len, s);
      } else if (used + 6 < sizeof ops && ops[used - 1] != '.') {
        snprintf(ops + used, sizeof ops - used, "; ...");
      }
      count++;
    }
  }
  (void)b;
  return qvk_fail(c->err, QVK_ERROR_UNSUPPORTED,
                  "'%s' runs %zu op(s) on the host (qopt's host fallback: %s), which needs "
                  "qopt's Python interpreter; the native runtime runs Vulkan kernels only: "
                  "compile the model without the host fallback (qopt.compile(..., "
                  "fallback=False), or qopt-opt without --host-fallback) once every op has a "
                  "Vulkan kernel, or run this bundle with qopt-run",
                  c->path, count, ops);
}

static size_t logical_len(const qvk_bundle *b, const char *name);

/* the logical methods (size variants listed once under their method's name), in order */
static qvk_status logical_methods(ctx_t *c, qvk_bundle *b) {
  ALLOC(b->logical, b->n_methods);
  for (size_t i = 0; i < b->n_methods; i++) {
    const char *name = b->methods[i].name;
    size_t len = logical_len(b, name);
    int seen = 0;
    for (size_t j = 0; j < b->n_logical; j++) {
      seen |= strlen(b->logical[j]) == len && memcmp(b->logical[j], name, len) == 0;
    }
    if (seen) continue;
    b->logical[b->n_logical] = dup_n(name, len);
    if (b->logical[b->n_logical] == NULL) return qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
    b->n_logical++;
  }
  return QVK_OK;
}

static qvk_status load(ctx_t *c, qvk_bundle *b) {
  const uint8_t *data = b->data;
  size_t size = b->size;
  if (size < 12) return FAIL("'%s' is not a qopt Vulkan bundle: too short", c->path);
  if (memcmp(data, MAGIC, 4) != 0) {
    return FAIL("'%s' is not a qopt Vulkan bundle (bad magic b'%c%c%c%c')", c->path,
                data[0] >= 32 && data[0] < 127 ? data[0] : '?', data[1] >= 32 && data[1] < 127 ? data[1] : '?',
                data[2] >= 32 && data[2] < 127 ? data[2] : '?', data[3] >= 32 && data[3] < 127 ? data[3] : '?');
  }
  uint32_t version = (uint32_t)data[4] | (uint32_t)data[5] << 8 | (uint32_t)data[6] << 16 |
                     (uint32_t)data[7] << 24;
  uint32_t msize = (uint32_t)data[8] | (uint32_t)data[9] << 8 | (uint32_t)data[10] << 16 |
                   (uint32_t)data[11] << 24;
  if (version < MIN_VERSION || version > MAX_VERSION) {
    return FAIL("'%s' is a version %u Vulkan bundle; this runtime reads versions %u to %u: "
                "recompile it with `qopt-opt ... -t vkbundle`",
                c->path, version, MIN_VERSION, MAX_VERSION);
  }
  b->version = version;
  char buf[300];
  snprintf(buf, sizeof buf, "'%s': its manifest's size", c->path);
  TRY(check_limit(c, buf, msize, c->limits->max_manifest_bytes, "max_manifest_bytes"));
  if ((size_t)msize > size - 12) return FAIL("'%s' is truncated (manifest)", c->path);
  struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
  if (tok == NULL) return qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
  json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
  json_object *root = msize ? json_tokener_parse_ex(tok, (const char *)data + 12, (int)msize) : NULL;
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t used = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  int trailing = 0;
  for (size_t i = used; root != NULL && i < msize; i++) {
    char ch = (char)data[12 + i];
    trailing |= !(ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r');
  }
  if (root == NULL || jerr != json_tokener_success || trailing) {
    json_object_put(root);
    return FAIL("'%s' has a corrupted manifest: %s", c->path,
                root == NULL && jerr == json_tokener_error_depth ? "RecursionError" : "JSONDecodeError");
  }
  manifest_t m = {0};
  static const char *const keys[] = {"kernels", "constants", "buffers", "slots", "inputs",
                                     "outputs", "steps",     "states",  "methods", NULL};
  qvk_status st;
  snprintf(buf, sizeof buf, "'%s': the manifest", c->path);
  if ((st = get_record(c, root, buf, keys, 0))) goto done;
  m.kernels = member(root, "kernels");
  m.constants = member(root, "constants");
  m.buffers = member(root, "buffers");
  m.slots = member(root, "slots");
  m.inputs = member(root, "inputs");
  m.outputs = member(root, "outputs");
  m.steps = member(root, "steps");
  m.states = member(root, "states");
  m.methods = member(root, "methods");
  m.host_calls = member(root, "host_calls");
  {
    size_t len;
    const char *v = str_of(member(root, "qopt_version"), &len);
    b->qopt_version = v != NULL && printable(v, len, 0, 100) ? dup_n(v, len) : dup_n("(unknown)", 9);
    if (b->qopt_version == NULL) {
      st = qvk_fail(c->err, QVK_ERROR_MEMORY, "out of memory");
      goto done;
    }
  }
  const uint8_t *blobs = data + 12 + msize;
  size_t n_blobs = size - 12 - msize;
  if ((st = parse_kernels(c, b, &m, blobs, n_blobs))) goto done;
  if ((st = parse_constants(c, b, &m, blobs, n_blobs))) goto done;
  snprintf(buf, sizeof buf, "'%s': buffers", c->path);
  size_t n;
  if ((st = get_list(c, m.buffers, buf, &n))) goto done;
  snprintf(buf, sizeof buf, "'%s': slots", c->path);
  if ((st = get_list(c, m.slots, buf, &n))) goto done;
  if ((st = parse_records(c, b, &m))) goto done;
  /* check_program */
  if ((st = check_methods(c, b, &m))) goto done;
  int64_t device_bytes = 0;
  for (size_t i = 0; i < b->n_constants; i++) device_bytes += (int64_t)b->constants[i].nbytes;
  if ((st = check_buffers(c, b, &m, &device_bytes))) goto done;
  snprintf(buf, sizeof buf, "'%s': the device memory it asks for", c->path);
  if ((st = check_limit(c, buf, device_bytes, c->limits->max_device_bytes, "max_device_bytes"))) goto done;
  if ((st = check_states(c, b, &m))) goto done;
  if ((st = check_io(c, b, &m))) goto done;
  if ((st = check_steps(c, b, &m))) goto done;
  if ((st = refuse_host_calls(c, b, &m))) goto done;
  st = logical_methods(c, b);
done:
  json_object_put(root);
  return st;
}

qvk_status qvk_bundle_open_memory(const void *data, size_t size, const char *name,
                                  qvk_bundle **out, qvk_error *err) {
  if (out == NULL) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_bundle_open_memory: out is NULL");
  *out = NULL;
  if (data == NULL && size) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_bundle_open_memory: data is NULL");
  qvk_bundle *b = calloc(1, sizeof *b);
  if (b == NULL) return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  b->data = malloc(size ? size : 1);
  b->path = dup_n(name ? name : "<bundle>", strlen(name ? name : "<bundle>"));
  if (b->data == NULL || b->path == NULL) {
    qvk_bundle_close(b);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory copying a %zu-byte bundle", size);
  }
  if (size) memcpy(b->data, data, size);
  b->size = size;
  ctx_t c = {b->path, err, &qvk_cat_default_limits};
  qvk_status st = load(&c, b);
  if (st != QVK_OK) {
    qvk_bundle_close(b);
    return st;
  }
  *out = b;
  return QVK_OK;
}

qvk_status qvk_bundle_open_file(const char *path, qvk_bundle **out, qvk_error *err) {
  if (out == NULL || path == NULL) return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_bundle_open_file: NULL argument");
  *out = NULL;
  uint8_t *data;
  size_t size;
  /* the manifest's limit plus the blobs a device could hold */
  uint64_t cap = (uint64_t)qvk_cat_default_limits.max_manifest_bytes +
                 (uint64_t)qvk_cat_default_limits.max_device_bytes + 4096u;
  TRY(qvk_read_file(path, cap, &data, &size, err));
  qvk_bundle *b = calloc(1, sizeof *b);
  if (b == NULL) {
    free(data);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  }
  b->data = data;
  b->size = size;
  b->path = dup_n(path, strlen(path));
  if (b->path == NULL) {
    qvk_bundle_close(b);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory");
  }
  ctx_t c = {b->path, err, &qvk_cat_default_limits};
  qvk_status st = load(&c, b);
  if (st != QVK_OK) {
    qvk_bundle_close(b);
    return st;
  }
  *out = b;
  return QVK_OK;
}

/* ----- queries ------------------------------------------------------------------------ */

const char *qvk_bundle_qopt_version(const qvk_bundle *b) { return b->qopt_version; }
size_t qvk_bundle_method_count(const qvk_bundle *b) { return b->n_methods; }
const char *qvk_bundle_method_name(const qvk_bundle *b, size_t m) {
  return m < b->n_methods ? b->methods[m].name : NULL;
}
size_t qvk_bundle_input_count(const qvk_bundle *b, size_t m) {
  return m < b->n_methods ? b->methods[m].inputs[1] - b->methods[m].inputs[0] : 0;
}
size_t qvk_bundle_output_count(const qvk_bundle *b, size_t m) {
  return m < b->n_methods ? b->methods[m].outputs[1] - b->methods[m].outputs[0] : 0;
}
size_t qvk_bundle_dispatch_count(const qvk_bundle *b, size_t m) {
  return m < b->n_methods ? b->methods[m].steps[1] - b->methods[m].steps[0] : 0;
}

static qvk_tensor describe(const qvk_tensor_rec *t) {
  qvk_tensor out;
  memset(&out, 0, sizeof out);
  out.dtype = t->dtype;
  out.rank = t->rank;
  memcpy(out.shape, t->shape, sizeof out.shape);
  return out;
}

qvk_tensor qvk_bundle_input(const qvk_bundle *b, size_t m, size_t i) {
  qvk_tensor none;
  memset(&none, 0, sizeof none);
  if (i >= qvk_bundle_input_count(b, m)) return none;
  return describe(&b->inputs[b->methods[m].inputs[0] + i]);
}

qvk_tensor qvk_bundle_output(const qvk_bundle *b, size_t m, size_t i) {
  qvk_tensor none;
  memset(&none, 0, sizeof none);
  if (i >= qvk_bundle_output_count(b, m)) return none;
  return describe(&b->outputs[b->methods[m].outputs[0] + i]);
}

size_t qvk_bundle_state_count(const qvk_bundle *b) { return b->n_states; }
const char *qvk_bundle_state_name(const qvk_bundle *b, size_t i) {
  return i < b->n_states ? b->states[i].name : NULL;
}
qvk_tensor qvk_bundle_state(const qvk_bundle *b, size_t i) {
  qvk_tensor out;
  memset(&out, 0, sizeof out);
  if (i >= b->n_states) return out;
  out.dtype = b->states[i].dtype;
  out.rank = b->states[i].rank;
  memcpy(out.shape, b->states[i].shape, sizeof out.shape);
  return out;
}

/* logical names: b->logical[j] points at a method name whose logical name is its
   prefix (a variant) or itself */
static size_t logical_len(const qvk_bundle *b, const char *name) {
  size_t len = strlen(name);
  if (qvk_variant_method(name, &len) != NULL) {
    for (size_t j = 0; j < b->n_methods; j++) {
      if (strlen(b->methods[j].name) == len && memcmp(b->methods[j].name, name, len) == 0) {
        return strlen(name);
      }
    }
    return len;
  }
  return strlen(name);
}

size_t qvk_bundle_logical_count(const qvk_bundle *b) { return b->n_logical; }

const char *qvk_bundle_logical_name(const qvk_bundle *b, size_t index) {
  return index < b->n_logical ? b->logical[index] : NULL;
}

/* whether function `name` is a size variant of `method` */
static int variant_of(const qvk_bundle *b, const char *name, const char *method) {
  size_t len = strlen(name);
  if (qvk_variant_method(name, &len) == NULL || len == strlen(name)) return 0;
  if (logical_len(b, name) != len) return 0;
  return strlen(method) == len && memcmp(method, name, len) == 0;
}

size_t qvk_bundle_variant_sizes(const qvk_bundle *b, const char *method, int64_t *sizes, size_t cap) {
  size_t count = 0;
  for (size_t i = 0; i < b->n_methods; i++) {
    const char *name = b->methods[i].name;
    if (!variant_of(b, name, method)) continue;
    const char *tail = name + strlen(method) + 2;
    if (strchr(tail, '_') != NULL) continue; /* several dynamic sizes */
    int64_t v = 0;
    for (const char *p = tail; *p; p++) v = v < INT64_MAX / 10 - 10 ? v * 10 + (*p - '0') : v;
    if (count < cap) sizes[count] = v;
    count++;
  }
  size_t n = count < cap ? count : cap; /* ascending */
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      if (sizes[j] < sizes[i]) {
        int64_t t = sizes[i];
        sizes[i] = sizes[j];
        sizes[j] = t;
      }
    }
  }
  return count;
}

static int fits(const qvk_bundle *b, size_t m, size_t n, const qvk_tensor *inputs) {
  if (qvk_bundle_input_count(b, m) != n) return 0;
  for (size_t i = 0; i < n; i++) {
    const qvk_tensor_rec *t = &b->inputs[b->methods[m].inputs[0] + i];
    if (t->rank != inputs[i].rank) return 0;
    for (int d = 0; d < t->rank; d++) {
      if (t->shape[d] >= 0 && t->shape[d] != inputs[i].shape[d]) return 0;
    }
  }
  return 1;
}

qvk_status qvk_bundle_pick_method(const qvk_bundle *b, const char *name, size_t n_inputs,
                                  const qvk_tensor *inputs, size_t *method, qvk_error *err) {
  char list[600] = "";
  for (size_t i = 0; i < b->n_logical; i++) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", qvk_bundle_logical_name(b, i));
  }
  if (name == NULL || name[0] == '\0') {
    if (b->n_logical == 1) {
      name = qvk_bundle_logical_name(b, 0);
    } else {
      int forward = 0;
      for (size_t i = 0; i < b->n_logical; i++) forward |= strcmp(qvk_bundle_logical_name(b, i), "forward") == 0;
      if (!forward) {
        return qvk_fail(err, QVK_ERROR_ARGUMENT,
                        "the program has several methods (%s): name one with --method / method=",
                        list);
      }
      name = "forward";
    }
  }
  char want[MAX_NAME * 4 + 1];
  snprintf(want, sizeof want, "%s", name);
  for (size_t i = 0; i < b->n_methods; i++) {
    if (strcmp(b->methods[i].name, want) == 0) {
      *method = i;
      return QVK_OK;
    }
  }
  int any = 0;
  for (size_t i = 0; i < b->n_methods; i++) {
    if (!variant_of(b, b->methods[i].name, want)) continue;
    any = 1;
    if (inputs != NULL && fits(b, i, n_inputs, inputs)) {
      *method = i;
      return QVK_OK;
    }
  }
  if (!any) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "the program has no method '%s' (its methods: %s)",
                    want, list);
  }
  char got[300] = "";
  for (size_t i = 0; inputs != NULL && i < n_inputs; i++) {
    size_t used = strlen(got);
    snprintf(got + used, sizeof got - used, "%s", i ? ", " : "");
    if (inputs[i].rank == 0) {
      used = strlen(got);
      snprintf(got + used, sizeof got - used, "scalar");
    }
    for (int d = 0; d < inputs[i].rank; d++) {
      used = strlen(got);
      snprintf(got + used, sizeof got - used, "%s%" PRId64, d ? "x" : "", inputs[i].shape[d]);
    }
  }
  int64_t sizes[64];
  size_t k = qvk_bundle_variant_sizes(b, want, sizes, 64);
  char have[400] = "";
  for (size_t i = 0; i < k && i < 64; i++) {
    size_t used = strlen(have);
    snprintf(have + used, sizeof have - used, "%s%" PRId64, i ? ", " : "", sizes[i]);
  }
  return qvk_fail(err, QVK_ERROR_ARGUMENT,
                  "method '%s' was compiled for the sizes %s of its dynamic dims, not for inputs "
                  "of shapes %s: compile it with those sizes (qopt.compile(..., "
                  "dynamic_sizes=[...]))",
                  want, have, got);
}

QVK_API qvk_status qvk_kernel_rules(const char *kernel, const int64_t *push, size_t n_push,
                                    const int64_t *spec, size_t n_spec, int64_t groups[3],
                                    int64_t *extents, size_t n_extents, qvk_error *err) {
  const qvk_cat_kernel *k = NULL;
  for (size_t i = 0; kernel != NULL && i < qvk_cat_kernel_count; i++) {
    if (strcmp(qvk_cat_kernels[i].name, kernel) == 0) k = &qvk_cat_kernels[i];
  }
  for (size_t i = 0; k == NULL && kernel != NULL && i < qvk_cat_variant_count; i++) {
    /* a variant by its kernel name (`base@variant`): for tests; bundles name bases only */
    if (strcmp(qvk_cat_variants[i].kernel.name, kernel) == 0) k = &qvk_cat_variants[i].kernel;
  }
  if (k == NULL) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT, "qvk_kernel_rules: no kernel %.100s in the catalogue",
                    kernel ? kernel : "(null)");
  }
  if (n_push != k->n_push || n_spec != k->n_spec || n_extents != k->n_bindings ||
      (n_push && push == NULL) || (n_spec && spec == NULL) || groups == NULL ||
      (n_extents && extents == NULL)) {
    return qvk_fail(err, QVK_ERROR_ARGUMENT,
                    "qvk_kernel_rules: kernel %s takes %zu push constants, %zu specialization "
                    "values and %zu extents",
                    k->name, k->n_push, k->n_spec, k->n_bindings);
  }
  qvk_rule_ctx rule = {k->name, 0, ""};
  if (k->workgroups(push, spec, groups, &rule) != 0 || k->extents(push, spec, extents, &rule) != 0) {
    return qvk_fail(err, QVK_ERROR_BUNDLE, "%s", rule.msg);
  }
  return QVK_OK;
}
