/* qvk-run: run a qopt Vulkan bundle (`.qvk`) with the native runtime.

     qvk-run MODEL.qvk [--method NAME] [--input FILE.npy ...] [--output-dir DIR]
     qvk-run MODEL.qvk --generate N --prompt-ids 1,2,3
     common: [--device INDEX|NAME] [--bench [--runs N]] [--list]

   One call runs on a fresh state; outputs go to DIR/output_0.npy, ... (written under
   temporary names and renamed into place only when every one is written), or are
   summarised on stdout. `--generate` decodes greedily over the KV cache (prefill, then
   decode a token per call: qopt/generation.py) and prints the tokens on the last line.
   Errors: one line on stderr, exit status 1, no output written. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "npy.h"
#include "qvk.h"

#define MAX_INPUTS 64

static int die(const char *fmt, const char *text) {
  fprintf(stderr, "qvk-run: error: ");
  fprintf(stderr, fmt, text);
  fprintf(stderr, "\n");
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: qvk-run MODEL.qvk [--method NAME] [--input FILE.npy ...] [--output-dir DIR]\n"
          "       qvk-run MODEL.qvk --generate N --prompt-ids 1,2,3\n"
          "       options: [--device INDEX|NAME] [--bench [--runs N]] [--list]\n");
  return 1;
}

typedef struct {
  const char *model, *method, *output_dir, *device, *prompt;
  const char *inputs[MAX_INPUTS];
  int n_inputs;
  long generate;
  int bench, runs, list;
} args_t;

static int parse_long(const char *text, long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0') return 0;
  *out = v;
  return 1;
}

static int parse_args(int argc, char **argv, args_t *a) {
  memset(a, 0, sizeof *a);
  a->generate = -1;
  a->runs = 10;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int more = i + 1 < argc;
    if (strcmp(arg, "--method") == 0 && more) {
      a->method = argv[++i];
    } else if (strcmp(arg, "--output-dir") == 0 && more) {
      a->output_dir = argv[++i];
    } else if (strcmp(arg, "--device") == 0 && more) {
      a->device = argv[++i];
    } else if (strcmp(arg, "--prompt-ids") == 0 && more) {
      a->prompt = argv[++i];
    } else if (strcmp(arg, "--generate") == 0 && more) {
      if (!parse_long(argv[++i], &a->generate) || a->generate < 1) {
        return die("--generate takes a positive number of tokens, got '%s'", argv[i]) ? -1 : -1;
      }
    } else if (strcmp(arg, "--runs") == 0 && more) {
      long runs;
      if (!parse_long(argv[++i], &runs) || runs < 1 || runs > 100000) {
        return die("--runs takes a positive count, got '%s'", argv[i]) ? -1 : -1;
      }
      a->runs = (int)runs;
    } else if (strcmp(arg, "--input") == 0 && more) {
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        if (a->n_inputs == MAX_INPUTS) return die("more than %s inputs", "64") ? -1 : -1;
        a->inputs[a->n_inputs++] = argv[++i];
      }
    } else if (strcmp(arg, "--bench") == 0) {
      a->bench = 1;
    } else if (strcmp(arg, "--list") == 0) {
      a->list = 1;
    } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage();
      return -2;
    } else if (arg[0] == '-' && arg[1] == '-') {
      usage();
      return die("unknown or incomplete option '%s'", arg) ? -1 : -1;
    } else if (a->model == NULL) {
      a->model = arg;
    } else {
      return die("unexpected argument '%s' (inputs go after --input)", arg) ? -1 : -1;
    }
  }
  if (a->model == NULL) {
    usage();
    return -1;
  }
  return 0;
}

static void print_tensor_desc(const qvk_tensor *t) {
  printf("%s[", qvk_dtype_name(t->dtype));
  for (int d = 0; d < t->rank; d++) printf("%s%" PRId64, d ? ", " : "", t->shape[d]);
  printf("]");
}

static void list_bundle(const qvk_bundle *b) {
  printf("bundle written by qopt %s; runtime built from qopt %s\n", qvk_bundle_qopt_version(b),
         qvk_runtime_qopt_version());
  for (size_t m = 0; m < qvk_bundle_method_count(b); m++) {
    printf("%s(", qvk_bundle_method_name(b, m));
    for (size_t i = 0; i < qvk_bundle_input_count(b, m); i++) {
      qvk_tensor t = qvk_bundle_input(b, m, i);
      if (i) printf(", ");
      print_tensor_desc(&t);
    }
    printf(") -> (");
    for (size_t i = 0; i < qvk_bundle_output_count(b, m); i++) {
      qvk_tensor t = qvk_bundle_output(b, m, i);
      if (i) printf(", ");
      print_tensor_desc(&t);
    }
    printf("): %zu dispatches\n", qvk_bundle_dispatch_count(b, m));
  }
  for (size_t i = 0; i < qvk_bundle_state_count(b); i++) {
    qvk_tensor t = qvk_bundle_state(b, i);
    printf("state %s: ", qvk_bundle_state_name(b, i));
    print_tensor_desc(&t);
    printf("\n");
  }
}

static size_t bytes_of(const qvk_tensor *t) {
  return (size_t)qvk_tensor_numel(t) * qvk_dtype_size(t->dtype);
}

/* outputs of function `m`, allocated */
static void **alloc_outputs(const qvk_bundle *b, size_t m) {
  size_t n = qvk_bundle_output_count(b, m);
  void **out = calloc(n ? n : 1, sizeof *out);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n; i++) {
    qvk_tensor t = qvk_bundle_output(b, m, i);
    out[i] = malloc(bytes_of(&t) ? bytes_of(&t) : 1);
    if (out[i] == NULL) {
      for (size_t j = 0; j < i; j++) free(out[j]);
      free(out);
      return NULL;
    }
  }
  return out;
}

