/* .npy reader and writer for qvk-run (the format: numpy's NEP 1, "A Simple File Format
   for NumPy Arrays"). The header is parsed as data (a dict of 'descr', 'fortran_order',
   'shape'), bounded, and checked against the file's size before the data is read. */
#define _POSIX_C_SOURCE 200809L
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER 10000
#define MAX_ELEMENTS (INT64_C(1) << 31)

static const struct {
  const char *descr;
  qvk_dtype dtype;
} DESCRS[] = {
    {"<f4", QVK_FLOAT32}, {"<f2", QVK_FLOAT16}, {"<f8", QVK_FLOAT64}, {"|i1", QVK_INT8},
    {"<i1", QVK_INT8},    {"<i2", QVK_INT16},   {"<i4", QVK_INT32},   {"<i8", QVK_INT64},
    {"|u1", QVK_UINT8},   {"<u1", QVK_UINT8},   {"|b1", QVK_BOOL},    {"=f4", QVK_FLOAT32},
    {"=f8", QVK_FLOAT64}, {"=i4", QVK_INT32},   {"=i8", QVK_INT64},   {"=f2", QVK_FLOAT16},
    {"=i2", QVK_INT16},
};

static const char *skip(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static int fail(char *message, size_t cap, const char *path, const char *what) {
  snprintf(message, cap, "input '%s' is not a readable .npy array: %s", path, what);
  return -1;
}

int npy_read(const char *path, qvk_tensor *t, void **owned, char *message, size_t cap) {
  *owned = NULL;
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(message, cap, "cannot read input '%s': %s", path, strerror(errno));
    return -1;
  }
  unsigned char head[12];
  size_t got = fread(head, 1, 10, f);
  if (got < 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fail(message, cap, path, "no .npy magic");
  }
  size_t hlen, pre;
  if (head[6] == 1) {
    hlen = (size_t)head[8] | (size_t)head[9] << 8;
    pre = 10;
  } else if (head[6] == 2 || head[6] == 3) {
    if (fread(head + 10, 1, 2, f) != 2) {
      fclose(f);
      return fail(message, cap, path, "truncated header");
    }
    hlen = (size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
    pre = 12;
  } else {
    fclose(f);
    snprintf(message, cap, "input '%s' uses .npy format %d.%d (qvk-run reads 1.0 to 3.0)", path,
             head[6], head[7]);
    return -1;
  }
  if (hlen > MAX_HEADER) {
    fclose(f);
    return fail(message, cap, path, "its header is over 10000 bytes");
  }
  char header[MAX_HEADER + 1];
  if (fread(header, 1, hlen, f) != hlen) {
    fclose(f);
    return fail(message, cap, path, "truncated header");
  }
  header[hlen] = '\0';
  const char *p = header, *end = header + hlen;
  char descr[16] = "";
  int fortran = -1, have_shape = 0;
  p = skip(p, end);
  if (p >= end || *p++ != '{') {
    fclose(f);
    return fail(message, cap, path, "its header is not a dict");
  }
  for (;;) {
    p = skip(p, end);
    if (p < end && *p == '}') break;
    if (p >= end || (*p != '\'' && *p != '"')) {
      fclose(f);
      return fail(message, cap, path, "bad header key");
    }
    char quote = *p++;
    const char *k = p;
    while (p < end && *p != quote) p++;
    if (p >= end) {
      fclose(f);
      return fail(message, cap, path, "bad header key");
    }
    size_t klen = (size_t)(p - k);
    p = skip(p + 1, end);
    if (p >= end || *p++ != ':') {
      fclose(f);
      return fail(message, cap, path, "bad header");
    }
    p = skip(p, end);
    if (klen == 5 && memcmp(k, "descr", 5) == 0) {
      if (p >= end || (*p != '\'' && *p != '"')) {
        fclose(f);
        return fail(message, cap, path, "its dtype is not a simple type (structured arrays are refused)");
      }
      char q = *p++;
      const char *v = p;
      while (p < end && *p != q) p++;
      if (p >= end || (size_t)(p - v) >= sizeof descr) {
        fclose(f);
        return fail(message, cap, path, "bad descr");
      }
      memcpy(descr, v, (size_t)(p - v));
      descr[p - v] = '\0';
      p++;
    } else if (klen == 13 && memcmp(k, "fortran_order", 13) == 0) {
      if (end - p >= 4 && memcmp(p, "True", 4) == 0) {
        fortran = 1;
        p += 4;
      } else if (end - p >= 5 && memcmp(p, "False", 5) == 0) {
        fortran = 0;
        p += 5;
      } else {
        fclose(f);
        return fail(message, cap, path, "bad fortran_order");
      }
    } else if (klen == 5 && memcmp(k, "shape", 5) == 0) {
      if (p >= end || *p++ != '(') {
        fclose(f);
        return fail(message, cap, path, "bad shape");
      }
      t->rank = 0;
      for (;;) {
        p = skip(p, end);
        if (p < end && *p == ')') {
          p++;
          break;
        }
        if (p >= end || *p < '0' || *p > '9') {
          fclose(f);
          return fail(message, cap, path, "bad shape");
        }
        int64_t d = 0;
        while (p < end && *p >= '0' && *p <= '9') {
          if (d > (INT64_MAX - 9) / 10) {
            fclose(f);
            return fail(message, cap, path, "a dimension is too large");
          }
          d = d * 10 + (*p++ - '0');
        }
        if (t->rank >= QVK_MAX_RANK) {
          fclose(f);
          return fail(message, cap, path, "rank over 16");
        }
        t->shape[t->rank++] = d;
        p = skip(p, end);
        if (p < end && *p == ',') p++;
      }
      have_shape = 1;
    } else {
      fclose(f);
      return fail(message, cap, path, "unknown header key");
    }
    p = skip(p, end);
    if (p < end && *p == ',') p++;
  }
  if (!have_shape || fortran < 0 || descr[0] == '\0') {
    fclose(f);
    return fail(message, cap, path, "its header lacks descr, fortran_order or shape");
  }
  int found = 0;
  for (size_t i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++) {
    if (strcmp(DESCRS[i].descr, descr) == 0) {
      t->dtype = DESCRS[i].dtype;
      found = 1;
    }
  }
  if (!found) {
    fclose(f);
    snprintf(message, cap, "input '%s' has dtype '%s'; qvk-run reads little-endian float16/32/64, "
             "int8/16/32/64, uint8 and bool arrays", path, descr);
    return -1;
  }
  int64_t numel = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] != 0 && numel > MAX_ELEMENTS / t->shape[i]) numel = MAX_ELEMENTS + 1;
    else numel *= t->shape[i];
  }
  for (int i = 0; i < t->rank; i++) if (t->shape[i] == 0) numel = 0;
  if (numel > MAX_ELEMENTS) {
    fclose(f);
    return fail(message, cap, path, "more than 2^31 elements");
  }
  if (fortran && t->rank > 1) {
    int nontrivial = 0;
    for (int i = 0; i < t->rank; i++) nontrivial += t->shape[i] > 1;
    if (nontrivial > 1) {
      fclose(f);
      return fail(message, cap, path, "it is in Fortran order (save it C-contiguous)");
    }
  }
  size_t nbytes = (size_t)numel * qvk_dtype_size(t->dtype);
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return fail(message, cap, path, "cannot seek");
  }
  long size = ftell(f);
  if (size < 0 || (size_t)size < pre + hlen || (size_t)size - pre - hlen < nbytes) {
    fclose(f);
    return fail(message, cap, path, "its data is shorter than its header says");
  }
  void *data = malloc(nbytes ? nbytes : 1);
  if (data == NULL || fseek(f, (long)(pre + hlen), SEEK_SET) != 0 ||
      (nbytes && fread(data, 1, nbytes, f) != nbytes)) {
    free(data);
    fclose(f);
    return fail(message, cap, path, "cannot read its data");
  }
  fclose(f);
  *owned = data;
  t->data = data;
  return 0;
}

