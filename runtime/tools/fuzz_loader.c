/* libFuzzer harness of the bundle loader: any bytes through qvk_bundle_open_memory
   (refused with one message, or opened and every description read) and closed.
   Built with -DQVK_FUZZ=ON (clang); run bounded in the tests, longer by hand:
     build/runtime-fuzz/qvk-fuzz-loader -max_total_time=600 corpus/ */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "qvk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  qvk_error err;
  qvk_bundle *b = NULL;
  if (qvk_bundle_open_memory(data, size, "fuzz.qvk", &b, &err) != QVK_OK) {
    if (strlen(err.message) == 0 || strchr(err.message, '\n') != NULL) __builtin_trap();
    return 0;
  }
  for (size_t m = 0; m < qvk_bundle_method_count(b); m++) {
    for (size_t i = 0; i < qvk_bundle_input_count(b, m); i++) (void)qvk_bundle_input(b, m, i);
    for (size_t i = 0; i < qvk_bundle_output_count(b, m); i++) (void)qvk_bundle_output(b, m, i);
  }
  for (size_t j = 0; j < qvk_bundle_logical_count(b); j++) {
    size_t m;
    (void)qvk_bundle_pick_method(b, qvk_bundle_logical_name(b, j), 0, NULL, &m, &err);
  }
  qvk_bundle_close(b);
  return 0;
}