static void free_outputs(const qvk_bundle *b, size_t m, void **out) {
  if (out == NULL) return;
  for (size_t i = 0; i < qvk_bundle_output_count(b, m); i++) free(out[i]);
  free(out);
}

static double element(const qvk_tensor *t, const void *data, int64_t i) {
  const char *p = data;
  switch (t->dtype) {
    case QVK_FLOAT32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case QVK_FLOAT64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case QVK_FLOAT16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      int e = (h >> 10) & 31, man = h & 1023;
      double v = e == 0 ? ldexp(man, -24) : e == 31 ? (man ? NAN : INFINITY) : ldexp(man | 1024, e - 25);
      return (h >> 15) ? -v : v;
    }
    case QVK_INT8: return (int8_t)p[i];
    case QVK_UINT8: return (uint8_t)p[i];
    case QVK_BOOL: return p[i] != 0;
    case QVK_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case QVK_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    default: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  }
}

static void summarise(const qvk_bundle *b, size_t m, void **out) {
  for (size_t i = 0; i < qvk_bundle_output_count(b, m); i++) {
    qvk_tensor t = qvk_bundle_output(b, m, i);
    printf("output_%zu: ", i);
    print_tensor_desc(&t);
    int64_t n = qvk_tensor_numel(&t);
    printf(" = [");
    for (int64_t k = 0; k < n && k < 8; k++) printf("%s%.6g", k ? ", " : "", element(&t, out[i], k));
    printf("%s]\n", n > 8 ? ", ..." : "");
  }
}

/* every output under a temporary name, then renamed into place; on failure nothing stays */
static int write_outputs(const char *dir, const qvk_bundle *b, size_t m, void **out) {
  int made_dir = 0;
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (mkdir(dir, 0777) != 0) return die("cannot create the output directory '%s'", dir);
    made_dir = 1;
  } else if (!S_ISDIR(st.st_mode)) {
    return die("'%s' exists and is not a directory", dir);
  }
  size_t n = qvk_bundle_output_count(b, m);
  char tmp[4096], final[4096];
  size_t written = 0;
  int failed = 0;
  for (size_t i = 0; i < n && !failed; i++) {
    qvk_tensor t = qvk_bundle_output(b, m, i);
    snprintf(tmp, sizeof tmp, "%s/.output_%zu.npy.%ld.tmp", dir, i, (long)getpid());
    if (npy_write(tmp, t.dtype, t.rank, t.shape, out[i]) != 0) {
      failed = 1;
      unlink(tmp);
      break;
    }
    written++;
  }
  for (size_t i = 0; !failed && i < n; i++) {
    snprintf(tmp, sizeof tmp, "%s/.output_%zu.npy.%ld.tmp", dir, i, (long)getpid());
    snprintf(final, sizeof final, "%s/output_%zu.npy", dir, i);
    if (rename(tmp, final) != 0) failed = 1;
  }
  if (failed) {
    for (size_t i = 0; i < written; i++) {
      snprintf(tmp, sizeof tmp, "%s/.output_%zu.npy.%ld.tmp", dir, i, (long)getpid());
      unlink(tmp);
    }
    if (made_dir) rmdir(dir);
    return die("cannot write the outputs into '%s'", dir);
  }
  return 0;
}

