/* Sessions created, run and destroyed N times, the bundle opened and closed each cycle
   too: run under AddressSanitizer / LeakSanitizer, nothing may leak; in a Release build,
   the resident memory after cycle 10 and after cycle N must be the same (flat).
     qvk-cycles MODEL.qvk N [--rss EVERY]
   Each cycle opens the bundle, creates a session on it, runs its first method on zero
   inputs, resets the session, destroys it and closes the bundle; the outputs of every
   cycle must equal the first cycle's. Each cycle's session leases the device the previous
   one gave back (runtime/src/device.c; QOPT_VULKAN_REUSE=0: a fresh device every cycle),
   and the idle one is closed at exit. Prints the resident set size (VmRSS of
   /proc/self/status where it exists, else the peak) after cycles 1, 10, every EVERY-th and
   the last, then one line:
     N cycles in S s (T ms a cycle); rss after cycle 10: A MiB, after cycle N: B MiB (+D) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "qvk.h"

#define MAX_IO 64

/* The current resident set size in KiB (Linux), else the peak (getrusage). */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f != NULL) {
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f) != NULL) {
      if (strncmp(line, "VmRSS:", 6) == 0) {
        kib = strtol(line + 6, NULL, 10);
        break;
      }
    }
    fclose(f);
    if (kib >= 0) return kib;
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct buffers {
  size_t n_in, n_out;
  qvk_tensor inputs[MAX_IO];
  void *outputs[MAX_IO];
  size_t out_bytes[MAX_IO];
} buffers;

static void free_buffers(buffers *io) {
  for (size_t i = 0; i < io->n_in; i++) free((void *)io->inputs[i].data);
  for (size_t i = 0; i < io->n_out; i++) free(io->outputs[i]);
  memset(io, 0, sizeof *io);
}

/* Zero inputs and output buffers for method 0 of `b` (declared shapes and dtypes). */
static int make_buffers(const qvk_bundle *b, buffers *io) {
  memset(io, 0, sizeof *io);
  size_t n_in = qvk_bundle_input_count(b, 0), n_out = qvk_bundle_output_count(b, 0);
  if (n_in > MAX_IO || n_out > MAX_IO) {
    fprintf(stderr, "qvk-cycles: more than %d inputs or outputs\n", MAX_IO);
    return 1;
  }
  for (size_t i = 0; i < n_in; i++) {
    io->inputs[i] = qvk_bundle_input(b, 0, i);
    size_t bytes = (size_t)qvk_tensor_numel(&io->inputs[i]) * qvk_dtype_size(io->inputs[i].dtype);
    io->inputs[i].data = calloc(1, bytes ? bytes : 1);
    io->n_in = i + 1;
    if (io->inputs[i].data == NULL) return 1;
  }
  for (size_t i = 0; i < n_out; i++) {
    qvk_tensor t = qvk_bundle_output(b, 0, i);
    io->out_bytes[i] = (size_t)qvk_tensor_numel(&t) * qvk_dtype_size(t.dtype);
    io->outputs[i] = calloc(1, io->out_bytes[i] + 1);
    io->n_out = i + 1;
    if (io->outputs[i] == NULL) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--rss") == 0)) {
    fprintf(stderr, "usage: qvk-cycles MODEL.qvk N [--rss EVERY]\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int every = argc == 5 ? atoi(argv[4]) : 0;
  if (n < 1) {
    fprintf(stderr, "qvk-cycles: N must be at least 1\n");
    return 2;
  }
  qvk_error err;
  buffers first, io;
  memset(&first, 0, sizeof first);
  memset(&io, 0, sizeof io);
  long rss_10 = -1, rss_last = -1;
  int rc = 0;
  double t0 = now();
  for (int c = 1; c <= n && rc == 0; c++) {
    qvk_bundle *b = NULL;
    qvk_session *s = NULL;
    if (qvk_bundle_open_file(argv[1], &b, &err) != QVK_OK) {
      fprintf(stderr, "cycle %d: %s\n", c, err.message);
      rc = 1;
      break;
    }
    if (make_buffers(b, &io) != 0) {
      rc = 1;
    } else if (qvk_session_create(b, NULL, &s, &err) != QVK_OK ||
               qvk_session_run(s, 0, io.inputs, io.outputs, &err) != QVK_OK ||
               qvk_session_reset(s, &err) != QVK_OK) {
      fprintf(stderr, "cycle %d: %s\n", c, err.message);
      rc = 1;
    } else if (c == 1) {
      first = io;  /* kept: later cycles compare with it */
      memset(&io, 0, sizeof io);
    } else {
      for (size_t i = 0; i < io.n_out; i++) {
        if (memcmp(io.outputs[i], first.outputs[i], io.out_bytes[i]) != 0) {
          fprintf(stderr, "cycle %d: output %zu differs from the first cycle's\n", c, i);
          rc = 1;
        }
      }
    }
    free_buffers(&io);
    qvk_session_destroy(s);
    qvk_bundle_close(b);
    long rss = rss_kib();
    if (c == 10) rss_10 = rss;
    rss_last = rss;
    if (every > 0 && (c == 1 || c == 10 || c % every == 0 || c == n)) {
      printf("cycle %d rss %.1f MiB\n", c, rss / 1024.0);
      fflush(stdout);
    }
  }
  free_buffers(&first);
  if (rc == 0) {
    double dt = now() - t0;
    printf("%d cycles in %.1f s (%.1f ms a cycle)", n, dt, 1e3 * dt / n);
    if (rss_10 >= 0) {
      printf("; rss after cycle 10: %.1f MiB, after cycle %d: %.1f MiB (%+.1f)", rss_10 / 1024.0,
             n, rss_last / 1024.0, (rss_last - rss_10) / 1024.0);
    }
    printf("\n");
  }
  return rc;
}