int npy_write(const char *path, qvk_dtype dtype, int rank, const int64_t *shape, const void *data) {
  static const char *const descr[] = {"<f4", "<f2", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "|b1"};
  char dict[400];
  size_t used = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                                 descr[dtype]);
  for (int i = 0; i < rank; i++) {
    used += (size_t)snprintf(dict + used, sizeof dict - used, "%lld%s", (long long)shape[i],
                             rank == 1 ? "," : i + 1 < rank ? ", " : "");
  }
  used += (size_t)snprintf(dict + used, sizeof dict - used, "), }");
  size_t total = 10 + used + 1;
  size_t pad = (64 - total % 64) % 64;
  char header[600];
  memcpy(header, "\x93NUMPY\x01\x00", 8);
  size_t hlen = used + pad + 1;
  header[8] = (char)(hlen & 0xff);
  header[9] = (char)(hlen >> 8);
  memcpy(header + 10, dict, used);
  memset(header + 10 + used, ' ', pad);
  header[10 + used + pad] = '\n';
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  size_t nbytes = (size_t)numel * qvk_dtype_size(dtype);
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  int ok = fwrite(header, 1, 10 + hlen, f) == 10 + hlen && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
  ok = (fclose(f) == 0) && ok;
  return ok ? 0 : -1;
}