static int has_logical(const qvk_bundle *b, const char *name) {
  for (size_t i = 0; i < qvk_bundle_logical_count(b); i++) {
    if (strcmp(qvk_bundle_logical_name(b, i), name) == 0) return 1;
  }
  return 0;
}

typedef struct {
  double wall, gpu, host_per_dispatch;
  size_t calls, dispatches;
} stats_t;

/* one call of `method` on tokens[start..stop) at positions start..: the argmax of the
   last position's logits (output 0) into *next */
static int call_tokens(const qvk_bundle *b, qvk_session *s, const char *method,
                       const int64_t *tokens, int64_t start, int64_t stop, int64_t *next,
                       stats_t *stats) {
  int64_t len = stop - start;
  int64_t *ids = malloc((size_t)len * 8), *pos = malloc((size_t)len * 8);
  if (ids == NULL || pos == NULL) {
    free(ids);
    free(pos);
    return die("%s", "out of memory");
  }
  for (int64_t i = 0; i < len; i++) {
    ids[i] = tokens[start + i];
    pos[i] = start + i;
  }
  qvk_tensor in[2];
  memset(in, 0, sizeof in);
  in[0].dtype = QVK_INT64;
  in[0].rank = 2;
  in[0].shape[0] = 1;
  in[0].shape[1] = len;
  in[0].data = ids;
  in[1].dtype = QVK_INT64;
  in[1].rank = 1;
  in[1].shape[0] = len;
  in[1].data = pos;
  qvk_error err;
  size_t m;
  int rc = 0;
  void **out = NULL;
  if (qvk_bundle_pick_method(b, method, 2, in, &m, &err) != QVK_OK) {
    rc = die("%s", err.message);
  } else if (qvk_bundle_output_count(b, m) == 0) {
    fprintf(stderr, "qvk-run: error: method '%s' returns nothing: expected logits [1, S, vocab]\n", method);
    rc = 1;
  } else if ((out = alloc_outputs(b, m)) == NULL) {
    rc = die("%s", "out of memory");
  } else if (qvk_session_run(s, m, in, out, &err) != QVK_OK) {
    rc = die("%s", err.message);
  } else {
    qvk_tensor t = qvk_bundle_output(b, m, 0);
    if (t.rank < 2) {
      fprintf(stderr, "qvk-run: error: method '%s' returns a rank-%d tensor first: expected "
              "logits [1, S, vocab]\n", method, t.rank);
      rc = 1;
    } else {
      int64_t vocab = t.shape[t.rank - 1], n = qvk_tensor_numel(&t);
      int64_t best = 0;
      double top = 0;
      for (int64_t k = 0; k < vocab; k++) {
        double v = element(&t, out[0], n - vocab + k);
        if (k == 0 || v > top || (isnan(v) && !isnan(top))) {
          best = k;
          top = v;
          if (isnan(v)) break; /* numpy's argmax: the first NaN */
        }
      }
      *next = best;
      qvk_timings tm = qvk_session_timings(s);
      stats->calls++;
      stats->wall += tm.wall_seconds;
      stats->gpu += tm.gpu_seconds > 0 ? tm.gpu_seconds : 0;
      stats->dispatches += tm.dispatches;
    }
  }
  free_outputs(b, m, out);
  free(ids);
  free(pos);
  return rc;
}

