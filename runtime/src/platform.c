/* The platform-specific part of the runtime: reading a file, a monotonic clock and the
   environment (POSIX; Android's bionic included). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "internal.h"

qvk_status qvk_read_file(const char *path, uint64_t max_bytes, uint8_t **data, size_t *size,
                         qvk_error *err) {
  *data = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    return qvk_fail(err, QVK_ERROR_IO, "cannot read Vulkan bundle '%s': %s", path,
                    strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return qvk_fail(err, QVK_ERROR_IO, "cannot read Vulkan bundle '%s': not a regular file",
                    path);
  }
  if ((uint64_t)st.st_size > max_bytes || (uint64_t)st.st_size > (uint64_t)SIZE_MAX - 1) {
    fclose(f);
    return qvk_fail(err, QVK_ERROR_BUNDLE,
                    "'%s' is %lld bytes, more than this runtime reads (%llu): not a bundle "
                    "qopt writes",
                    path, (long long)st.st_size, (unsigned long long)max_bytes);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (buf == NULL) {
    fclose(f);
    return qvk_fail(err, QVK_ERROR_MEMORY, "out of memory reading '%s' (%zu bytes)", path, n);
  }
  size_t got = n ? fread(buf, 1, n, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (got != n || bad) {
    free(buf);
    return qvk_fail(err, QVK_ERROR_IO, "cannot read Vulkan bundle '%s': short read", path);
  }
  *data = buf;
  *size = n;
  return QVK_OK;
}

double qvk_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *qvk_getenv(const char *name) { return getenv(name); }
