/* qvk: run qopt's Vulkan bundles (`.qvk`) without Python.

   A bundle is checked whole when it is opened (the same structural checks as qopt's
   Python loader, and every kernel's SPIR-V against the catalogue compiled into this
   library); a session leases a Vulkan device (kept for the next session: see
   qvk_release_idle), owns the bundle's constant buffers uploaded once,
   its state buffers (a KV cache) and one recorded command buffer per method.

       qvk_error err;
       qvk_bundle *b;
       if (qvk_bundle_open_file("model.qvk", &b, &err) != QVK_OK) puts(err.message);
       qvk_session *s;
       qvk_session_create(b, NULL, &s, &err);        // device: $QOPT_VULKAN_DEVICE or the first
       size_t m;
       qvk_bundle_pick_method(b, NULL, 1, &input, &m, &err);  // NULL: the only method / forward
       qvk_session_run(s, m, &input, outputs, &err);  // caller-owned host buffers
       qvk_session_destroy(s);
       qvk_bundle_close(b);

   Every function that can fail returns a qvk_status and, when `err` is not NULL, fills
   it with the status and one line naming what failed, where, and what to do.
   Objects are not thread-safe: use one session from one thread at a time. */
#ifndef QVK_H
#define QVK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define QVK_API __declspec(dllexport)
#else
#define QVK_API __attribute__((visibility("default")))
#endif

#define QVK_VERSION_MAJOR 0
#define QVK_VERSION_MINOR 1

typedef enum qvk_status {
  QVK_OK = 0,
  QVK_ERROR_ARGUMENT = 1,   /* a bad argument: unknown method, wrong shape or dtype, ... */
  QVK_ERROR_IO = 2,         /* a file could not be read */
  QVK_ERROR_BUNDLE = 3,     /* the bundle is refused (corrupted, crafted, other qopt) */
  QVK_ERROR_UNSUPPORTED = 4, /* a valid bundle this runtime cannot run (host segments) */
  QVK_ERROR_DEVICE = 5,     /* no usable Vulkan device, or the driver failed */
  QVK_ERROR_INDEX = 6,      /* a run-time index check failed (a status word was set) */
  QVK_ERROR_MEMORY = 7      /* out of host memory */
} qvk_status;

typedef struct qvk_error {
  qvk_status status;
  char message[1024];
} qvk_error;

typedef enum qvk_dtype {
  QVK_FLOAT32 = 0,
  QVK_FLOAT16 = 1,
  QVK_FLOAT64 = 2,
  QVK_INT8 = 3,
  QVK_INT16 = 4,
  QVK_INT32 = 5,
  QVK_INT64 = 6,
  QVK_UINT8 = 7,
  QVK_BOOL = 8
} qvk_dtype;

#define QVK_MAX_RANK 16

/* A tensor's description, or a host tensor (with `data`). Shapes are row-major;
   a declared dim of -1 takes any size (none in the bundles qopt writes today). */
typedef struct qvk_tensor {
  qvk_dtype dtype;
  int rank;
  int64_t shape[QVK_MAX_RANK];
  const void *data; /* inputs only: rank-major, dtype's bytes (bool: one byte 0/1) */
} qvk_tensor;

typedef struct qvk_bundle qvk_bundle;
typedef struct qvk_session qvk_session;

/* The bytes of one element of `dtype`, its numpy name ("float32", ...). */
QVK_API size_t qvk_dtype_size(qvk_dtype dtype);
QVK_API const char *qvk_dtype_name(qvk_dtype dtype);
/* Elements of a tensor (product of its shape; 1 for rank 0). */
QVK_API int64_t qvk_tensor_numel(const qvk_tensor *tensor);

/* ----- bundles ----------------------------------------------------------------------- */

/* Open and check a bundle file (read whole). */
QVK_API qvk_status qvk_bundle_open_file(const char *path, qvk_bundle **out, qvk_error *err);
/* Open and check a bundle in memory (copied: `data` may be freed afterwards); `name`
   (may be NULL) is what error messages call it. */
QVK_API qvk_status qvk_bundle_open_memory(const void *data, size_t size, const char *name,
                                          qvk_bundle **out, qvk_error *err);
/* Free a bundle (after every session made from it). NULL is fine. */
QVK_API void qvk_bundle_close(qvk_bundle *bundle);