static int generate(const qvk_bundle *b, qvk_session *s, const args_t *a) {
  if (a->prompt == NULL) return die("%s", "--generate needs --prompt-ids, e.g. --prompt-ids 1,2,3");
  if (a->n_inputs || a->output_dir) return die("%s", "--generate takes --prompt-ids, not --input/--output-dir");
  size_t cap = strlen(a->prompt) / 2 + 2, n = 0;
  int64_t *tokens = malloc((cap + (size_t)a->generate) * 8);
  if (tokens == NULL) return die("%s", "out of memory");
  const char *p = a->prompt;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || (*end != ',' && *end != '\0')) {
      free(tokens);
      return die("--prompt-ids takes comma-separated token ids, got '%s'", a->prompt);
    }
    tokens[n++] = v;
    p = *end == ',' ? end + 1 : end;
  }
  if (n == 0) {
    free(tokens);
    return die("%s", "generation needs a prompt of at least one token");
  }
  const char *step = has_logical(b, "decode") ? "decode" : has_logical(b, "forward") ? "forward" : NULL;
  if (step == NULL) {
    if (qvk_bundle_logical_count(b) != 1) {
      free(tokens);
      return die("%s", "the program's methods are not decode (and optionally prefill) or a single method");
    }
    step = qvk_bundle_logical_name(b, 0);
  }
  char step_name[1700];
  snprintf(step_name, sizeof step_name, "%s", step);
  stats_t stats = {0};
  int64_t next = 0;
  size_t length = n;
  int rc = 0;
  if (has_logical(b, "prefill")) {
    int64_t sizes[256];
    size_t k = qvk_bundle_variant_sizes(b, "prefill", sizes, 256);
    if (k > 256) k = 256;
    int whole = k == 0;
    for (size_t i = 0; i < k; i++) whole |= sizes[i] == (int64_t)length;
    if (whole) {
      rc = call_tokens(b, s, "prefill", tokens, 0, (int64_t)length, &next, &stats);
    } else { /* chunked prefill: the longest compiled length that fits, else a step */
      int64_t start = 0;
      while (rc == 0 && start < (int64_t)length) {
        int64_t size = 0;
        for (size_t i = 0; i < k; i++) {
          if (sizes[i] <= (int64_t)length - start && sizes[i] > size) size = sizes[i];
        }
        const char *method = size ? "prefill" : step_name;
        if (!size) size = 1;
        rc = call_tokens(b, s, method, tokens, start, start + size, &next, &stats);
        start += size;
      }
    }
  } else {
    for (size_t i = 0; rc == 0 && i + 1 < length; i++) {
      rc = call_tokens(b, s, step_name, tokens, (int64_t)i, (int64_t)i + 1, &next, &stats);
    }
    if (rc == 0) rc = call_tokens(b, s, step_name, tokens, (int64_t)length - 1, (int64_t)length, &next, &stats);
  }
  size_t first = length;
  while (rc == 0) {
    tokens[length++] = next;
    if ((long)(length - first) >= a->generate) break;
    rc = call_tokens(b, s, step_name, tokens, (int64_t)length - 1, (int64_t)length, &next, &stats);
  }
  if (rc == 0) {
    if (a->bench && stats.calls) {
      printf("calls: %zu, wall %.3f ms per call, GPU %.3f ms per call, host %.1f us per dispatch\n",
             stats.calls, 1e3 * stats.wall / (double)stats.calls, 1e3 * stats.gpu / (double)stats.calls,
             stats.dispatches ? 1e6 * (stats.wall - stats.gpu) / (double)stats.dispatches : 0.0);
    }
    for (size_t i = first; i < length; i++) printf("%s%" PRId64, i > first ? " " : "", tokens[i]);
    printf("\n");
  }
  free(tokens);
  return rc;
}

