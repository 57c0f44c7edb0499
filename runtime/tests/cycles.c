/* Sessions created, run and destroyed N times over one bundle (and the bundle opened
   and closed each cycle): run under AddressSanitizer / LeakSanitizer, nothing may leak.
     qvk-cycles MODEL.qvk N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qvk.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: qvk-cycles MODEL.qvk N\n");
    return 2;
  }
  int n = atoi(argv[2]);
  qvk_error err;
  qvk_bundle *b = NULL;
  if (qvk_bundle_open_file(argv[1], &b, &err) != QVK_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  size_t m = 0;
  size_t n_in = qvk_bundle_input_count(b, m), n_out = qvk_bundle_output_count(b, m);
  qvk_tensor inputs[16];
  void *outputs[16];
  if (n_in > 16 || n_out > 16) return 1;
  for (size_t i = 0; i < n_in; i++) {
    inputs[i] = qvk_bundle_input(b, m, i);
    size_t bytes = (size_t)qvk_tensor_numel(&inputs[i]) * qvk_dtype_size(inputs[i].dtype);
    void *data = calloc(1, bytes ? bytes : 1);
    inputs[i].data = data;
  }
  for (size_t i = 0; i < n_out; i++) {
    qvk_tensor t = qvk_bundle_output(b, m, i);
    outputs[i] = malloc((size_t)qvk_tensor_numel(&t) * qvk_dtype_size(t.dtype) + 1);
  }
  int rc = 0;
  for (int c = 0; c < n && rc == 0; c++) {
    qvk_session *s = NULL;
    qvk_bundle *again = NULL;
    if (qvk_bundle_open_file(argv[1], &again, &err) != QVK_OK ||
        qvk_session_create(b, NULL, &s, &err) != QVK_OK ||
        qvk_session_run(s, m, inputs, outputs, &err) != QVK_OK ||
        qvk_session_reset(s, &err) != QVK_OK) {
      fprintf(stderr, "cycle %d: %s\n", c, err.message);
      rc = 1;
    }
    qvk_session_destroy(s);
    qvk_bundle_close(again);
  }
  for (size_t i = 0; i < n_in; i++) free((void *)inputs[i].data);
  for (size_t i = 0; i < n_out; i++) free(outputs[i]);
  qvk_bundle_close(b);
  if (rc == 0) printf("%d cycles\n", n);
  return rc;
}