/* The qopt that wrote the bundle (its manifest's `qopt_version`, "" if none) and the
   qopt whose kernel catalogue this runtime carries. */
QVK_API const char *qvk_bundle_qopt_version(const qvk_bundle *bundle);
QVK_API const char *qvk_runtime_qopt_version(void);

/* Functions of the bundle (every method and each size variant `name__N` by its own
   name), in order, and their inputs and outputs. */
QVK_API size_t qvk_bundle_method_count(const qvk_bundle *bundle);
QVK_API const char *qvk_bundle_method_name(const qvk_bundle *bundle, size_t method);
QVK_API size_t qvk_bundle_input_count(const qvk_bundle *bundle, size_t method);
QVK_API size_t qvk_bundle_output_count(const qvk_bundle *bundle, size_t method);
QVK_API qvk_tensor qvk_bundle_input(const qvk_bundle *bundle, size_t method, size_t index);
QVK_API qvk_tensor qvk_bundle_output(const qvk_bundle *bundle, size_t method, size_t index);
/* Logical methods (size variants listed once under their method's name), in order. */
QVK_API size_t qvk_bundle_logical_count(const qvk_bundle *bundle);
QVK_API const char *qvk_bundle_logical_name(const qvk_bundle *bundle, size_t index);
/* The sizes `method` was compiled at (size variants with one dynamic size: `prefill__5`),
   ascending, at most `cap` of them; returns how many there are. */
QVK_API size_t qvk_bundle_variant_sizes(const qvk_bundle *bundle, const char *method,
                                        int64_t *sizes, size_t cap);
/* The function a call of logical method `name` (NULL: the only method, or `forward`) with
   inputs shaped like `inputs` runs (its size variant picked by the shapes). */
QVK_API qvk_status qvk_bundle_pick_method(const qvk_bundle *bundle, const char *name,
                                          size_t n_inputs, const qvk_tensor *inputs,
                                          size_t *method, qvk_error *err);

/* Program states (a KV cache), by fully qualified name. */
QVK_API size_t qvk_bundle_state_count(const qvk_bundle *bundle);
QVK_API const char *qvk_bundle_state_name(const qvk_bundle *bundle, size_t index);
QVK_API qvk_tensor qvk_bundle_state(const qvk_bundle *bundle, size_t index);

/* Dispatches of a function (for reports). */
QVK_API size_t qvk_bundle_dispatch_count(const qvk_bundle *bundle, size_t method);

/* ----- sessions ---------------------------------------------------------------------- */

/* A session of `bundle` on a Vulkan device: `device` is an index into the
   compute-capable devices or a substring of a device name (NULL or "": the environment
   variable QOPT_VULKAN_DEVICE, else the first device). Its states start at their
   initial values. The bundle must outlive the session. */
QVK_API qvk_status qvk_session_create(const qvk_bundle *bundle, const char *device,
                                      qvk_session **out, qvk_error *err);
/* The device's name. */
QVK_API const char *qvk_session_device_name(const qvk_session *session);
/* Run function `method` (qvk_bundle_pick_method): `inputs` in its argument order, each
   of the declared shape and of a dtype that holds its values exactly as the declared one
   (cast as qopt's Python runtime casts: no value may change); `outputs[i]` points to
   caller-owned memory of numel * qvk_dtype_size bytes of output i (its declared dtype).
   The states keep what the call left in them. Nothing is written to `outputs` on error. */
QVK_API qvk_status qvk_session_run(qvk_session *session, size_t method,
                                   const qvk_tensor *inputs, void *const *outputs,
                                   qvk_error *err);
/* Every state back to its initial value. */
QVK_API qvk_status qvk_session_reset(qvk_session *session, qvk_error *err);
/* Copy state `name`'s current value (its dtype, numel * dtype size bytes) into `out`. */
QVK_API qvk_status qvk_session_read_state(qvk_session *session, const char *name, void *out,
                                          size_t nbytes, qvk_error *err);

typedef struct qvk_timings {
  double wall_seconds;   /* the last run: from writing its inputs to its outputs read */
  double submit_seconds; /* the last run: vkQueueSubmit to its fence */
  double gpu_seconds;    /* the last run: sum of the dispatches' GPU time (timestamps; <0: none) */
  double record_seconds; /* host time spent recording the method's command buffer (first run) */
  size_t dispatches;     /* dispatches of the last run */
} qvk_timings;
QVK_API qvk_timings qvk_session_timings(const qvk_session *session);