int main(int argc, char **argv) {
  args_t a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed == -2) return 0;
  if (parsed) return 1;
  qvk_error err;
  qvk_bundle *b = NULL;
  qvk_session *s = NULL;
  void *owned[MAX_INPUTS] = {0};
  qvk_tensor inputs[MAX_INPUTS];
  void **out = NULL;
  size_t m = 0;
  int rc = 0;
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (qvk_bundle_open_file(a.model, &b, &err) != QVK_OK) return die("%s", err.message);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (a.list) {
    list_bundle(b);
    qvk_bundle_close(b);
    return 0;
  }
  if (a.generate < 0 && a.prompt != NULL) {
    qvk_bundle_close(b);
    return die("%s", "--prompt-ids goes with --generate N");
  }
  /* inputs first: a bad file is refused before any device opens */
  for (int i = 0; i < a.n_inputs; i++) {
    char message[1200];
    if (npy_read(a.inputs[i], &inputs[i], &owned[i], message, sizeof message) != 0) {
      rc = die("%s", message);
      goto done;
    }
  }
  if (a.generate < 0) {
    if (qvk_bundle_pick_method(b, a.method, (size_t)a.n_inputs, inputs, &m, &err) != QVK_OK) {
      rc = die("%s", err.message);
      goto done;
    }
    size_t want = qvk_bundle_input_count(b, m);
    if ((size_t)a.n_inputs != want) {
      char text[200];
      snprintf(text, sizeof text, "%s takes %zu input(s) (--input FILE.npy ...), got %d",
               qvk_bundle_method_count(b) == 1 ? "the Vulkan program" : qvk_bundle_method_name(b, m),
               want, a.n_inputs);
      rc = die("%s", text);
      goto done;
    }
  } else if (a.method != NULL) {
    rc = die("%s", "--generate picks its methods itself (prefill, decode): drop --method");
    goto done;
  }
  if (qvk_session_create(b, a.device, &s, &err) != QVK_OK) {
    rc = die("%s", err.message);
    goto done;
  }
  clock_gettime(CLOCK_MONOTONIC, &t2);
  if (a.bench) {
    printf("device: %s\n", qvk_session_device_name(s));
    printf("load: %.3f ms (read + check), session: %.3f ms (device, buffers, pipelines)\n",
           1e3 * ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)),
           1e3 * ((double)(t2.tv_sec - t1.tv_sec) + 1e-9 * (double)(t2.tv_nsec - t1.tv_nsec)));
  }
  if (a.generate >= 0) {
    rc = generate(b, s, &a);
    goto done;
  }
  out = alloc_outputs(b, m);
  if (out == NULL) {
    rc = die("%s", "out of memory");
    goto done;
  }
  int runs = a.bench ? a.runs : 1;
  double best = 1e30, total = 0, gpu = 0, record = 0;
  size_t dispatches = 0;
  for (int r = 0; r < runs; r++) {
    if (qvk_session_reset(s, &err) != QVK_OK || qvk_session_run(s, m, inputs, out, &err) != QVK_OK) {
      rc = die("%s", err.message);
      goto done;
    }
    qvk_timings tm = qvk_session_timings(s);
    if (r == 0) record = tm.record_seconds;
    if (r > 0 || runs == 1) {
      total += tm.wall_seconds;
      gpu += tm.gpu_seconds > 0 ? tm.gpu_seconds : 0;
      if (tm.wall_seconds < best) best = tm.wall_seconds;
    }
    dispatches = tm.dispatches;
  }
  if (a.bench) {
    int timed = runs > 1 ? runs - 1 : 1;
    double wall = total / timed, g = gpu / timed;
    printf("method %s: %zu dispatches, first call records them in %.3f ms\n",
           qvk_bundle_method_name(b, m), dispatches, 1e3 * record);
    printf("per call (%d runs after the first): wall %.3f ms (min %.3f), GPU %.3f ms, host %.1f us "
           "per dispatch\n",
           timed, 1e3 * wall, 1e3 * best, 1e3 * g,
           dispatches ? 1e6 * (wall - g) / (double)dispatches : 0.0);
  }
  if (a.output_dir != NULL) {
    rc = write_outputs(a.output_dir, b, m, out);
  } else {
    summarise(b, m, out);
  }
done:
  free_outputs(b, m, out);
  for (int i = 0; i < a.n_inputs; i++) free(owned[i]);
  qvk_session_destroy(s);
  qvk_bundle_close(b);
  return rc;
}
