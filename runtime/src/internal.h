/* Internal declarations of the qvk runtime (not installed). */
#ifndef QVK_INTERNAL_H
#define QVK_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "catalogue.h"
#include "qvk.h"

enum buffer_kind { KIND_INPUT, KIND_CONSTANT, KIND_SLOT, KIND_ALLOC, KIND_STATUS, KIND_STATE };

typedef struct {
  int kind;
  int64_t nbytes;
  int64_t constant, slot, method, index, state;
  char *what; /* status buffers: the op its check guards */
} qvk_buffer_rec;

typedef struct {
  int64_t buffer;
  qvk_dtype dtype;
  int rank;
  int64_t shape[QVK_MAX_RANK];
  int64_t numel;
} qvk_tensor_rec;

typedef struct {
  const qvk_cat_kernel *cat;
  int32_t *spec; /* every specialization value (defaults filled in), cat->n_spec */
} qvk_kernel_rec;

typedef struct {
  int64_t kernel;
  int64_t *buffers;
  size_t n_buffers;
  uint32_t *push; /* the push-constant block's words, in declaration order */
  uint32_t groups[3];
} qvk_step_rec;

typedef struct {
  char *name;
  int64_t buffer;
  qvk_dtype dtype;
  int rank;
  int64_t shape[QVK_MAX_RANK];
  int64_t numel;
  int64_t initial; /* constant index, -1: zeros */
} qvk_state_rec;

typedef struct {
  char *name;
  size_t steps[2], inputs[2], outputs[2];
} qvk_method_rec;

typedef struct {
  const uint8_t *bytes;
  size_t nbytes;
  int dtype; /* 0 float32, 1 int32, 2 uint32 */
} qvk_constant_rec;

struct qvk_bundle {
  uint8_t *data; /* the whole file (owned); constants point into it */
  size_t size;
  char *path;
  char *qopt_version;
  uint32_t version;
  qvk_kernel_rec *kernels;
  size_t n_kernels;
  qvk_constant_rec *constants;
  size_t n_constants;
  qvk_buffer_rec *buffers;
  size_t n_buffers;
  int64_t *slots;
  size_t n_slots;
  qvk_tensor_rec *inputs;
  size_t n_inputs;
  qvk_tensor_rec *outputs;
  size_t n_outputs;
  qvk_step_rec *steps;
  size_t n_steps;
  qvk_state_rec *states;
  size_t n_states;
  qvk_method_rec *methods;
  size_t n_methods;
  char **logical;
  size_t n_logical;
};

/* errors */
qvk_status qvk_fail(qvk_error *err, qvk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* sha256.c */
void qvk_sha256_hex(const uint8_t *data, size_t size, char out[65]);

/* platform.c: the one platform-specific file */
qvk_status qvk_read_file(const char *path, uint64_t max_bytes, uint8_t **data, size_t *size,
                         qvk_error *err);
double qvk_now(void);
const char *qvk_getenv(const char *name);

/* convert.c */
qvk_dtype qvk_abi_dtype(qvk_dtype dtype); /* QVK_FLOAT32 or QVK_INT32 */
qvk_status qvk_to_abi(const qvk_tensor *input, qvk_dtype declared, int64_t numel, size_t index,
                      const char *where, void *words, qvk_error *err);
void qvk_from_abi(const void *words, qvk_dtype dtype, int64_t numel, void *out);
int qvk_dtype_parse(const char *name, size_t len, qvk_dtype *out);
int qvk_is_variant_of(const char *name, const char *method, size_t method_len);
const char *qvk_variant_method(const char *name, size_t *len);

/* variants.c: the kernel variants' mode and choice (qopt.kernels.variants) */
enum { QVK_VARIANTS_AUTO, QVK_VARIANTS_BASE, QVK_VARIANTS_ALL };
qvk_status qvk_variant_mode(const char *value, int *mode, qvk_error *err);
/* the variant of catalogue kernel `k` for a dispatch (P, S as the rules take them), or NULL
   for the base; -1 when its `applies` rule refuses these values (ctx->msg) */
int qvk_choose_variant(const qvk_cat_kernel *k, const qvk_device_props *props, const int64_t *P,
                       const int64_t *S, int mode, const qvk_cat_variant **out,
                       qvk_rule_ctx *ctx);

/* device.c: Vulkan devices, their shader modules and pipelines, leased by sessions and
   reused within the process (the rules: device.c's comment, docs/native-runtime.md) */
#define QVK_MAX_IDLE_PIPELINES 1024 /* a device holding more is closed, not parked */

typedef struct {
  const qvk_cat_kernel *cat;
  int32_t *values; /* every specialization value, cat->n_spec */
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
} qvk_pipe;

typedef struct qvk_device {
  char *choice;     /* the pool's key: the resolved device string, */
  int validate;     /* the validation layer on or off */
  int variant_mode; /* and QOPT_VK_VARIANTS */
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
  VkPhysicalDevice pd;
  VkDevice device;
  VkQueue queue;
  uint32_t family;
  VkCommandPool command_pool;
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 1];
  uint32_t max_groups[3];
  uint32_t max_push, max_uniform, max_texel;
  int texel_format;
  double timestamp_period;
  uint32_t timestamp_bits;
  VkPhysicalDeviceMemoryProperties memory;
  qvk_device_props props;  /* what the kernel variants' choice reads (variants.c) */
  VkShaderModule *modules; /* per catalogue source */
  qvk_pipe **pipes;        /* each allocated once: a session keeps pointers to them */
  size_t n_pipes, cap_pipes;
  size_t compiled;         /* pipelines created on this device so far */
  int validation_errors;   /* since the last check (its messenger's pUserData is the device) */
  int had_errors;          /* a check reported errors during this lease: not parked */
  char validation_message[512];
} qvk_device;

/* A device for `choice` (NULL or "": $QOPT_VULKAN_DEVICE, else the first): an idle one of
   the same choice, validation and variant mode (`*reused` 1), else a new one. */
qvk_status qvk_device_lease(const char *choice, qvk_device **out, int *reused, qvk_error *err);
/* End a lease (every object its session made on it freed; `idle_ok`: vkDeviceWaitIdle
   succeeded): park it idle, or close it when it cannot or need not be kept. */
void qvk_device_give_back(qvk_device *dev, int idle_ok);
/* The pipeline of kernel `k` with specialization `values` (every one, k->n_spec), made
   once per device. */
qvk_status qvk_device_pipeline(qvk_device *dev, const qvk_cat_kernel *k, const int32_t *values,
                               qvk_pipe **out, qvk_error *err);
/* QVK_OK, or QVK_ERROR_DEVICE naming the validation errors reported since the last check. */
qvk_status qvk_device_check(qvk_device *dev, const char *what, qvk_error *err);

#endif