/* Free the session and every Vulkan object it made (buffers, views, descriptor pools,
   command buffers, fences, query pools); its device, with its shader modules and
   pipelines, is kept idle for the next session of the same choice (below). NULL is fine. */
QVK_API void qvk_session_destroy(qvk_session *session);

/* Device reuse within a process. A session leases its device: an idle one left by a
   destroyed session created with the same choice (the resolved device string: the
   argument, else $QOPT_VULKAN_DEVICE; $QOPT_VULKAN_VALIDATION on or off; $QOPT_VK_VARIANTS),
   else a new one. The idle device keeps its shader modules and compute pipelines (keyed
   by catalogue kernel and specialization values), so the next session compiles only what
   it lacks; the outputs are the same bits. Leases are exclusive: two live sessions never
   share a device. At most one idle device per choice; none is kept that reported
   validation errors, did not go idle or holds over 1024 pipelines. QOPT_VULKAN_REUSE=0
   turns reuse off. Thread-safe (the idle table is behind a mutex). */
/* 1 when the session got an idle device, 0 when it opened its own. */
QVK_API int qvk_session_reused(const qvk_session *session);
/* Pipelines the session compiled (the others it runs were on its device already). */
QVK_API size_t qvk_session_pipelines_created(const qvk_session *session);
/* Close every idle device now (the process's exit does too). */
QVK_API void qvk_release_idle(void);
/* The session's VkInstance and VkDevice (for interop and tests; valid while it lives). */
QVK_API void *qvk_session_vulkan_instance(const qvk_session *session);
QVK_API void *qvk_session_vulkan_device(const qvk_session *session);

/* The rules this runtime checks every dispatch of kernel `kernel` with (qopt's
   `KernelSpec.workgroups` and `.extents`, translated into C from their Python source when
   the runtime was built): for these push constants (`n_push` integers in the kernel's
   declaration order; float ones are not read) and specialization values (`n_spec`: every
   constant, in constant_id order) the workgroup counts a dispatch needs (`groups`) and
   the words each binding can touch (`extents`, `n_extents` = the kernel's bindings).
   QVK_ERROR_BUNDLE with the rule's own message when the rules refuse these values;
   QVK_ERROR_ARGUMENT for an unknown kernel or wrong counts. A kernel variant is named
   `base@variant` (its own workgroup rule). For tools and tests. */
QVK_API qvk_status qvk_kernel_rules(const char *kernel, const int64_t *push, size_t n_push,
                                    const int64_t *spec, size_t n_spec, int64_t groups[3],
                                    int64_t *extents, size_t n_extents, qvk_error *err);

/* ----- kernel variants ----------------------------------------------------------------- */

/* What the choice of a kernel's variant reads of a device (qopt.kernels.variants.DeviceProps):
   VkPhysicalDeviceType, VkPhysicalDeviceSubgroupProperties (size, supported stages and
   operations), maxComputeSharedMemorySize, shaderFloat16 / shaderInt8. */
typedef struct qvk_device_props {
  uint32_t device_type, subgroup_size, subgroup_stages, subgroup_ops, shared_bytes;
  int float16, int8;
} qvk_device_props;

/* The session's device properties, and its variant mode (QOPT_VK_VARIANTS when the session
   was created: "auto", "base" or "all"). */
QVK_API qvk_device_props qvk_session_device_props(const qvk_session *session);
QVK_API const char *qvk_session_variant_mode(const qvk_session *session);
/* Dispatches recorded so far with a variant (each method is recorded on its first run). */
QVK_API size_t qvk_session_variant_dispatches(const qvk_session *session);

/* The variant a dispatch of kernel `kernel` (push constants and every specialization value,
   as qvk_kernel_rules takes them) runs on a device of `props` under `mode` ("auto", "base",
   "all"; NULL or "": "auto"): `*variant` its name, or NULL for the base kernel. The same
   rule the Python runtime applies (qopt.kernels.variants.choose). For tools and tests. */
QVK_API qvk_status qvk_kernel_variant(const char *kernel, const qvk_device_props *props,
                                      const int64_t *push, size_t n_push, const int64_t *spec,
                                      size_t n_spec, const char *mode, const char **variant,
                                      qvk_error *err);

#ifdef __cplusplus
}
#endif

#endif
